//! Reading foreign JSON with errors that name the field.

use serde_json::{Map, Value};

/// A field that could not be mapped: where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

pub type Result<T> = std::result::Result<T, FieldError>;

pub fn fail<T>(field: &str, reason: impl Into<String>) -> Result<T> {
    Err(FieldError { field: field.to_owned(), reason: reason.into() })
}

pub fn object<'a>(value: &'a Value, field: &str) -> Result<&'a Map<String, Value>> {
    value.as_object().map_or_else(|| fail(field, "expected an object"), Ok)
}

pub fn array<'a>(value: &'a Value, field: &str) -> Result<&'a Vec<Value>> {
    value.as_array().map_or_else(|| fail(field, "expected an array"), Ok)
}

pub fn string<'a>(value: &'a Value, field: &str) -> Result<&'a str> {
    value.as_str().map_or_else(|| fail(field, "expected a string"), Ok)
}

/// A required string member.
pub fn required_str<'a>(map: &'a Map<String, Value>, key: &str, field: &str) -> Result<&'a str> {
    match map.get(key) {
        Some(value) => string(value, &format!("{field}.{key}")),
        None => fail(&format!("{field}.{key}"), "missing"),
    }
}

/// An optional string member (absent or null is `None`).
pub fn optional_str<'a>(map: &'a Map<String, Value>, key: &str, field: &str) -> Result<Option<&'a str>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => string(value, &format!("{field}.{key}")).map(Some),
    }
}

fn join(field: &str, inner: &str) -> String {
    match (field, inner) {
        (_, ".") => field.to_owned(),
        ("(line)", _) => inner.to_owned(),
        _ => format!("{field}.{inner}"),
    }
}

/// Decodes a typed value straight from JSON text (so JSON-valued fields keep their
/// exact text), naming the failing field.
pub fn typed_str<T: serde::de::DeserializeOwned>(text: &str, field: &str) -> Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let inner = e.path().to_string();
        FieldError { field: join(field, &inner), reason: e.into_inner().to_string() }
    })
}

/// Decodes a typed value with serde, naming the failing field.
pub fn typed<T: serde::de::DeserializeOwned>(value: &Value, field: &str) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        FieldError { field: join(field, &inner), reason: e.into_inner().to_string() }
    })
}

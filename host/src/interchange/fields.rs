//! Reading provider JSON ([`Node`]s) with errors that name the field.

use std::borrow::Cow;

use super::raw::{Node, Object};

/// A field that could not be mapped: where (`messages[2].content[0].is_error`),
/// and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

pub type Result<T> = std::result::Result<T, FieldError>;

/// Where a value sits in the line (`messages[1].tool_calls[0]`); the empty path
/// is the line (or value) itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    pub fn root() -> Self {
        Self(String::new())
    }

    pub fn key(&self, key: &str) -> Self {
        if self.0.is_empty() { Self(key.to_owned()) } else { Self(format!("{}.{key}", self.0)) }
    }

    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    pub fn fail<T>(&self, reason: impl Into<String>) -> Result<T> {
        Err(self.error(reason))
    }

    pub fn error(&self, reason: impl Into<String>) -> FieldError {
        let field = if self.0.is_empty() { "(line)".to_owned() } else { self.0.clone() };
        FieldError { field, reason: reason.into() }
    }
}

/// An object the interchange interprets: duplicate keys are refused.
#[derive(Clone, Copy)]
pub struct Fields<'n, 'a> {
    pub object: &'n Object<'a>,
    pub path: &'n Path,
}

impl<'n, 'a> Fields<'n, 'a> {
    pub fn of(node: &'n Node<'a>, path: &'n Path) -> Result<Self> {
        let Some(object) = node.as_object() else {
            return path.fail(format!("expected an object, got {}", node.kind()));
        };
        if let Some(key) = object.duplicate_key() {
            return path.key(key).fail("duplicate key");
        }
        Ok(Self { object, path })
    }

    pub fn get(&self, key: &str) -> Option<&'n Node<'a>> {
        self.object.get(key)
    }

    /// A required member.
    pub fn member(&self, key: &str) -> Result<&'n Node<'a>> {
        self.get(key).map_or_else(|| self.at(key).fail("missing"), Ok)
    }

    /// Present and not null.
    pub fn given(&self, key: &str) -> Option<&'n Node<'a>> {
        self.object.get(key).filter(|v| !v.is_null())
    }

    pub fn at(&self, key: &str) -> Path {
        self.path.key(key)
    }

    /// A required string member.
    pub fn str(&self, key: &str) -> Result<Cow<'n, str>> {
        match self.get(key) {
            Some(value) => string(value, &self.at(key)),
            None => self.at(key).fail("missing"),
        }
    }

    /// An optional string member (absent or null: `None`).
    pub fn opt_str(&self, key: &str) -> Result<Option<Cow<'n, str>>> {
        self.given(key).map(|value| string(value, &self.at(key))).transpose()
    }

    /// A required array member.
    pub fn array(&self, key: &str) -> Result<&'n [Node<'a>]> {
        match self.get(key) {
            Some(value) => array(value, &self.at(key)),
            None => self.at(key).fail("missing"),
        }
    }

    /// An optional boolean (absent or null: `None`).
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.given(key) {
            None => Ok(None),
            Some(value) => match value.as_bool() {
                Some(flag) => Ok(Some(flag)),
                None => self.at(key).fail(format!("expected a boolean, got {}", value.kind())),
            },
        }
    }

    /// A token count: a non-negative integer (absent or null: 0).
    pub fn count(&self, key: &str) -> Result<u64> {
        match self.given(key) {
            None => Ok(0),
            Some(value) => match value.as_number().and_then(|n| n.parse::<u64>().ok()) {
                Some(count) => Ok(count),
                None => self.at(key).fail("expected a count (a non-negative integer)"),
            },
        }
    }
}

/// A decoded string; invalid Unicode (a lone surrogate) is refused.
pub fn string<'n>(value: &'n Node<'_>, path: &Path) -> Result<Cow<'n, str>> {
    match value.as_str() {
        Some(Ok(text)) => Ok(text),
        Some(Err(e)) => path.fail(format!("not valid Unicode text: {e}")),
        None => path.fail(format!("expected a string, got {}", value.kind())),
    }
}

pub fn array<'n, 'a>(value: &'n Node<'a>, path: &Path) -> Result<&'n [Node<'a>]> {
    value.as_array().map_or_else(|| path.fail(format!("expected an array, got {}", value.kind())), Ok)
}

/// The `type` of a block or part: required, a string.
pub fn part_type<'n>(item: &'n Node<'_>, path: &Path) -> Result<Cow<'n, str>> {
    let Some(object) = item.as_object() else {
        return path.fail(format!("expected an object, got {}", item.kind()));
    };
    match object.get("type") {
        Some(kind) => string(kind, &path.key("type")),
        None => path.key("type").fail("missing"),
    }
}

/// The `type` of a block or part, when it is a string.
pub fn type_of<'n>(node: &'n Node<'_>) -> Option<Cow<'n, str>> {
    node.as_object()?.get("type")?.as_str()?.ok()
}

/// The concatenated text of the `text` parts of a content array.
pub fn text_of(items: &[Node<'_>]) -> String {
    items
        .iter()
        .filter(|item| type_of(item).as_deref() == Some("text"))
        .filter_map(|item| item.as_object()?.get("text")?.as_str()?.ok())
        .collect()
}

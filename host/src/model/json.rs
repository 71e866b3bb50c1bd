//! [`JsonText`]: JSON validated once and then kept verbatim.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::error::Error;

/// JSON text, validated once and then kept verbatim (key order, spacing, number
/// spelling). Serialises as embedded JSON, not as a string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JsonText(String);

impl JsonText {
    /// Validates `text` as one JSON value.
    pub fn parse(text: impl Into<String>) -> Result<Self, Error> {
        let text = text.into();
        serde_json::from_str::<&RawValue>(&text).map_err(|e| Error::InvalidInput(format!("not valid JSON: {e}")))?;
        Ok(Self(text))
    }

    /// Serialises `value` (compact form).
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self(value.to_string())
    }

    /// The text, exactly as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, exactly as given.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The parsed value.
    pub fn to_value(&self) -> Result<serde_json::Value, Error> {
        serde_json::from_str(&self.0).map_err(|e| Error::InvalidInput(format!("not valid JSON: {e}")))
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Ok(Self(raw.get().to_owned()))
    }
}

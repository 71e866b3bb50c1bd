//! The tool-call card state machine and metadata merging.
//!
//! ```text
//! pending ──▶ executing ──▶ completed | failed | interrupted | cancelled
//!    └──────▶ cancelled
//! interrupted ──(resolve)──▶ completed
//! ```
//! Repeating the current status is a no-op; any other move is `invalid-transition`.
//! The start-up sweep moves `pending`/`executing` to `interrupted` on its own
//! authority (the process that owned those tools is gone).

use serde_json::{Map, Value};

use crate::error::Error;
use crate::model::JsonText;
use crate::model::{ToolInfo, ToolStatus};

/// Whether `update_tool_status` may move a card from `from` to `to`.
/// `Ok(false)` means "same status: nothing to do".
pub fn check_transition(from: ToolStatus, to: ToolStatus) -> Result<bool, Error> {
    use ToolStatus::*;
    if from == to {
        return Ok(false);
    }
    match (from, to) {
        (Pending, Executing | Cancelled) | (Executing, Completed | Failed | Interrupted | Cancelled) => Ok(true),
        _ => Err(Error::InvalidTransition { from, to }),
    }
}

/// Whether `resolve_tool_result` may complete a card in `from`.
/// `Ok(false)` means "already completed: nothing to do".
pub fn check_resolve(from: ToolStatus) -> Result<bool, Error> {
    match from {
        ToolStatus::Interrupted => Ok(true),
        ToolStatus::Completed => Ok(false),
        other => Err(Error::InvalidTransition { from: other, to: ToolStatus::Completed }),
    }
}

/// A metadata object; anything that is not an object (or absent) starts empty.
pub fn object(metadata: Option<&JsonText>) -> Map<String, Value> {
    match metadata.map(JsonText::to_value) {
        Some(Ok(Value::Object(map))) => map,
        _ => Map::new(),
    }
}

/// Checks that caller-supplied metadata is a JSON object.
pub fn require_object(metadata: Option<&JsonText>, what: &str) -> Result<Map<String, Value>, Error> {
    match metadata.map(JsonText::to_value).transpose()? {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(Error::InvalidInput(format!("{what} must be a JSON object"))),
    }
}

/// Merges the fields of a status update into `metadata`.
pub fn merge_tool_info(metadata: &mut Map<String, Value>, info: &ToolInfo) -> Result<(), Error> {
    for (key, value) in
        [("name", &info.name), ("display_text", &info.display_text), ("result", &info.result), ("error", &info.error)]
    {
        if let Some(value) = value {
            metadata.insert(key.to_owned(), Value::String(value.clone()));
        }
    }
    for (key, value) in require_object(info.metadata.as_ref(), "tool info metadata")? {
        metadata.insert(key, value);
    }
    Ok(())
}

pub fn to_json(map: Map<String, Value>) -> Option<JsonText> {
    (!map.is_empty()).then(|| JsonText::from_value(&Value::Object(map)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transition_table_is_exactly_the_documented_one() {
        use ToolStatus::*;
        let allowed = [
            (Pending, Executing),
            (Pending, Cancelled),
            (Executing, Completed),
            (Executing, Failed),
            (Executing, Interrupted),
            (Executing, Cancelled),
        ];
        for from in ToolStatus::ALL {
            for to in ToolStatus::ALL {
                let result = check_transition(from, to);
                if from == to {
                    assert!(matches!(result, Ok(false)), "{from}→{to} must be a no-op");
                } else if allowed.contains(&(from, to)) {
                    assert!(matches!(result, Ok(true)), "{from}→{to} must be allowed");
                } else {
                    assert!(
                        matches!(result, Err(Error::InvalidTransition { from: f, to: t }) if f == from && t == to),
                        "{from}→{to} must be refused"
                    );
                }
            }
        }
    }
}

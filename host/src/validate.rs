//! Input rules applied before anything reaches an adapter. Every rejection names
//! the rule; none of them logs or echoes message content.

use crate::config::Limits;
use crate::error::Error;
use crate::model::{ConversationMeta, JsonText, NewMessage, Part, Scope};

/// Longest conversation or message id, in bytes.
pub const MAX_ID_BYTES: usize = 512;
/// Longest tenant or user, in bytes.
pub const MAX_SCOPE_BYTES: usize = 256;

/// Shortens an id for an error message.
pub fn shown(id: &str) -> String {
    let mut shown: String = id.chars().take(48).flat_map(char::escape_debug).collect();
    if id.chars().count() > 48 {
        shown.push('…');
    }
    shown
}

fn check_text(kind: &str, value: &str, max: usize, allow_empty: bool) -> Result<(), Error> {
    if value.is_empty() && !allow_empty {
        return Err(Error::InvalidInput(format!("{kind} is empty")));
    }
    if value.len() > max {
        return Err(Error::InvalidInput(format!("{kind} is {} bytes long; the limit is {max}", value.len())));
    }
    if let Some((at, c)) = value.char_indices().find(|(_, c)| c.is_control()) {
        return Err(Error::InvalidInput(format!(
            "{kind} contains the control character U+{:04X} at byte {at}",
            c as u32
        )));
    }
    Ok(())
}

pub fn conversation_id(id: &str) -> Result<(), Error> {
    check_text("conversation id", id, MAX_ID_BYTES, false)
}

pub fn message_id(id: &str) -> Result<(), Error> {
    check_text("message id", id, MAX_ID_BYTES, false)
}

pub fn scope(scope: &Scope) -> Result<(), Error> {
    check_text("scope tenant", &scope.tenant, MAX_SCOPE_BYTES, true)?;
    check_text("scope user", &scope.user, MAX_SCOPE_BYTES, true)
}

pub fn limit(limit: u32, limits: &Limits) -> Result<(), Error> {
    if limit == 0 || limit > limits.max_page_size {
        return Err(Error::InvalidInput(format!("limit must be between 1 and {}, got {limit}", limits.max_page_size)));
    }
    Ok(())
}

/// Checks one message (at `index` in its batch). Its size is checked once it is
/// encoded (`store::history`), against the encoded bytes.
pub fn message(index: usize, message: &NewMessage) -> Result<(), Error> {
    let at = |what: String| Error::InvalidInput(format!("message {index}: {what}"));
    if let Some(id) = &message.id {
        message_id(id).map_err(|e| at(e.to_string()))?;
    }
    if message.usage.as_ref().and_then(|u| u.cost).is_some_and(|c| !c.is_finite()) {
        return Err(at("usage cost must be a finite number".into()));
    }
    if let Some(extra) = &message.extra {
        extra_object(extra).map_err(|e| at(format!("extra: {e}")))?;
    }
    for (p, part) in message.parts.iter().enumerate() {
        match part {
            Part::ToolCall { id, .. } if id.is_empty() => {
                return Err(at(format!("part {p}: a tool call needs an id")));
            }
            Part::ToolResult { call_id, .. } if call_id.is_empty() => {
                return Err(at(format!("part {p}: a tool result needs the id of its call")));
            }
            Part::Provider { format, .. } if format.is_empty() || format.len() > 64 => {
                return Err(at(format!("part {p}: a provider part needs a format name of 1 to 64 bytes")));
            }
            Part::Media { mime_type, .. } if mime_type == crate::adapter::wasm::CONTENT_MIME => {
                return Err(at(format!("part {p}: the media type {mime_type} is reserved")));
            }
            _ => {}
        }
        if let Some(extra) = part.extra() {
            extra_object(extra).map_err(|e| at(format!("part {p}: extra: {e}")))?;
        }
    }
    Ok(())
}

/// Checks a conversation's meta: its `metadata` is JSON, its `extra` a JSON
/// object keyed by format name (as a message's).
pub fn meta(meta: &ConversationMeta) -> Result<(), Error> {
    meta_json(meta.metadata.as_ref(), meta.extra.as_ref())
}

/// [`meta`] of the JSON-valued fields alone (a patch's new values).
pub fn meta_json(metadata: Option<&JsonText>, extra: Option<&JsonText>) -> Result<(), Error> {
    if let Some(metadata) = metadata {
        metadata.to_value().map_err(|e| Error::InvalidInput(format!("conversation metadata: {}", bare(e))))?;
    }
    if let Some(extra) = extra {
        extra_object(extra).map_err(|e| Error::InvalidInput(format!("conversation extra: {e}")))?;
    }
    Ok(())
}

/// The message of an `InvalidInput` without its prefix.
fn bare(e: Error) -> String {
    match e {
        Error::InvalidInput(message) => message,
        other => other.to_string(),
    }
}

/// Provider fields must be a JSON object keyed by format name.
fn extra_object(extra: &JsonText) -> Result<(), String> {
    match extra.to_value() {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        _ => Err("must be a JSON object keyed by format name".into()),
    }
}

/// Checks a batch: its count and each message (sizes are checked once encoded).
pub fn batch(messages: &[NewMessage], limits: &Limits) -> Result<(), Error> {
    if messages.len() > limits.max_batch_messages as usize {
        return Err(Error::InvalidInput(format!(
            "a batch holds at most {} messages, got {}",
            limits.max_batch_messages,
            messages.len()
        )));
    }
    for (index, m) in messages.iter().enumerate() {
        message(index, m)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_ids_get_clear_errors() {
        let long = "x".repeat(10 * 1024);
        for (id, expected) in [
            ("", "conversation id is empty"),
            ("a\0b", "control character U+0000 at byte 1"),
            (long.as_str(), "10240 bytes long; the limit is 512"),
        ] {
            let err = conversation_id(id).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(expected), "{err:?} should mention {expected:?}");
        }
        for fine in ["../x", "a/b", "..", "日本語 🚀", "C:\\x"] {
            assert!(conversation_id(fine).is_ok(), "{fine:?} is a legal id");
        }
    }

    #[test]
    fn conversation_extra_must_be_an_object() -> Result<(), Error> {
        let with = |extra: &str| -> Result<ConversationMeta, Error> {
            Ok(ConversationMeta { extra: Some(JsonText::parse(extra)?), ..ConversationMeta::default() })
        };
        assert!(meta(&ConversationMeta::default()).is_ok());
        assert!(meta(&with(r#"{"openai":{"model":"gpt"}}"#)?).is_ok());
        for bad in ["[1]", "\"x\"", "null", "3"] {
            let err = meta(&with(bad)?).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains("conversation extra: must be a JSON object"), "{bad}: {err:?}");
        }
        Ok(())
    }
}

//! Stowage's own line format (docs/formats.md §2):
//! `{"conversation_id": string|null, "meta"?, "messages": [NewMessage], "display"?}`.
//!
//! Everything is modelled; unknown members and part types are refused, and
//! every `extra` must be an object keyed by format whose members are objects.

use serde::{Deserialize, Serialize};

use super::Transcript;
use super::fields::{FieldError, Path, Result};
use super::raw::Node;
use crate::error::Error;
use crate::model::{ConversationMeta, DisplayRecord, NewMessage};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    meta: ConversationMeta,
    messages: Vec<NewMessage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    display: Vec<DisplayRecord>,
}

fn is_default(meta: &ConversationMeta) -> bool {
    *meta == ConversationMeta::default()
}

const LINE: &[&str] = &["conversation_id", "meta", "messages", "display"];
const META: &[&str] = &["agent_id", "title", "metadata", "extra"];
const MESSAGE: &[&str] = &["id", "role", "parts", "usage", "stop_reason", "created_at", "metadata", "extra"];
const USAGE: &[&str] = &["input_tokens", "output_tokens", "cached_tokens", "cost"];

fn part_members(kind: &str) -> &'static [&'static str] {
    match kind {
        "text" => &["type", "text", "extra"],
        "thinking" => &["type", "text", "signature", "redacted", "extra"],
        "tool_call" => &["type", "id", "name", "arguments", "extra"],
        "tool_result" => &["type", "call_id", "content", "is_error", "extra"],
        "media" => &["type", "mime_type", "source", "name", "extra"],
        "provider" => &["type", "format", "value", "extra"],
        _ => &[],
    }
}

/// Decodes with serde, naming the failing field.
fn typed<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let inner = e.path().to_string();
        let field = if inner == "." { "(line)".to_owned() } else { inner };
        FieldError { field, reason: e.into_inner().to_string() }
    })
}

/// Members outside `known` are refused.
fn only(node: &Node<'_>, known: &[&str], path: &Path) -> Result<()> {
    if let Some(object) = node.as_object() {
        for (key, _) in object.members() {
            if !known.contains(&key.as_ref()) {
                return path.key(key).fail("unknown field");
            }
        }
    }
    Ok(())
}

/// `extra`, when present, must be an object of objects.
fn check_extra(owner: &Node<'_>, path: &Path) -> Result<()> {
    let Some(extra) = owner.as_object().and_then(|o| o.get("extra")).filter(|e| !e.is_null()) else {
        return Ok(());
    };
    let ok = extra.as_object().is_some_and(|o| o.members().iter().all(|(_, v)| v.as_object().is_some()));
    if ok { Ok(()) } else { path.key("extra").fail("expected an object keyed by format, whose members are objects") }
}

fn check_message(message: &Node<'_>, path: &Path) -> Result<()> {
    only(message, MESSAGE, path)?;
    check_extra(message, path)?;
    let object = message.as_object();
    if let Some(usage) = object.and_then(|o| o.get("usage")) {
        only(usage, USAGE, &path.key("usage"))?;
    }
    let parts = object.and_then(|o| o.get("parts")).and_then(Node::as_array).unwrap_or(&[]);
    for (i, part) in parts.iter().enumerate() {
        let at = path.key("parts").index(i);
        if let Some(kind) = super::fields::type_of(part) {
            let known = part_members(&kind);
            if !known.is_empty() {
                only(part, known, &at)?;
            }
        }
        check_extra(part, &at)?;
    }
    Ok(())
}

/// The checks serde does not do: unknown members and the shape of extras.
fn check_line(line: &Node<'_>) -> Result<()> {
    let root = Path::root();
    only(line, LINE, &root)?;
    if let Some(meta) = line.as_object().and_then(|o| o.get("meta")) {
        only(meta, META, &root.key("meta"))?;
        check_extra(meta, &root.key("meta"))?;
    }
    let messages = line.as_object().and_then(|o| o.get("messages")).and_then(Node::as_array).unwrap_or(&[]);
    for (i, message) in messages.iter().enumerate() {
        check_message(message, &root.key("messages").index(i))?;
    }
    Ok(())
}

pub fn parse_line(node: &Node<'_>, text: &str) -> Result<Transcript> {
    let line: Line = typed(text)?;
    check_line(node)?;
    Ok(Transcript {
        conversation_id: line.conversation_id,
        meta: line.meta,
        messages: line.messages,
        display: line.display,
    })
}

/// One `NewMessage` value.
pub fn parse_message(node: &Node<'_>, text: &str) -> Result<NewMessage> {
    let message: NewMessage = typed(text)?;
    check_message(node, &Path::root())?;
    Ok(message)
}

pub fn render_line(transcript: &Transcript) -> std::result::Result<String, Error> {
    let line = Line {
        conversation_id: transcript.conversation_id.clone(),
        meta: transcript.meta.clone(),
        messages: transcript.messages.clone(),
        display: transcript.display.clone(),
    };
    serde_json::to_string(&line).map_err(|e| Error::Internal(format!("encoding a transcript: {e}")))
}

pub fn render_message(message: &NewMessage) -> std::result::Result<String, Error> {
    serde_json::to_string(message).map_err(|e| Error::Internal(format!("encoding a message: {e}")))
}

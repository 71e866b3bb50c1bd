//! OpenAI Chat Completions messages:
//! `{"messages": [{"role", "content", "tool_calls", "tool_call_id"}…], "x_stowage"?}`.
//!
//! Native: roles system/developer/user/assistant/tool, text, `image_url` images
//! (inline bytes as data URLs), assistant `tool_calls` with arguments as the exact
//! text, tool results (one `tool` message each). Everything else (thinking, error
//! flags, ids, usage, stop reasons, part order) travels in `x_stowage`.

use serde_json::{Map, Value, json};

use super::fields::{self, FieldError};
use super::{Derived, MessageExtension, Transcript, attach, complete, data_url, decode_base64, residue};
use crate::error::Error;
use crate::model::{MediaSource, NewMessage, Part, Role};

/// `content` for text and media parts: a string for one text part, an array
/// otherwise, null for none.
fn content(parts: &[Part]) -> Value {
    let items: Vec<Value> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(json!({ "type": "text", "text": text })),
            Part::Media { mime_type, source, .. } => {
                let url = match source {
                    MediaSource::Url(url) => url.clone(),
                    MediaSource::Inline(bytes) => data_url(mime_type, bytes),
                };
                Some(json!({ "type": "image_url", "image_url": { "url": url } }))
            }
            _ => None,
        })
        .collect();
    match items.as_slice() {
        [] => Value::Null,
        [single] if single["type"] == "text" => single["text"].clone(),
        _ => Value::Array(items),
    }
}

/// The OpenAI messages for one Stowage message (several for a tool message).
fn native(message: &NewMessage) -> Vec<Value> {
    match message.role {
        Role::Tool => {
            let results: Vec<Value> = message
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolResult { call_id, content, .. } => {
                        Some(json!({ "role": "tool", "tool_call_id": call_id, "content": content }))
                    }
                    _ => None,
                })
                .collect();
            if results.is_empty() {
                vec![json!({ "role": "tool", "tool_call_id": "", "content": "" })]
            } else {
                results
            }
        }
        Role::Assistant => {
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            m.insert("content".into(), content(&message.parts));
            let calls: Vec<Value> = message
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall { id, name, arguments } => Some(
                        json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } }),
                    ),
                    _ => None,
                })
                .collect();
            if !calls.is_empty() {
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            vec![Value::Object(m)]
        }
        role => vec![json!({ "role": role.as_str(), "content": content(&message.parts) })],
    }
}

fn content_parts(value: Option<&Value>, field: &str) -> fields::Result<Vec<Part>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![Part::text(text.clone())]),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let at = format!("{field}[{i}]");
                let map = fields::object(item, &at)?;
                match fields::required_str(map, "type", &at)? {
                    "text" => Ok(Part::text(fields::required_str(map, "text", &at)?)),
                    "image_url" => {
                        let image =
                            fields::object(map.get("image_url").unwrap_or(&Value::Null), &format!("{at}.image_url"))?;
                        let url = fields::required_str(image, "url", &format!("{at}.image_url"))?;
                        media_from_url(url, &format!("{at}.image_url.url"))
                    }
                    other => fields::fail(&format!("{at}.type"), format!("unsupported content part type `{other}`")),
                }
            })
            .collect(),
        Some(_) => fields::fail(field, "expected a string, an array of parts, or null"),
    }
}

fn media_from_url(url: &str, field: &str) -> fields::Result<Part> {
    if let Some(rest) = url.strip_prefix("data:") {
        let Some((mime, data)) = rest.split_once(";base64,") else {
            return fields::fail(field, "a data URL must be base64 encoded");
        };
        return Ok(Part::Media {
            mime_type: mime.to_owned(),
            source: MediaSource::Inline(decode_base64(data, field)?),
            name: None,
        });
    }
    Ok(Part::Media { mime_type: "image/*".into(), source: MediaSource::Url(url.to_owned()), name: None })
}

/// The Stowage view of a group of OpenAI messages (one, or a tool message's results).
fn derive(group: &[(&Value, String)]) -> fields::Result<Derived> {
    let (first, field) = &group[0];
    let map = fields::object(first, field)?;
    let role = match fields::required_str(map, "role", field)? {
        "system" => Role::System,
        "developer" => Role::Developer,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => return fields::fail(&format!("{field}.role"), format!("unsupported role `{other}`")),
    };
    let mut parts = Vec::new();
    match role {
        Role::Tool => {
            for (message, field) in group {
                let map = fields::object(message, field)?;
                let call_id = fields::required_str(map, "tool_call_id", field)?;
                let content = match map.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    other => content_parts(other, &format!("{field}.content"))?
                        .into_iter()
                        .filter_map(|p| if let Part::Text { text } = p { Some(text) } else { None })
                        .collect(),
                };
                if !(call_id.is_empty() && content.is_empty()) {
                    parts.push(Part::tool_result(call_id, content, false));
                }
            }
        }
        _ => {
            parts = content_parts(map.get("content"), &format!("{field}.content"))?;
            if let Some(calls) = map.get("tool_calls") {
                for (i, call) in fields::array(calls, &format!("{field}.tool_calls"))?.iter().enumerate() {
                    let at = format!("{field}.tool_calls[{i}]");
                    let call = fields::object(call, &at)?;
                    let function =
                        fields::object(call.get("function").unwrap_or(&Value::Null), &format!("{at}.function"))?;
                    parts.push(Part::tool_call(
                        fields::required_str(call, "id", &at)?,
                        fields::required_str(function, "name", &format!("{at}.function"))?,
                        fields::required_str(function, "arguments", &format!("{at}.function"))?,
                    ));
                }
            }
        }
    }
    Ok(Derived { role, parts, usage: None, stop_reason: None })
}

pub fn render(transcript: &Transcript) -> Result<Value, Error> {
    let mut messages = Vec::new();
    for message in &transcript.messages {
        let native = native(message);
        let fields: Vec<(&Value, String)> = native.iter().map(|v| (v, "messages".to_owned())).collect();
        let derived =
            derive(&fields).map_err(|e| Error::Internal(format!("openai export: {}: {}", e.field, e.reason)))?;
        let ext = residue(message, &derived);
        for (i, value) in native.into_iter().enumerate() {
            if i == 0 {
                messages.push(attach(value, &ext));
            } else {
                messages.push(attach(value, &MessageExtension { continues: true, ..Default::default() }));
            }
        }
    }
    let mut line = Map::new();
    line.insert("messages".into(), Value::Array(messages));
    if let Some(ext) = super::line_extension(transcript, None) {
        line.insert("x_stowage".into(), ext);
    }
    Ok(Value::Object(line))
}

pub fn parse(value: &Value) -> Result<Transcript, FieldError> {
    let line = fields::object(value, "(line)")?;
    for key in line.keys() {
        if !matches!(key.as_str(), "messages" | "x_stowage" | "tools" | "model") {
            return fields::fail(key, "unknown field for an OpenAI conversation line");
        }
    }
    let (_, conversation_id, meta) = super::parse_line_extension(value)?;
    let items = fields::array(line.get("messages").unwrap_or(&Value::Null), "messages")?;
    // Group messages marked as continuations with the message they continue.
    let mut groups: Vec<(Vec<(&Value, String)>, MessageExtension)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("messages[{i}]");
        let message_ext = super::parse_message_extension(item, &field)?;
        match groups.last_mut() {
            Some((group, _)) if message_ext.continues => group.push((item, field)),
            _ if message_ext.continues => return fields::fail(&field, "`continues` on the first message"),
            _ => groups.push((vec![(item, field)], message_ext)),
        }
    }
    let messages = groups
        .into_iter()
        .map(|(group, message_ext)| {
            let field = group[0].1.clone();
            complete(derive(&group)?, message_ext, &field)
        })
        .collect::<fields::Result<Vec<NewMessage>>>()?;
    Ok(Transcript { conversation_id, meta, messages, display: Vec::new() })
}

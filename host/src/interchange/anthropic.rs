//! Anthropic Messages API messages:
//! `{"system"?, "messages": [{"role", "content": [blocks], "stop_reason"?, "usage"?}…], "x_stowage"?}`.
//!
//! Native: a leading system prompt, user/assistant roles (a user message made only
//! of `tool_result` blocks is a tool message), text, `thinking` with its
//! signature, `redacted_thinking`, `tool_use` (arguments as the `input` object),
//! `tool_result` with `is_error`, images and documents (base64 or URL), and on
//! assistant messages `stop_reason` and `usage`. Everything else travels in
//! `x_stowage`.

use serde_json::{Map, Value, json};

use super::fields::{self, FieldError};
use super::{Derived, MessageExtension, Transcript, attach, complete, decode_base64, residue};
use crate::error::Error;
use crate::model::{MediaSource, NewMessage, Part, Role, StopReason, Usage};

fn block(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({ "type": "text", "text": text }),
        Part::Thinking { text, redacted: true, .. } => json!({ "type": "redacted_thinking", "data": text }),
        Part::Thinking { text, signature, .. } => {
            let mut b = json!({ "type": "thinking", "thinking": text });
            if let Some(signature) = signature {
                b["signature"] = json!(signature);
            }
            b
        }
        Part::ToolCall { id, name, arguments } => {
            // `input` must be an object; other arguments fall back to x_stowage.
            let input = match serde_json::from_str::<Value>(arguments) {
                Ok(object @ Value::Object(_)) => object,
                _ => json!({}),
            };
            json!({ "type": "tool_use", "id": id, "name": name, "input": input })
        }
        Part::ToolResult { call_id, content, is_error } => {
            json!({ "type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error })
        }
        Part::Media { mime_type, source, .. } => {
            let kind = if mime_type.starts_with("image/") { "image" } else { "document" };
            let source = match source {
                MediaSource::Url(url) => json!({ "type": "url", "url": url }),
                MediaSource::Inline(bytes) => {
                    use base64::Engine;
                    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                    json!({ "type": "base64", "media_type": mime_type, "data": data })
                }
            };
            json!({ "type": kind, "source": source })
        }
    }
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
    })
}

fn native(message: &NewMessage) -> Value {
    let role = if message.role == Role::Assistant { "assistant" } else { "user" };
    let mut m = Map::new();
    m.insert("role".into(), json!(role));
    m.insert("content".into(), Value::Array(message.parts.iter().map(block).collect()));
    if message.role == Role::Assistant {
        if let Some(reason) = &message.stop_reason {
            m.insert("stop_reason".into(), json!(String::from(reason.clone())));
        }
        if let Some(usage) = &message.usage {
            m.insert("usage".into(), usage_json(usage));
        }
    }
    Value::Object(m)
}

fn parse_block(value: &Value, field: &str) -> fields::Result<Part> {
    let b = fields::object(value, field)?;
    Ok(match fields::required_str(b, "type", field)? {
        "text" => Part::text(fields::required_str(b, "text", field)?),
        "thinking" => Part::Thinking {
            text: fields::required_str(b, "thinking", field)?.to_owned(),
            signature: fields::optional_str(b, "signature", field)?.map(str::to_owned),
            redacted: false,
        },
        "redacted_thinking" => {
            Part::Thinking { text: fields::required_str(b, "data", field)?.to_owned(), signature: None, redacted: true }
        }
        "tool_use" => {
            let input = b
                .get("input")
                .ok_or_else(|| FieldError { field: format!("{field}.input"), reason: "missing".into() })?;
            fields::object(input, &format!("{field}.input"))?;
            Part::tool_call(
                fields::required_str(b, "id", field)?,
                fields::required_str(b, "name", field)?,
                input.to_string(),
            )
        }
        "tool_result" => {
            let content = match b.get("content") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(items)) => {
                    text_blocks(items, &format!("{field}.content"), "only text is supported inside a tool result")?
                }
                Some(_) => {
                    return fields::fail(&format!("{field}.content"), "expected a string or an array of text blocks");
                }
            };
            let is_error = match b.get("is_error") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(flag)) => *flag,
                Some(_) => return fields::fail(&format!("{field}.is_error"), "expected a boolean"),
            };
            Part::tool_result(fields::required_str(b, "tool_use_id", field)?, content, is_error)
        }
        "image" | "document" => {
            let at = format!("{field}.source");
            let source = fields::object(b.get("source").unwrap_or(&Value::Null), &at)?;
            match fields::required_str(source, "type", &at)? {
                "base64" => Part::Media {
                    mime_type: fields::required_str(source, "media_type", &at)?.to_owned(),
                    source: MediaSource::Inline(decode_base64(
                        fields::required_str(source, "data", &at)?,
                        &format!("{at}.data"),
                    )?),
                    name: None,
                },
                "url" => Part::Media {
                    mime_type: if b["type"] == "image" { "image/*".into() } else { "application/octet-stream".into() },
                    source: MediaSource::Url(fields::required_str(source, "url", &at)?.to_owned()),
                    name: None,
                },
                other => return fields::fail(&format!("{at}.type"), format!("unsupported source type `{other}`")),
            }
        }
        other => return fields::fail(&format!("{field}.type"), format!("unsupported content block type `{other}`")),
    })
}

/// The concatenated text of an array of text blocks; any other block is refused.
fn text_blocks(blocks: &[Value], field: &str, refusal: &str) -> fields::Result<String> {
    let mut text = String::new();
    for (i, block) in blocks.iter().enumerate() {
        let at = format!("{field}[{i}]");
        match parse_block(block, &at)? {
            Part::Text { text: t } => text.push_str(&t),
            _ => return fields::fail(&at, refusal),
        }
    }
    Ok(text)
}

fn derive(value: &Value, field: &str) -> fields::Result<Derived> {
    let m = fields::object(value, field)?;
    let parts = match m.get("content") {
        Some(Value::String(text)) => vec![Part::text(text.clone())],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .map(|(i, b)| parse_block(b, &format!("{field}.content[{i}]")))
            .collect::<fields::Result<_>>()?,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return fields::fail(&format!("{field}.content"), "expected a string or an array of blocks"),
    };
    let role = match fields::required_str(m, "role", field)? {
        "assistant" => Role::Assistant,
        "user" if !parts.is_empty() && parts.iter().all(|p| matches!(p, Part::ToolResult { .. })) => Role::Tool,
        "user" => Role::User,
        other => {
            return fields::fail(&format!("{field}.role"), format!("unsupported role `{other}` (user or assistant)"));
        }
    };
    let stop_reason = fields::optional_str(m, "stop_reason", field)?.map(|s| StopReason::from(s.to_owned()));
    let usage = match m.get("usage") {
        None | Some(Value::Null) => None,
        Some(u) => {
            let at = format!("{field}.usage");
            let u = fields::object(u, &at)?;
            let count = |key: &str| -> fields::Result<u64> {
                match u.get(key) {
                    None | Some(Value::Null) => Ok(0),
                    Some(v) => v.as_u64().map_or_else(|| fields::fail(&format!("{at}.{key}"), "expected a count"), Ok),
                }
            };
            Some(Usage {
                input_tokens: count("input_tokens")?,
                output_tokens: count("output_tokens")?,
                cached_tokens: count("cache_read_input_tokens")?,
                cost: None,
            })
        }
    };
    Ok(Derived { role, parts, usage, stop_reason })
}

/// The leading system prompt, when it is a single text message.
fn leading_system(transcript: &Transcript) -> Option<(&NewMessage, &str)> {
    let first = transcript.messages.first()?;
    match (first.role, first.parts.as_slice()) {
        (Role::System, [Part::Text { text }]) => Some((first, text.as_str())),
        _ => None,
    }
}

pub fn render(transcript: &Transcript) -> Result<Value, Error> {
    let system = leading_system(transcript);
    let rest = if system.is_some() { &transcript.messages[1..] } else { &transcript.messages[..] };
    let mut messages = Vec::new();
    for message in rest {
        let value = native(message);
        let derived = derive(&value, "messages")
            .map_err(|e| Error::Internal(format!("anthropic export: {}: {}", e.field, e.reason)))?;
        messages.push(attach(value, &residue(message, &derived)));
    }
    let mut line = Map::new();
    let mut system_ext = None;
    if let Some((message, text)) = system {
        line.insert("system".into(), json!(text));
        let derived = Derived { role: Role::System, parts: vec![Part::text(text)], usage: None, stop_reason: None };
        let ext = residue(message, &derived);
        system_ext = (!ext.is_empty()).then_some(ext);
    }
    line.insert("messages".into(), Value::Array(messages));
    if let Some(ext) = super::line_extension(transcript, system_ext) {
        line.insert("x_stowage".into(), ext);
    }
    Ok(Value::Object(line))
}

pub fn parse(value: &Value) -> Result<Transcript, FieldError> {
    let line = fields::object(value, "(line)")?;
    for key in line.keys() {
        if !matches!(key.as_str(), "messages" | "system" | "x_stowage" | "model" | "tools" | "max_tokens") {
            return fields::fail(key, "unknown field for an Anthropic conversation line");
        }
    }
    let (ext, conversation_id, meta) = super::parse_line_extension(value)?;
    let mut messages = Vec::new();
    match line.get("system") {
        None | Some(Value::Null) => {}
        Some(system) => {
            let text = match system {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => text_blocks(blocks, "system", "only text is supported in the system prompt")?,
                _ => return fields::fail("system", "expected a string or an array of text blocks"),
            };
            let derived = Derived { role: Role::System, parts: vec![Part::text(text)], usage: None, stop_reason: None };
            messages.push(complete(derived, ext.system.clone().unwrap_or_default(), "system")?);
        }
    }
    let items = fields::array(line.get("messages").unwrap_or(&Value::Null), "messages")?;
    for (i, item) in items.iter().enumerate() {
        let field = format!("messages[{i}]");
        let message_ext: MessageExtension = super::parse_message_extension(item, &field)?;
        messages.push(complete(derive(item, &field)?, message_ext, &field)?);
    }
    Ok(Transcript { conversation_id, meta, messages, display: Vec::new() })
}

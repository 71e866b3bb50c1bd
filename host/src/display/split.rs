//! Turning a message into display records: one per part, in order.

use serde_json::{Value, json};

use crate::model::{MediaSource, Message, NewMessage, Part, Role, StopReason, ToolStatus, content_type};

/// The parts of a message that display persistence needs.
pub struct MessageView<'a> {
    pub id: Option<&'a str>,
    pub role: Role,
    pub parts: &'a [Part],
    pub stop_reason: Option<&'a StopReason>,
}

impl<'a> From<&'a Message> for MessageView<'a> {
    fn from(m: &'a Message) -> Self {
        Self { id: Some(&m.id), role: m.role, parts: &m.parts, stop_reason: m.stop_reason.as_ref() }
    }
}

impl<'a> From<&'a NewMessage> for MessageView<'a> {
    fn from(m: &'a NewMessage) -> Self {
        Self { id: m.id.as_deref(), role: m.role, parts: &m.parts, stop_reason: m.stop_reason.as_ref() }
    }
}

/// A record before it has a seq.
pub struct Draft {
    pub content_type: &'static str,
    pub tool_call_id: Option<String>,
    pub status: Option<ToolStatus>,
    pub content: Value,
    pub metadata: serde_json::Map<String, Value>,
}

fn draft(part: &Part) -> Draft {
    let (content_type, tool_call_id, status, content) = match part {
        Part::Text { text, .. } => (content_type::TEXT, None, None, json!({ "text": text })),
        Part::Thinking { text, signature, redacted, .. } => {
            let mut c = json!({ "text": text, "redacted": redacted });
            if let Some(signature) = signature {
                c["signature"] = json!(signature);
            }
            (content_type::THINKING, None, None, c)
        }
        Part::ToolCall { id, name, arguments, .. } => (
            content_type::TOOL_CALL,
            Some(id.clone()),
            Some(ToolStatus::Pending),
            json!({ "name": name, "arguments": arguments }),
        ),
        Part::ToolResult { call_id, content, is_error, .. } => (
            content_type::TOOL_RESULT,
            Some(call_id.clone()),
            None,
            json!({ "content": content, "is_error": is_error }),
        ),
        Part::Media { mime_type, source, name, .. } => {
            let source = match source {
                MediaSource::Url(url) => json!({ "url": url }),
                MediaSource::Inline(bytes) => json!({ "inline_bytes": bytes.len() }),
            };
            (content_type::MEDIA, None, None, json!({ "mime_type": mime_type, "source": source, "name": name }))
        }
        Part::Provider { format, value, .. } => {
            let value: Value = serde_json::from_str(value.as_str()).unwrap_or(Value::Null);
            let kind = value.get("type").and_then(Value::as_str).unwrap_or("unknown").to_owned();
            (content_type::PROVIDER, None, None, json!({ "format": format, "type": kind, "value": value }))
        }
    };
    Draft { content_type, tool_call_id, status, content, metadata: serde_json::Map::new() }
}

/// One draft per part, in order; the stop reason goes on the last one.
pub fn drafts(message: &MessageView<'_>) -> Vec<Draft> {
    let mut drafts: Vec<Draft> = message.parts.iter().map(draft).collect();
    if let (Some(last), Some(reason)) = (drafts.last_mut(), message.stop_reason) {
        last.metadata.insert("stop_reason".into(), Value::String(reason.clone().into()));
    }
    drafts
}

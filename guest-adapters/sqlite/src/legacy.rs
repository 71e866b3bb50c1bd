//! Records written by the 0.1.0 adapter, and their "plain legacy" form of
//! contract 0.2.0.
//!
//! The 0.1.0 adapter stored each record as JSON made by serde derives on the
//! wit-bindgen types of contract 0.1.0: structs with snake_case field names,
//! externally tagged enums (`{"Text":"…"}`, `"User"`, `"EndTurn"`,
//! `{"Other":"…"}`), and JSON-valued fields as `Option<String>` holding JSON text.
//! The mirror types below follow exactly those derive rules.
//!
//! The plain legacy form (types.wit, display-store.wit) is the byte 0x01 followed
//! by a UTF-8 JSON object in Stowage's public JSON form, handed to the host with an
//! empty tag. JSON text fields (metadata, display content) are embedded raw, byte
//! for byte, after checking that they are one JSON value. The host never sees the
//! 0.1.0 format: the conversion happens here, once, when the database is migrated.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::stowage::store::types::Role as WitRole;

/// The first byte of plain (unsealed, untagged) legacy content.
pub const PLAIN: u8 = 0x01;

#[derive(Deserialize)]
enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

#[derive(Deserialize)]
struct Thinking {
    text: String,
    signature: Option<String>,
    redacted: bool,
}

#[derive(Deserialize)]
struct ToolCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct ToolResult {
    call_id: String,
    content: String,
    is_error: bool,
}

#[derive(Deserialize)]
enum MediaSource {
    Url(String),
    Inline(Vec<u8>),
}

#[derive(Deserialize)]
struct Media {
    mime_type: String,
    source: MediaSource,
    name: Option<String>,
}

#[derive(Deserialize)]
enum Part {
    Text(String),
    Thinking(Thinking),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    Media(Media),
}

#[derive(Deserialize, Serialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
}

#[derive(Deserialize)]
enum StopReason {
    EndTurn,
    MaxTokens,
    ToolUse,
    StopSequence,
    ContentFilter,
    Error,
    Other(String),
}

#[derive(Deserialize)]
struct Message {
    id: String,
    role: Role,
    parts: Vec<Part>,
    usage: Option<Usage>,
    stop_reason: Option<StopReason>,
    created_at: i64,
    metadata: Option<String>,
}

#[derive(Deserialize)]
struct ConversationMeta {
    agent_id: Option<String>,
    title: Option<String>,
    metadata: Option<String>,
}

#[derive(Deserialize)]
struct DisplayRecord {
    message_id: Option<String>,
    message_type: String,
    content_type: String,
    tool_call_id: Option<String>,
    status: Option<String>,
    content: String,
    metadata: Option<String>,
    created_at: i64,
    updated_at: i64,
}

/// A part in Stowage's public JSON form.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PlainPart<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<&'a str>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    ToolResult {
        call_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    Media {
        mime_type: &'a str,
        source: PlainSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum PlainSource<'a> {
    Url(&'a str),
    Inline(&'a [u8]),
}

impl<'a> From<&'a Part> for PlainPart<'a> {
    fn from(part: &'a Part) -> Self {
        match part {
            Part::Text(text) => PlainPart::Text { text },
            Part::Thinking(t) => {
                PlainPart::Thinking { text: &t.text, signature: t.signature.as_deref(), redacted: t.redacted }
            }
            Part::ToolCall(c) => PlainPart::ToolCall { id: &c.id, name: &c.name, arguments: &c.arguments },
            Part::ToolResult(r) => {
                PlainPart::ToolResult { call_id: &r.call_id, content: &r.content, is_error: r.is_error }
            }
            Part::Media(m) => PlainPart::Media {
                mime_type: &m.mime_type,
                source: match &m.source {
                    MediaSource::Url(url) => PlainSource::Url(url),
                    MediaSource::Inline(bytes) => PlainSource::Inline(bytes),
                },
                name: m.name.as_deref(),
            },
        }
    }
}

fn stop_reason(reason: &StopReason) -> &str {
    match reason {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::ToolUse => "tool_use",
        StopReason::StopSequence => "stop_sequence",
        StopReason::ContentFilter => "content_filter",
        StopReason::Error => "error",
        StopReason::Other(other) => other,
    }
}

/// Writes `0x01{"key":value,…}` field by field, in call order.
struct Plain {
    bytes: Vec<u8>,
}

impl Plain {
    fn new() -> Self {
        Plain { bytes: vec![PLAIN, b'{'] }
    }

    fn key(&mut self, key: &str) {
        if self.bytes.len() > 2 {
            self.bytes.push(b',');
        }
        self.bytes.push(b'"');
        self.bytes.extend_from_slice(key.as_bytes());
        self.bytes.extend_from_slice(b"\":");
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), String> {
        self.key(key);
        serde_json::to_writer(&mut self.bytes, value).map_err(|e| format!("encoding {key}: {e}"))
    }

    /// Embeds JSON text verbatim (whitespace included), once it is known to be
    /// exactly one JSON value.
    fn raw(&mut self, key: &str, json: &str) -> Result<(), String> {
        serde_json::from_str::<&RawValue>(json).map_err(|e| format!("{key} is not valid JSON text: {e}"))?;
        self.key(key);
        self.bytes.extend_from_slice(json.as_bytes());
        Ok(())
    }

    fn finish(mut self) -> Vec<u8> {
        self.bytes.push(b'}');
        self.bytes
    }
}

/// A 0.1.0 message in 0.2.0 form.
#[derive(Debug, PartialEq)]
pub struct PlainMessage {
    pub id: String,
    pub role: WitRole,
    pub created_at: i64,
    pub content: Vec<u8>,
}

/// Converts a message stored by the 0.1.0 adapter.
pub fn message(json: &str) -> Result<PlainMessage, String> {
    let message: Message = serde_json::from_str(json).map_err(|e| format!("not a 0.1.0 message: {e}"))?;
    let mut plain = Plain::new();
    let parts: Vec<PlainPart> = message.parts.iter().map(PlainPart::from).collect();
    plain.field("parts", &parts)?;
    if let Some(usage) = &message.usage {
        plain.field("usage", usage)?;
    }
    if let Some(reason) = &message.stop_reason {
        plain.field("stop_reason", stop_reason(reason))?;
    }
    if let Some(metadata) = &message.metadata {
        plain.raw("metadata", metadata)?;
    }
    let role = match message.role {
        Role::System => WitRole::System,
        Role::Developer => WitRole::Developer,
        Role::User => WitRole::User,
        Role::Assistant => WitRole::Assistant,
        Role::Tool => WitRole::Tool,
    };
    Ok(PlainMessage { id: message.id, role, created_at: message.created_at, content: plain.finish() })
}

/// Converts conversation metadata stored by the 0.1.0 adapter.
pub fn conversation_meta(json: &str) -> Result<Vec<u8>, String> {
    let meta: ConversationMeta =
        serde_json::from_str(json).map_err(|e| format!("not 0.1.0 conversation metadata: {e}"))?;
    let mut plain = Plain::new();
    if let Some(agent_id) = &meta.agent_id {
        plain.field("agent_id", agent_id)?;
    }
    if let Some(title) = &meta.title {
        plain.field("title", title)?;
    }
    if let Some(metadata) = &meta.metadata {
        plain.raw("metadata", metadata)?;
    }
    Ok(plain.finish())
}

/// A 0.1.0 display record in 0.2.0 form: clear fields plus the body.
#[derive(Debug, PartialEq)]
pub struct PlainDisplay {
    pub message_id: Option<String>,
    pub message_type: String,
    pub content_type: String,
    pub tool_call_id: Option<String>,
    pub status: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub body: Vec<u8>,
}

/// Converts a display record stored by the 0.1.0 adapter.
pub fn display_record(json: &[u8]) -> Result<PlainDisplay, String> {
    let record: DisplayRecord = serde_json::from_slice(json).map_err(|e| format!("not a 0.1.0 display record: {e}"))?;
    let mut plain = Plain::new();
    plain.raw("content", &record.content)?;
    if let Some(metadata) = &record.metadata {
        plain.raw("metadata", metadata)?;
    }
    Ok(PlainDisplay {
        message_id: record.message_id,
        message_type: record.message_type,
        content_type: record.content_type,
        tool_call_id: record.tool_call_id,
        status: record.status,
        created_at: record.created_at,
        updated_at: record.updated_at,
        body: plain.finish(),
    })
}

#[cfg(test)]
#[path = "legacy_tests.rs"]
mod tests;

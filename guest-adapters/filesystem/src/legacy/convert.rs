//! 0.1.0 records in contract 0.2.0's "plain legacy" form: the byte 0x01
//! followed by UTF-8 JSON, with an empty tag.
//!
//! Shapes (absent optionals omitted):
//! - message content: `{"parts":[…],"usage":{…},"stop_reason":"…","metadata":<json>}`;
//!   parts `{"type":"text","text"}`, `{"type":"thinking","text","signature"?,"redacted":true?}`,
//!   `{"type":"tool_call","id","name","arguments"}`,
//!   `{"type":"tool_result","call_id","content","is_error":true?}`,
//!   `{"type":"media","mime_type","source":{"url":…}|{"inline":[…]},"name"?}`;
//!   usage `{"input_tokens","output_tokens","cached_tokens","cost"?}`; stop reason
//!   `end_turn`, `max_tokens`, `tool_use`, `stop_sequence`, `content_filter`,
//!   `error` or the provider's own string;
//! - conversation meta: `{"agent_id"?,"title"?,"metadata"?}`;
//! - display body: `{"content":<json>,"metadata":<json>?}`.
//!
//! JSON-text fields are embedded as raw JSON, byte for byte (as `RawValue`
//! keeps them); one that is not valid JSON is an error, never re-encoded.

use serde::Serialize;
use serde_json::value::RawValue;

use super::types;
use crate::exports::stowage::store::display_store::{DisplayRecord, StoredDisplayRecord};
use crate::stowage::store::types::{ConversationMeta, Message, Role, StoredMessage};

/// The marker byte of plain (unsealed, untagged) JSON content.
pub const PLAIN: u8 = 0x01;

#[derive(Serialize)]
struct Content<'a> {
    parts: Vec<Part<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a RawValue>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<&'a str>,
        #[serde(skip_serializing_if = "is_false")]
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
        #[serde(skip_serializing_if = "is_false")]
        is_error: bool,
    },
    Media {
        mime_type: &'a str,
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Source<'a> {
    Url(&'a str),
    Inline(&'a [u8]),
}

#[derive(Serialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
}

#[derive(Serialize)]
struct Meta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct Body<'a> {
    content: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a RawValue>,
}

/// JSON text as a raw value; `field` names it in the error.
fn raw<'a>(text: &'a str, field: &str) -> Result<&'a RawValue, String> {
    serde_json::from_str(text).map_err(|e| format!("its {field} is not valid JSON: {e}"))
}

fn opt_raw<'a>(text: Option<&'a str>, field: &str) -> Result<Option<&'a RawValue>, String> {
    text.map(|t| raw(t, field)).transpose()
}

fn plain(value: &impl Serialize) -> Result<Vec<u8>, String> {
    let mut out = vec![PLAIN];
    serde_json::to_writer(&mut out, value).map_err(|e| format!("cannot encode it as JSON: {e}"))?;
    Ok(out)
}

fn stop_reason(reason: &types::StopReason) -> &str {
    match reason {
        types::StopReason::EndTurn => "end_turn",
        types::StopReason::MaxTokens => "max_tokens",
        types::StopReason::ToolUse => "tool_use",
        types::StopReason::StopSequence => "stop_sequence",
        types::StopReason::ContentFilter => "content_filter",
        types::StopReason::Error => "error",
        types::StopReason::Other(other) => other,
    }
}

fn part(part: &types::Part) -> Part<'_> {
    match part {
        types::Part::Text(text) => Part::Text { text },
        types::Part::Thinking(t) => {
            Part::Thinking { text: &t.text, signature: t.signature.as_deref(), redacted: t.redacted }
        }
        types::Part::ToolCall(c) => Part::ToolCall { id: &c.id, name: &c.name, arguments: &c.arguments },
        types::Part::ToolResult(r) => {
            Part::ToolResult { call_id: &r.call_id, content: &r.content, is_error: r.is_error }
        }
        types::Part::Media(m) => Part::Media {
            mime_type: &m.mime_type,
            source: match &m.source {
                types::MediaSource::Url(url) => Source::Url(url),
                types::MediaSource::Inline(bytes) => Source::Inline(bytes),
            },
            name: m.name.as_deref(),
        },
    }
}

/// A 0.1.0 message's parts, usage, stop reason and metadata as plain content.
pub fn message_content(message: &types::Message) -> Result<Vec<u8>, String> {
    plain(&Content {
        parts: message.parts.iter().map(part).collect(),
        usage: message.usage.as_ref().map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_tokens: u.cached_tokens,
            cost: u.cost,
        }),
        stop_reason: message.stop_reason.as_ref().map(stop_reason),
        metadata: opt_raw(message.metadata.as_deref(), "metadata")?,
    })
}

pub fn role(role: types::Role) -> Role {
    match role {
        types::Role::System => Role::System,
        types::Role::Developer => Role::Developer,
        types::Role::User => Role::User,
        types::Role::Assistant => Role::Assistant,
        types::Role::Tool => Role::Tool,
    }
}

/// A 0.1.0 stored message in the 0.2.0 form, at the same seq.
pub fn stored_message(stored: &types::StoredMessage) -> Result<StoredMessage, String> {
    let m = &stored.message;
    Ok(StoredMessage {
        seq: stored.seq,
        message: Message {
            id: m.id.clone(),
            role: role(m.role),
            created_at: m.created_at,
            content: message_content(m)?,
            tag: Vec::new(),
        },
    })
}

/// 0.1.0 conversation metadata in the 0.2.0 form.
pub fn conversation_meta(meta: &types::ConversationMeta) -> Result<ConversationMeta, String> {
    let content = plain(&Meta {
        agent_id: meta.agent_id.as_deref(),
        title: meta.title.as_deref(),
        metadata: opt_raw(meta.metadata.as_deref(), "metadata")?,
    })?;
    Ok(ConversationMeta { content, tag: Vec::new() })
}

/// A 0.1.0 display record's content and metadata as a plain body.
pub fn display_body(record: &types::DisplayRecord) -> Result<Vec<u8>, String> {
    plain(&Body {
        content: raw(&record.content, "content")?,
        metadata: opt_raw(record.metadata.as_deref(), "metadata")?,
    })
}

/// A 0.1.0 stored display record in the 0.2.0 form, at the same seq.
pub fn display_record(stored: &types::StoredDisplayRecord) -> Result<StoredDisplayRecord, String> {
    let r = &stored.record;
    Ok(StoredDisplayRecord {
        seq: stored.seq,
        record: DisplayRecord {
            message_id: r.message_id.clone(),
            message_type: r.message_type.clone(),
            content_type: r.content_type.clone(),
            tool_call_id: r.tool_call_id.clone(),
            status: r.status.clone(),
            body: display_body(r)?,
            created_at: r.created_at,
            updated_at: r.updated_at,
            tag: Vec::new(),
        },
    })
}

//! Conversions between the public record model and the WIT types.

use super::bindings::types as wit;
use crate::error::Error;
use crate::model::{
    ConversationInfo, ConversationMeta, JsonText, MediaSource, Message, Part, Role, Scope, StopReason, Usage,
};

pub fn scope(s: &Scope) -> wit::Scope {
    wit::Scope { tenant: s.tenant.clone(), user: s.user.clone() }
}

fn role(r: Role) -> wit::Role {
    match r {
        Role::System => wit::Role::System,
        Role::Developer => wit::Role::Developer,
        Role::User => wit::Role::User,
        Role::Assistant => wit::Role::Assistant,
        Role::Tool => wit::Role::Tool,
    }
}

fn role_back(r: wit::Role) -> Role {
    match r {
        wit::Role::System => Role::System,
        wit::Role::Developer => Role::Developer,
        wit::Role::User => Role::User,
        wit::Role::Assistant => Role::Assistant,
        wit::Role::Tool => Role::Tool,
    }
}

fn part(p: &Part) -> wit::Part {
    match p {
        Part::Text { text } => wit::Part::Text(text.clone()),
        Part::Thinking { text, signature, redacted } => {
            wit::Part::Thinking(wit::Thinking { text: text.clone(), signature: signature.clone(), redacted: *redacted })
        }
        Part::ToolCall { id, name, arguments } => {
            wit::Part::ToolCall(wit::ToolCall { id: id.clone(), name: name.clone(), arguments: arguments.clone() })
        }
        Part::ToolResult { call_id, content, is_error } => wit::Part::ToolResult(wit::ToolResult {
            call_id: call_id.clone(),
            content: content.clone(),
            is_error: *is_error,
        }),
        Part::Media { mime_type, source, name } => wit::Part::Media(wit::Media {
            mime_type: mime_type.clone(),
            source: match source {
                MediaSource::Url(url) => wit::MediaSource::Url(url.clone()),
                MediaSource::Inline(bytes) => wit::MediaSource::Inline(bytes.clone()),
            },
            name: name.clone(),
        }),
    }
}

fn part_back(p: wit::Part) -> Part {
    match p {
        wit::Part::Text(text) => Part::Text { text },
        wit::Part::Thinking(t) => Part::Thinking { text: t.text, signature: t.signature, redacted: t.redacted },
        wit::Part::ToolCall(c) => Part::ToolCall { id: c.id, name: c.name, arguments: c.arguments },
        wit::Part::ToolResult(r) => Part::ToolResult { call_id: r.call_id, content: r.content, is_error: r.is_error },
        wit::Part::Media(m) => Part::Media {
            mime_type: m.mime_type,
            source: match m.source {
                wit::MediaSource::Url(url) => MediaSource::Url(url),
                wit::MediaSource::Inline(bytes) => MediaSource::Inline(bytes),
            },
            name: m.name,
        },
    }
}

fn usage(u: &Usage) -> wit::Usage {
    wit::Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cached_tokens: u.cached_tokens,
        cost: u.cost,
    }
}

fn usage_back(u: wit::Usage) -> Usage {
    Usage { input_tokens: u.input_tokens, output_tokens: u.output_tokens, cached_tokens: u.cached_tokens, cost: u.cost }
}

fn stop_reason(s: &StopReason) -> wit::StopReason {
    match s {
        StopReason::EndTurn => wit::StopReason::EndTurn,
        StopReason::MaxTokens => wit::StopReason::MaxTokens,
        StopReason::ToolUse => wit::StopReason::ToolUse,
        StopReason::StopSequence => wit::StopReason::StopSequence,
        StopReason::ContentFilter => wit::StopReason::ContentFilter,
        StopReason::Error => wit::StopReason::Error,
        StopReason::Other(other) => wit::StopReason::Other(other.clone()),
    }
}

fn stop_reason_back(s: wit::StopReason) -> StopReason {
    match s {
        wit::StopReason::EndTurn => StopReason::EndTurn,
        wit::StopReason::MaxTokens => StopReason::MaxTokens,
        wit::StopReason::ToolUse => StopReason::ToolUse,
        wit::StopReason::StopSequence => StopReason::StopSequence,
        wit::StopReason::ContentFilter => StopReason::ContentFilter,
        wit::StopReason::Error => StopReason::Error,
        wit::StopReason::Other(other) => StopReason::Other(other),
    }
}

/// A validated message, with its id and timestamp already assigned.
pub struct Outgoing<'a> {
    pub id: &'a str,
    pub created_at: i64,
    pub role: Role,
    pub parts: &'a [Part],
    pub usage: Option<&'a Usage>,
    pub stop_reason: Option<&'a StopReason>,
    pub metadata: Option<&'a JsonText>,
}

pub fn message(m: &Outgoing<'_>) -> wit::Message {
    wit::Message {
        id: m.id.to_owned(),
        role: role(m.role),
        parts: m.parts.iter().map(part).collect(),
        usage: m.usage.map(usage),
        stop_reason: m.stop_reason.map(stop_reason),
        created_at: m.created_at,
        metadata: m.metadata.map(|j| j.as_str().to_owned()),
    }
}

/// JSON text coming back from an adapter is re-validated: storage may be damaged.
fn json_back(text: Option<String>, what: &str) -> Result<Option<JsonText>, Error> {
    text.map(|t| JsonText::parse(t).map_err(|_| Error::Storage(format!("stored {what} is not valid JSON")))).transpose()
}

pub fn stored_message(m: wit::StoredMessage) -> Result<Message, Error> {
    let seq = m.seq;
    let m = m.message;
    Ok(Message {
        id: m.id,
        seq,
        role: role_back(m.role),
        parts: m.parts.into_iter().map(part_back).collect(),
        usage: m.usage.map(usage_back),
        stop_reason: m.stop_reason.map(stop_reason_back),
        created_at: m.created_at,
        metadata: json_back(m.metadata, &format!("metadata of message seq {seq}"))?,
    })
}

pub fn meta(m: &ConversationMeta) -> wit::ConversationMeta {
    wit::ConversationMeta {
        agent_id: m.agent_id.clone(),
        title: m.title.clone(),
        metadata: m.metadata.as_ref().map(|j| j.as_str().to_owned()),
    }
}

pub fn info_back(i: wit::ConversationInfo) -> Result<ConversationInfo, Error> {
    Ok(ConversationInfo {
        meta: ConversationMeta {
            agent_id: i.meta.agent_id,
            title: i.meta.title,
            metadata: json_back(i.meta.metadata, "conversation metadata")?,
        },
        id: i.id,
        scope: Scope { tenant: i.scope.tenant, user: i.scope.user },
        created_at: i.created_at,
        updated_at: i.updated_at,
        message_count: i.message_count,
        last_seq: i.last_seq,
        version: i.version,
    })
}

/// The adapter's contract error, as the public error.
pub fn error_back(e: wit::Error) -> Error {
    match e {
        wit::Error::NotFound => Error::NotFound,
        wit::Error::Conflict(c) => Error::Conflict { expected: c.expected_version, actual: c.actual_version },
        wit::Error::InvalidInput(reason) => Error::InvalidInput(reason),
        wit::Error::InvalidCursor => Error::InvalidCursor,
        wit::Error::Unsupported(what) => Error::Unsupported(what),
        wit::Error::Storage(reason) => Error::Storage(reason),
        wit::Error::AccessDenied(reason) => Error::AccessDenied(reason),
    }
}

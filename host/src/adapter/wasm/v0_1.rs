//! Conversions between the boundary records and the frozen 0.1.0 WIT types.
//!
//! A 0.1.0 adapter stores structured records, so the host decodes its own plain
//! encoding on the way out and re-encodes on the way back (sealing is refused for
//! such stores, and their records carry no tags). Content 0.1.0 cannot express
//! (provider parts, provider extras) travels losslessly as one inline media part
//! of the reserved type [`CONTENT_MIME`] holding the host's plain encoding.

use crate::adapter::raw::{AppendReply, Range, RawDisplay, RawInfo, RawLocated, RawMeta, RawStored, RawStoredDisplay};
use crate::error::Error;
use crate::integrity::codec::{self, DisplayBody, MessageContent};
use crate::model::{ConversationMeta, JsonText, MediaSource, Part, Role, Scope, StopReason, Usage};
use crate::wit::v0_1::{conversation_store as cs, display_store as ds, types as wit};

/// Media type of a part carrying a whole message's content for a 0.1.0 adapter.
/// Reserved: callers may not use it.
pub const CONTENT_MIME: &str = "application/vnd.stowage.content+json";

fn internal(what: &str, reason: String) -> Error {
    Error::Internal(format!("{what} for a 0.1.0 adapter: {reason}"))
}

pub fn scope(s: &Scope) -> wit::Scope {
    wit::Scope { tenant: s.tenant.clone(), user: s.user.clone() }
}

fn scope_back(s: wit::Scope) -> Scope {
    Scope { tenant: s.tenant, user: s.user }
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

/// A part in 0.1.0 terms, or `None` when 0.1.0 cannot carry it exactly.
fn part(p: &Part) -> Option<wit::Part> {
    if p.extra().is_some() {
        return None;
    }
    Some(match p {
        Part::Text { text, .. } => wit::Part::Text(text.clone()),
        Part::Thinking { text, signature, redacted, .. } => {
            wit::Part::Thinking(wit::Thinking { text: text.clone(), signature: signature.clone(), redacted: *redacted })
        }
        Part::ToolCall { id, name, arguments, .. } => {
            wit::Part::ToolCall(wit::ToolCall { id: id.clone(), name: name.clone(), arguments: arguments.clone() })
        }
        Part::ToolResult { call_id, content, is_error, .. } => wit::Part::ToolResult(wit::ToolResult {
            call_id: call_id.clone(),
            content: content.clone(),
            is_error: *is_error,
        }),
        Part::Media { mime_type, source, name, .. } => wit::Part::Media(wit::Media {
            mime_type: mime_type.clone(),
            source: match source {
                MediaSource::Url(url) => wit::MediaSource::Url(url.clone()),
                MediaSource::Inline(bytes) => wit::MediaSource::Inline(bytes.clone()),
            },
            name: name.clone(),
        }),
        Part::Provider { .. } => return None,
    })
}

fn part_back(p: wit::Part) -> Part {
    match p {
        wit::Part::Text(text) => Part::text(text),
        wit::Part::Thinking(t) => {
            Part::Thinking { text: t.text, signature: t.signature, redacted: t.redacted, extra: None }
        }
        wit::Part::ToolCall(c) => Part::tool_call(c.id, c.name, c.arguments),
        wit::Part::ToolResult(r) => Part::tool_result(r.call_id, r.content, r.is_error),
        wit::Part::Media(m) => Part::media(
            m.mime_type,
            match m.source {
                wit::MediaSource::Url(url) => MediaSource::Url(url),
                wit::MediaSource::Inline(bytes) => MediaSource::Inline(bytes),
            },
            m.name,
        ),
    }
}

fn stop_reason(s: StopReason) -> wit::StopReason {
    match s {
        StopReason::EndTurn => wit::StopReason::EndTurn,
        StopReason::MaxTokens => wit::StopReason::MaxTokens,
        StopReason::ToolUse => wit::StopReason::ToolUse,
        StopReason::StopSequence => wit::StopReason::StopSequence,
        StopReason::ContentFilter => wit::StopReason::ContentFilter,
        StopReason::Error => wit::StopReason::Error,
        StopReason::Other(other) => wit::StopReason::Other(other),
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

fn message(m: &RawStored) -> Result<wit::Message, Error> {
    let raw = &m.message;
    let content: MessageContent = codec::decode(&raw.content).map_err(|e| internal("message content", e))?;
    let parts: Option<Vec<wit::Part>> =
        if content.extra.is_some() { None } else { content.parts.iter().map(part).collect() };
    let (parts, usage, stop, metadata) = match parts {
        Some(parts) => (
            parts,
            content.usage.map(|u| wit::Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cached_tokens: u.cached_tokens,
                cost: u.cost,
            }),
            content.stop_reason.map(stop_reason),
            content.metadata.map(JsonText::into_string),
        ),
        None => {
            let whole = wit::Media {
                mime_type: CONTENT_MIME.into(),
                source: wit::MediaSource::Inline(raw.content.clone()),
                name: None,
            };
            (vec![wit::Part::Media(whole)], None, None, None)
        }
    };
    Ok(wit::Message {
        id: raw.id.clone(),
        role: role(raw.role),
        parts,
        usage,
        stop_reason: stop,
        created_at: raw.created_at,
        metadata,
    })
}

pub fn messages(batch: &[RawStored]) -> Result<Vec<wit::Message>, Error> {
    batch.iter().map(message).collect()
}

/// A stored 0.1.0 message in the host's plain encoding, untagged.
pub fn stored_back(m: wit::StoredMessage) -> Result<RawStored, Error> {
    let seq = m.seq;
    let wit::Message { id, role: r, parts, usage, stop_reason: stop, created_at, metadata } = m.message;
    let content = match parts.as_slice() {
        [wit::Part::Media(wit::Media { mime_type, source: wit::MediaSource::Inline(bytes), .. })]
            if mime_type == CONTENT_MIME =>
        {
            bytes.clone()
        }
        _ => {
            let metadata = metadata
                .map(JsonText::parse)
                .transpose()
                .map_err(|_| Error::Storage(format!("stored metadata of message seq {seq} is not valid JSON")))?;
            let content = MessageContent {
                parts: parts.into_iter().map(part_back).collect(),
                usage: usage.map(|u| Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    cached_tokens: u.cached_tokens,
                    cost: u.cost,
                }),
                stop_reason: stop.map(stop_reason_back),
                metadata,
                extra: None,
            };
            codec::encode(&content).map_err(|e| internal("message content", e))?
        }
    };
    Ok(RawStored {
        seq,
        message: crate::adapter::raw::RawMessage { id, role: role_back(r), created_at, content, tag: Vec::new() },
    })
}

pub fn meta(m: &RawMeta) -> Result<wit::ConversationMeta, Error> {
    let meta: ConversationMeta = codec::decode(&m.content).map_err(|e| internal("conversation meta", e))?;
    if meta.extra.is_some() {
        return Err(Error::Unsupported("conversation-level provider fields need an adapter built for 0.2.0".into()));
    }
    Ok(wit::ConversationMeta {
        agent_id: meta.agent_id,
        title: meta.title,
        metadata: meta.metadata.map(JsonText::into_string),
    })
}

pub fn info_back(i: wit::ConversationInfo) -> Result<RawInfo, Error> {
    let metadata = i
        .meta
        .metadata
        .map(JsonText::parse)
        .transpose()
        .map_err(|_| Error::Storage("stored conversation metadata is not valid JSON".into()))?;
    let meta = ConversationMeta { agent_id: i.meta.agent_id, title: i.meta.title, metadata, extra: None };
    Ok(RawInfo {
        id: i.id,
        scope: scope_back(i.scope),
        meta: RawMeta {
            content: codec::encode_meta(&meta).map_err(|e| internal("conversation meta", e))?,
            tag: vec![],
        },
        created_at: i.created_at,
        updated_at: i.updated_at,
        message_count: i.message_count,
        last_seq: i.last_seq,
        version: i.version,
    })
}

pub fn range(r: Range) -> cs::MessageRange {
    match r {
        Range::Latest => cs::MessageRange::Latest,
        Range::After(seq) => cs::MessageRange::After(seq),
        Range::Before(seq) => cs::MessageRange::Before(seq),
    }
}

/// A 0.1.0 adapter numbers its own messages and stores the new part of a batch.
pub fn append_back(o: cs::AppendOutcome) -> AppendReply {
    if o.stored == 0 {
        let seqs = o.seqs.into_iter().enumerate().map(|(i, seq)| (u32::try_from(i).unwrap_or(u32::MAX), seq)).collect();
        AppendReply::AlreadyStored { seqs, version: o.version }
    } else {
        AppendReply::Stored { version: o.version, seqs: o.seqs, stored: o.stored }
    }
}

pub fn display(r: &RawDisplay) -> Result<ds::DisplayRecord, Error> {
    let body: DisplayBody = codec::decode(&r.body).map_err(|e| internal("display record", e))?;
    Ok(ds::DisplayRecord {
        message_id: r.message_id.clone(),
        message_type: r.message_type.clone(),
        content_type: r.content_type.clone(),
        tool_call_id: r.tool_call_id.clone(),
        status: r.status.clone(),
        content: body.content.into_string(),
        metadata: body.metadata.map(JsonText::into_string),
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

pub fn display_back(r: ds::StoredDisplayRecord) -> Result<RawStoredDisplay, Error> {
    let seq = r.seq;
    let d = r.record;
    let bad = |what: &str| Error::Storage(format!("display record {seq} has {what} that is not JSON"));
    let body = DisplayBody {
        content: JsonText::parse(d.content).map_err(|_| bad("content"))?,
        metadata: d.metadata.map(JsonText::parse).transpose().map_err(|_| bad("metadata"))?,
    };
    Ok(RawStoredDisplay {
        seq,
        record: RawDisplay {
            message_id: d.message_id,
            message_type: d.message_type,
            content_type: d.content_type,
            tool_call_id: d.tool_call_id,
            status: d.status,
            body: codec::encode(&body).map_err(|e| internal("display record", e))?,
            created_at: d.created_at,
            updated_at: d.updated_at,
            tag: Vec::new(),
        },
    })
}

pub fn located_back(l: ds::LocatedDisplayRecord) -> Result<RawLocated, Error> {
    Ok(RawLocated { scope: scope_back(l.scope), conversation_id: l.conversation_id, stored: display_back(l.stored)? })
}

/// The adapter's contract error, as the public error.
pub fn error(e: wit::Error) -> Error {
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

//! Conversions between the boundary records and the 0.2.0 WIT types (field moves:
//! 0.2.0 carries the host's bytes as they are).

use crate::adapter::raw::{
    AppendReply, DisplayPosition, InsertReply, Range, RawDisplay, RawInfo, RawLocated, RawMessage, RawMeta, RawStored,
    RawStoredDisplay, TruncateReply,
};
use crate::error::Error;
use crate::model::{Role, Scope};
use crate::wit::v0_2::{conversation_store as cs, display_store as ds, types as wit};

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

pub fn stored(m: RawStored) -> wit::StoredMessage {
    let RawMessage { id, role: r, created_at, content, tag } = m.message;
    wit::StoredMessage { seq: m.seq, message: wit::Message { id, role: role(r), created_at, content, tag } }
}

pub fn stored_back(m: wit::StoredMessage) -> RawStored {
    let wit::Message { id, role: r, created_at, content, tag } = m.message;
    RawStored { seq: m.seq, message: RawMessage { id, role: role_back(r), created_at, content, tag } }
}

pub fn meta(m: RawMeta) -> wit::ConversationMeta {
    wit::ConversationMeta { content: m.content, tag: m.tag }
}

pub fn info_back(i: wit::ConversationInfo) -> RawInfo {
    RawInfo {
        id: i.id,
        scope: scope_back(i.scope),
        meta: RawMeta { content: i.meta.content, tag: i.meta.tag },
        created_at: i.created_at,
        updated_at: i.updated_at,
        message_count: i.message_count,
        last_seq: i.last_seq,
        version: i.version,
    }
}

pub fn range(r: Range) -> cs::MessageRange {
    match r {
        Range::Latest => cs::MessageRange::Latest,
        Range::After(seq) => cs::MessageRange::After(seq),
        Range::Before(seq) => cs::MessageRange::Before(seq),
    }
}

/// `first..` are the seqs the host gave the batch.
pub fn append_back(o: cs::AppendOutcome, seqs: Vec<u64>) -> AppendReply {
    match o {
        cs::AppendOutcome::Stored(version) => {
            let stored = u32::try_from(seqs.len()).unwrap_or(u32::MAX);
            AppendReply::Stored { version, seqs, stored }
        }
        cs::AppendOutcome::AlreadyStored(a) => AppendReply::AlreadyStored {
            seqs: a.seqs.into_iter().map(|s| (s.index, s.seq)).collect(),
            version: a.version,
        },
        cs::AppendOutcome::OutOfSequence(last_seq) => AppendReply::OutOfSequence { last_seq },
    }
}

pub fn truncate_back(o: cs::TruncateOutcome) -> TruncateReply {
    TruncateReply { removed: o.removed, version: o.version }
}

pub fn display(r: RawStoredDisplay) -> ds::StoredDisplayRecord {
    let d = r.record;
    ds::StoredDisplayRecord {
        seq: r.seq,
        record: ds::DisplayRecord {
            message_id: d.message_id,
            message_type: d.message_type,
            content_type: d.content_type,
            tool_call_id: d.tool_call_id,
            status: d.status,
            body: d.body,
            created_at: d.created_at,
            updated_at: d.updated_at,
            tag: d.tag,
        },
    }
}

pub fn display_back(r: ds::StoredDisplayRecord) -> RawStoredDisplay {
    let d = r.record;
    RawStoredDisplay {
        seq: r.seq,
        record: RawDisplay {
            message_id: d.message_id,
            message_type: d.message_type,
            content_type: d.content_type,
            tool_call_id: d.tool_call_id,
            status: d.status,
            body: d.body,
            created_at: d.created_at,
            updated_at: d.updated_at,
            tag: d.tag,
        },
    }
}

pub fn located_back(l: ds::LocatedDisplayRecord) -> RawLocated {
    RawLocated { scope: scope_back(l.scope), conversation_id: l.conversation_id, stored: display_back(l.stored) }
}

pub fn position(p: &DisplayPosition) -> ds::DisplayPosition {
    ds::DisplayPosition { scope: scope(&p.scope), conversation_id: p.conversation_id.clone(), seq: p.seq }
}

pub fn insert_back(o: ds::InsertOutcome, seqs: Vec<u64>) -> InsertReply {
    match o {
        ds::InsertOutcome::Stored => InsertReply::Stored { seqs },
        ds::InsertOutcome::OutOfSequence(last_seq) => InsertReply::OutOfSequence { last_seq },
    }
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

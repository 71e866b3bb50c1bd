//! Records as they cross the adapter boundary, whatever the contract version:
//! clear fields plus opaque host bytes (`content`, `body`, `meta`) and tags. The
//! checked client turns them into the public model and back.

use crate::model::{Role, Scope};

/// A message as an adapter stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawMessage {
    pub id: String,
    pub role: Role,
    pub created_at: i64,
    pub content: Vec<u8>,
    pub tag: Vec<u8>,
}

/// A message at its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawStored {
    pub seq: u64,
    pub message: RawMessage,
}

/// A conversation's meta as an adapter stores it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawMeta {
    pub content: Vec<u8>,
    pub tag: Vec<u8>,
}

/// A conversation as an adapter reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawInfo {
    pub id: String,
    pub scope: Scope,
    pub meta: RawMeta,
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: u64,
    pub last_seq: u64,
    pub version: u64,
}

/// Which messages a load asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    Latest,
    After(u64),
    Before(u64),
}

/// What an append did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppendReply {
    /// New messages were stored: `seqs[i]` is message `i`'s seq (the host's
    /// numbering for 0.2.0 adapters; 0.1.0 adapters number themselves, and may
    /// have stored only the new part of a batch, `stored` of them).
    Stored { version: u64, seqs: Vec<u64>, stored: u32 },
    /// Nothing was stored: these messages (index in the batch, seq) already are.
    AlreadyStored { seqs: Vec<(u32, u64)>, version: u64 },
    /// Nothing was stored: the conversation's last seq is not what the host
    /// numbered from.
    OutOfSequence { last_seq: u64 },
}

/// What a truncate did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruncateReply {
    pub removed: u64,
    pub version: u64,
}

/// A display record as an adapter stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawDisplay {
    pub message_id: Option<String>,
    pub message_type: String,
    pub content_type: String,
    pub tool_call_id: Option<String>,
    pub status: Option<String>,
    pub body: Vec<u8>,
    pub created_at: i64,
    pub updated_at: i64,
    pub tag: Vec<u8>,
}

/// A display record at its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawStoredDisplay {
    pub seq: u64,
    pub record: RawDisplay,
}

/// A display record with the conversation it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLocated {
    pub scope: Scope,
    pub conversation_id: String,
    pub stored: RawStoredDisplay,
}

/// A position in the cross-conversation order of `find-by-status`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DisplayPosition {
    pub scope: Scope,
    pub conversation_id: String,
    pub seq: u64,
}

/// What a display insert did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InsertReply {
    /// Stored at these seqs (the host's for 0.2.0 adapters).
    Stored { seqs: Vec<u64> },
    /// Nothing stored: the conversation's last display seq.
    OutOfSequence { last_seq: u64 },
}

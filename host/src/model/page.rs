//! Requests and results of the conversation-store API.

use serde::{Deserialize, Serialize};

use super::conversation::ConversationInfo;
use super::message::Message;

/// Where a page of messages starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadFrom {
    /// The newest messages.
    Latest,
    /// Messages with seq strictly greater than this.
    After(u64),
    /// Messages with seq strictly less than this.
    Before(u64),
    /// Continue where a previous page's `next_cursor` points.
    Cursor(String),
}

/// What a load does with tool calls that have no result anywhere after them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrphanPolicy {
    /// Return the history as stored (no detection).
    #[default]
    Keep,
    /// Remove the orphaned tool-call parts (and assistant messages left empty).
    Strip,
    /// Add a synthesized tool message with an `interrupted` error result for each
    /// orphaned call, right after the assistant turn (and its tool messages).
    SynthesizeInterrupted,
}

/// A tool call without a result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrphanedCall {
    /// Seq of the assistant message holding the call.
    pub seq: u64,
    pub call_id: String,
    pub name: String,
}

/// What a load repaired (nothing is changed in storage: repairs are a view).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairReport {
    pub policy: OrphanPolicy,
    pub orphaned_calls: Vec<OrphanedCall>,
}

/// A request for one page of messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadRequest {
    pub from: LoadFrom,
    pub limit: u32,
    /// What to do with tool calls that never got a result (crash repair).
    pub orphans: OrphanPolicy,
}

impl LoadRequest {
    pub fn new(from: LoadFrom, limit: u32) -> Self {
        Self { from, limit, orphans: OrphanPolicy::Keep }
    }
    pub fn latest(limit: u32) -> Self {
        Self::new(LoadFrom::Latest, limit)
    }
    pub fn after(seq: u64, limit: u32) -> Self {
        Self::new(LoadFrom::After(seq), limit)
    }
    pub fn before(seq: u64, limit: u32) -> Self {
        Self::new(LoadFrom::Before(seq), limit)
    }
    pub fn cursor(cursor: impl Into<String>, limit: u32) -> Self {
        Self::new(LoadFrom::Cursor(cursor.into()), limit)
    }
    /// The same request with an orphan policy.
    pub fn with_orphans(mut self, policy: OrphanPolicy) -> Self {
        self.orphans = policy;
        self
    }
}

/// One page of messages, in ascending seq order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Page {
    pub messages: Vec<Message>,
    /// Continues in the request's direction (older for `Latest`/`Before`, newer for
    /// `After`); `None` when that direction is exhausted.
    pub next_cursor: Option<String>,
    /// What crash repair found and did; `None` with [`OrphanPolicy::Keep`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repairs: Option<RepairReport>,
    /// Seqs of messages returned without an integrity tag (written before tags
    /// existed, or by a 0.1.0 adapter), when the store accepts such records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unverified: Vec<u64>,
}

/// Result of an append.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendOutcome {
    /// Per input message, in order: its id (generated where the caller gave none).
    pub ids: Vec<String>,
    /// Per input message, in order: its seq (the original one for a duplicate id).
    pub seqs: Vec<u64>,
    /// How many messages were newly stored.
    pub stored: u32,
    /// The conversation's version after the append.
    pub version: u64,
}

/// Result of a truncate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncateOutcome {
    pub removed: u64,
    pub version: u64,
}

/// One page of a conversation listing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationPage {
    pub conversations: Vec<ConversationInfo>,
    /// Pass to the next `list` call; `None` when the listing is complete.
    pub next_cursor: Option<String>,
}

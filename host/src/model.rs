//! The record model: what integrators store and load, with a stable JSON form.
//!
//! These types mirror the WIT record model (`wit/types.wit`) one to one; the
//! conversion lives in `adapter::convert`. JSON-valued fields are [`JsonText`], kept
//! as the exact text the caller supplied so a save→load round trip is byte for byte.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::error::Error;
use crate::repair::{OrphanPolicy, RepairReport};

/// Milliseconds since the Unix epoch (UTC). Informational: order by `seq`.
pub type Timestamp = i64;

/// The integrator's scope of a call. A conversation belongs to exactly one scope;
/// another scope's conversation is indistinguishable from a missing one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Scope {
    pub tenant: String,
    #[serde(default)]
    pub user: String,
}

impl Scope {
    pub fn new(tenant: impl Into<String>, user: impl Into<String>) -> Self {
        Self { tenant: tenant.into(), user: user.into() }
    }
}

/// JSON text, validated once and then kept verbatim (key order, spacing, number
/// spelling). Serialises as embedded JSON, not as a string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JsonText(String);

impl JsonText {
    /// Validates `text` as one JSON value.
    pub fn parse(text: impl Into<String>) -> Result<Self, Error> {
        let text = text.into();
        serde_json::from_str::<&RawValue>(&text).map_err(|e| Error::InvalidInput(format!("not valid JSON: {e}")))?;
        Ok(Self(text))
    }

    /// Serialises `value` (compact form).
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self(value.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn to_value(&self) -> Result<serde_json::Value, Error> {
        serde_json::from_str(&self.0).map_err(|e| Error::InvalidInput(format!("not valid JSON: {e}")))
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = RawValue::from_string(self.0.clone()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Ok(Self(raw.get().to_owned()))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The role's name in JSON and in provider formats.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// Where a media part's bytes live.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaSource {
    Url(String),
    Inline(Vec<u8>),
}

/// One ordered piece of a message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall {
        id: String,
        name: String,
        /// JSON text exactly as the model produced it (not validated: models do emit
        /// malformed arguments, and losing them would hide the failure).
        arguments: String,
    },
    ToolResult {
        call_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    Media {
        mime_type: String,
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }

    pub fn thinking(text: impl Into<String>, signature: Option<String>) -> Self {
        Part::Thinking { text: text.into(), signature, redacted: false }
    }

    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Part::ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Part::ToolResult { call_id: call_id.into(), content: content.into(), is_error }
    }
}

/// Token accounting for one message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// Why the model stopped. Serialises as a string; unknown strings are kept as `Other`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    ToolUse,
    StopSequence,
    ContentFilter,
    Error,
    Other(String),
}

impl From<String> for StopReason {
    fn from(value: String) -> Self {
        match value.as_str() {
            "end_turn" => Self::EndTurn,
            "max_tokens" => Self::MaxTokens,
            "tool_use" => Self::ToolUse,
            "stop_sequence" => Self::StopSequence,
            "content_filter" => Self::ContentFilter,
            "error" => Self::Error,
            _ => Self::Other(value),
        }
    }
}

impl From<StopReason> for String {
    fn from(value: StopReason) -> Self {
        match value {
            StopReason::EndTurn => "end_turn".into(),
            StopReason::MaxTokens => "max_tokens".into(),
            StopReason::ToolUse => "tool_use".into(),
            StopReason::StopSequence => "stop_sequence".into(),
            StopReason::ContentFilter => "content_filter".into(),
            StopReason::Error => "error".into(),
            StopReason::Other(other) => other,
        }
    }
}

/// A message to append. `id` is the idempotency key (a UUIDv7 is generated when
/// absent); `created_at` defaults to now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
}

impl NewMessage {
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self { id: None, role, parts, usage: None, stop_reason: None, created_at: None, metadata: None }
    }

    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self::new(role, vec![Part::text(text)])
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    pub fn with_stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    pub fn with_metadata(mut self, metadata: JsonText) -> Self {
        self.metadata = Some(metadata);
        self
    }

    pub fn with_created_at(mut self, created_at: Timestamp) -> Self {
        self.created_at = Some(created_at);
        self
    }
}

/// A stored message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    /// Per conversation, contiguous from 1; the only ordering key.
    pub seq: u64,
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
}

/// What the caller says about a conversation when opening it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
}

/// A conversation without its messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationInfo {
    pub id: String,
    pub scope: Scope,
    #[serde(flatten)]
    pub meta: ConversationMeta,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub message_count: u64,
    /// Seq of the newest message; 0 when empty.
    pub last_seq: u64,
    /// Bumped by every change to the history; the optimistic-concurrency token.
    pub version: u64,
}

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

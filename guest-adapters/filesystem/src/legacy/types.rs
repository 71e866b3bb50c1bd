//! The records of the 0.1.0 adapter, exactly as it serialised them.
//!
//! The 0.1.0 adapter wrote serde JSON of the wit-bindgen types of contract
//! 0.1.0 with `#[derive(Serialize, Deserialize)]` and no attributes: records are
//! objects with snake_case field names, enums and variants are externally
//! tagged (`"User"`, `{"Text":"…"}`, `{"Other":"…"}`), `option` is `null` or the
//! value, `list<u8>` is an array of numbers. These mirrors decode exactly that.

use serde::Deserialize;

#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct Scope {
    pub tenant: String,
    pub user: String,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct Thinking {
    pub text: String,
    pub signature: Option<String>,
    pub redacted: bool,
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

#[derive(Deserialize, Debug, PartialEq)]
pub enum MediaSource {
    Url(String),
    Inline(Vec<u8>),
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct Media {
    pub mime_type: String,
    pub source: MediaSource,
    pub name: Option<String>,
}

#[derive(Deserialize, Debug, PartialEq)]
pub enum Part {
    Text(String),
    Thinking(Thinking),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    Media(Media),
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cost: Option<f64>,
}

#[derive(Deserialize, Debug, PartialEq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    ToolUse,
    StopSequence,
    ContentFilter,
    Error,
    Other(String),
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub parts: Vec<Part>,
    pub usage: Option<Usage>,
    pub stop_reason: Option<StopReason>,
    pub created_at: i64,
    /// JSON text.
    pub metadata: Option<String>,
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct StoredMessage {
    pub seq: u64,
    pub message: Message,
}

/// One frame of a 0.1.0 `messages.log`.
#[derive(Deserialize, Debug, PartialEq)]
pub enum Entry {
    Append { version: u64, at: i64, messages: Vec<StoredMessage> },
    Truncate { version: u64, at: i64, after: u64 },
    Reset { version: u64, at: i64, messages: Vec<StoredMessage> },
}

#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct ConversationMeta {
    pub agent_id: Option<String>,
    pub title: Option<String>,
    /// JSON text.
    pub metadata: Option<String>,
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct DisplayRecord {
    pub message_id: Option<String>,
    pub message_type: String,
    pub content_type: String,
    pub tool_call_id: Option<String>,
    pub status: Option<String>,
    /// JSON text.
    pub content: String,
    /// JSON text.
    pub metadata: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Deserialize, Debug, PartialEq)]
pub struct StoredDisplayRecord {
    pub seq: u64,
    pub record: DisplayRecord,
}

/// One frame of a 0.1.0 `display.log`.
#[derive(Deserialize, Debug, PartialEq)]
pub enum DisplayEntry {
    Insert { scope: Scope, conversation_id: String, records: Vec<StoredDisplayRecord> },
    Update(StoredDisplayRecord),
}

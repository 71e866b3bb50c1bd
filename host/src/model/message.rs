//! Messages and their parts.

use serde::{Deserialize, Serialize};

use super::json::JsonText;

/// Milliseconds since the Unix epoch (UTC). Informational: order by `seq`.
pub type Timestamp = i64;

/// Who produced a message.
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
    /// Every role, in contract order.
    pub const ALL: [Role; 5] = [Role::System, Role::Developer, Role::User, Role::Assistant, Role::Tool];

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
///
/// `extra` carries provider fields Stowage does not model, as a JSON object keyed
/// by transcript format (`{"anthropic": {"cache_control": {...}}}`); that format
/// puts them back in place on export.
///
/// JSON form: an object tagged by `"type"`. Deserialising keeps JSON-valued
/// fields verbatim, which needs `serde_json` (see [`JsonText`] and `part_json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<JsonText>,
    },
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<JsonText>,
    },
    ToolCall {
        id: String,
        name: String,
        /// JSON text exactly as the model produced it (not validated: models do emit
        /// malformed arguments, and losing them would hide the failure).
        arguments: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<JsonText>,
    },
    ToolResult {
        call_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<JsonText>,
    },
    Media {
        mime_type: String,
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<JsonText>,
    },
    /// A block, part or item type Stowage does not model (a server tool call, a web
    /// search result, audio, a type that does not exist yet), kept verbatim and
    /// round-tripped byte for byte by `format`.
    Provider {
        format: String,
        value: JsonText,
        /// Where the value sat in its format (e.g. a content part or a whole item).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<JsonText>,
    },
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into(), extra: None }
    }

    pub fn thinking(text: impl Into<String>, signature: Option<String>) -> Self {
        Part::Thinking { text: text.into(), signature, redacted: false, extra: None }
    }

    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Part::ToolCall { id: id.into(), name: name.into(), arguments: arguments.into(), extra: None }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Part::ToolResult { call_id: call_id.into(), content: content.into(), is_error, extra: None }
    }

    /// An image or other attachment.
    pub fn media(mime_type: impl Into<String>, source: MediaSource, name: Option<String>) -> Self {
        Part::Media { mime_type: mime_type.into(), source, name, extra: None }
    }

    /// The provider fields of this part, if any.
    pub fn extra(&self) -> Option<&JsonText> {
        match self {
            Part::Text { extra, .. }
            | Part::Thinking { extra, .. }
            | Part::ToolCall { extra, .. }
            | Part::ToolResult { extra, .. }
            | Part::Media { extra, .. }
            | Part::Provider { extra, .. } => extra.as_ref(),
        }
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
    /// Message-level provider fields Stowage does not model, keyed by format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<JsonText>,
}

impl NewMessage {
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self { id: None, role, parts, usage: None, stop_reason: None, created_at: None, metadata: None, extra: None }
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
    /// Message-level provider fields Stowage does not model, keyed by format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<JsonText>,
}

impl From<Message> for NewMessage {
    fn from(m: Message) -> Self {
        NewMessage {
            id: Some(m.id),
            role: m.role,
            parts: m.parts,
            usage: m.usage,
            stop_reason: m.stop_reason,
            created_at: Some(m.created_at),
            metadata: m.metadata,
            extra: m.extra,
        }
    }
}

//! Display records and the values the display API takes and emits.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::conversation::Scope;
use super::json::JsonText;
use super::message::Timestamp;

/// The lifecycle status of a tool-call card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Pending,
    Executing,
    Completed,
    Failed,
    Interrupted,
    Cancelled,
}

impl ToolStatus {
    pub const ALL: [ToolStatus; 6] = [
        ToolStatus::Pending,
        ToolStatus::Executing,
        ToolStatus::Completed,
        ToolStatus::Failed,
        ToolStatus::Interrupted,
        ToolStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Pending => "pending",
            ToolStatus::Executing => "executing",
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
            ToolStatus::Interrupted => "interrupted",
            ToolStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }

    /// No transition leaves these (besides resolving an interrupted card).
    pub fn is_terminal(self) -> bool {
        matches!(self, ToolStatus::Completed | ToolStatus::Failed | ToolStatus::Cancelled)
    }
}

impl fmt::Display for ToolStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Content types the host produces from message parts.
pub mod content_type {
    pub const TEXT: &str = "text";
    pub const THINKING: &str = "thinking";
    pub const TOOL_CALL: &str = "tool_call";
    pub const TOOL_RESULT: &str = "tool_result";
    pub const MEDIA: &str = "media";
    /// A provider block Stowage does not model (a server tool call, a search result…).
    pub const PROVIDER: &str = "provider";
}

/// One UI-ready record of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DisplayRecord {
    pub scope: Scope,
    pub conversation_id: String,
    /// Per conversation, contiguous from 1 in the order records were saved.
    pub seq: u64,
    /// The message this record came from; `None` for synthetic records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Who the record speaks for: the message's role, or a synthetic type.
    pub message_type: String,
    /// What it shows: `text`, `thinking`, `tool_call`, `tool_result`, `media`, or a
    /// synthetic content type.
    pub content_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool-call cards only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    pub content: JsonText,
    /// A JSON object; status updates merge into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Which conversation (and agent) a display call is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisplayContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub conversation_id: String,
}

impl DisplayContext {
    pub fn new(agent_id: Option<&str>, conversation_id: impl Into<String>) -> Self {
        Self { agent_id: agent_id.map(str::to_owned), conversation_id: conversation_id.into() }
    }
}

/// What a status update carries, per Sagents: `name`/`display_text` when a tool
/// starts, `result` when it completes, `error` when it fails. Every given field,
/// and every key of `metadata`, is merged into the card's metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Extra keys (a JSON object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
}

impl ToolInfo {
    pub fn new(call_id: impl Into<String>) -> Self {
        Self { call_id: call_id.into(), ..Self::default() }
    }
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    pub fn display_text(mut self, text: impl Into<String>) -> Self {
        self.display_text = Some(text.into());
        self
    }
    pub fn result(mut self, result: impl Into<String>) -> Self {
        self.result = Some(result.into());
        self
    }
    pub fn error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }
}

/// A record the integrator originates (an ask-user answer, a "user cancelled" note).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyntheticMessage {
    pub message_type: String,
    pub content_type: String,
    pub content: JsonText,
    /// A JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
}

/// The result of a status update or a resolve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolUpdate {
    /// The card as it is now.
    pub card: DisplayRecord,
    /// False when the call repeated the current status: nothing changed, no event.
    pub changed: bool,
}

/// One page of a conversation's display records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DisplayPage {
    pub records: Vec<DisplayRecord>,
    /// Pass as `after` to get the next page; `None` at the end.
    pub next_after: Option<u64>,
}

/// What the start-up sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Cards left `pending` or `executing` by a crash, now `interrupted`.
    pub interrupted: u64,
    /// Stale cards that could not be read or updated (each logged); left as they are.
    pub skipped: u64,
}

/// Broadcast to subscribers for every persisted change, exactly once, in order per
/// conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum DisplayEvent {
    DisplayMessageSaved {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        record: DisplayRecord,
    },
    DisplayMessageUpdated {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        record: DisplayRecord,
    },
}

impl DisplayEvent {
    pub fn record(&self) -> &DisplayRecord {
        match self {
            DisplayEvent::DisplayMessageSaved { record, .. } | DisplayEvent::DisplayMessageUpdated { record, .. } => {
                record
            }
        }
    }
}

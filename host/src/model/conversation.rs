//! Scopes and conversations.

use serde::{Deserialize, Serialize};

use super::json::JsonText;
use super::message::Timestamp;

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

/// What the caller says about a conversation when opening it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
    /// Conversation-level provider fields (request parameters such as `model`
    /// or `tools`), keyed by transcript format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<JsonText>,
}

/// A change to a conversation's meta ([`crate::Store::patch_meta`]): per field,
/// `None` keeps what is stored, `Some(None)` clears it and `Some(Some(v))`
/// sets it (JSON-valued fields are replaced whole, not merged).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaPatch {
    pub agent_id: Option<Option<String>>,
    pub title: Option<Option<String>>,
    pub metadata: Option<Option<JsonText>>,
    pub extra: Option<Option<JsonText>>,
}

impl MetaPatch {
    /// `meta` with the patch applied.
    pub fn apply(self, meta: ConversationMeta) -> ConversationMeta {
        ConversationMeta {
            agent_id: self.agent_id.unwrap_or(meta.agent_id),
            title: self.title.unwrap_or(meta.title),
            metadata: self.metadata.unwrap_or(meta.metadata),
            extra: self.extra.unwrap_or(meta.extra),
        }
    }
}

/// A conversation without its messages. JSON form: `meta`'s fields sit beside
/// the others.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "InfoWire", from = "InfoWire")]
pub struct ConversationInfo {
    pub id: String,
    pub scope: Scope,
    pub meta: ConversationMeta,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub message_count: u64,
    /// Seq of the newest message; 0 when empty.
    pub last_seq: u64,
    /// Bumped by every change to the history; the optimistic-concurrency token.
    pub version: u64,
}

/// The flat JSON form of [`ConversationInfo`] (a `flatten` would buffer `meta`
/// and lose the exact text of its JSON fields).
#[derive(Clone, Serialize, Deserialize)]
struct InfoWire {
    id: String,
    scope: Scope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<JsonText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extra: Option<JsonText>,
    created_at: Timestamp,
    updated_at: Timestamp,
    message_count: u64,
    last_seq: u64,
    version: u64,
}

impl From<ConversationInfo> for InfoWire {
    fn from(i: ConversationInfo) -> Self {
        Self {
            id: i.id,
            scope: i.scope,
            agent_id: i.meta.agent_id,
            title: i.meta.title,
            metadata: i.meta.metadata,
            extra: i.meta.extra,
            created_at: i.created_at,
            updated_at: i.updated_at,
            message_count: i.message_count,
            last_seq: i.last_seq,
            version: i.version,
        }
    }
}

impl From<InfoWire> for ConversationInfo {
    fn from(w: InfoWire) -> Self {
        Self {
            id: w.id,
            scope: w.scope,
            meta: ConversationMeta { agent_id: w.agent_id, title: w.title, metadata: w.metadata, extra: w.extra },
            created_at: w.created_at,
            updated_at: w.updated_at,
            message_count: w.message_count,
            last_seq: w.last_seq,
            version: w.version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MediaSource, Part};

    #[test]
    fn json_fields_survive_byte_for_byte_in_parts_and_infos() -> Result<(), serde_json::Error> {
        let part = r#"{"type":"provider","format":"anthropic","value":{"type":"server_tool_use","n":1e400, "z":1.50},"extra":{"a" : 1}}"#;
        let parsed: Part = serde_json::from_str(part)?;
        match &parsed {
            Part::Provider { value, extra, .. } => {
                assert_eq!(value.as_str(), r#"{"type":"server_tool_use","n":1e400, "z":1.50}"#);
                assert_eq!(extra.as_ref().map(JsonText::as_str), Some(r#"{"a" : 1}"#));
            }
            other => panic!("{other:?}"),
        }
        let media: Part =
            serde_json::from_str(r#"{"type":"media","mime_type":"image/png","source":{"inline":[1,2]}}"#)?;
        assert_eq!(media, Part::media("image/png", MediaSource::Inline(vec![1, 2]), None));
        assert!(serde_json::from_str::<Part>(r#"{"type":"robot"}"#).is_err());
        let info = r#"{"id":"c","scope":{"tenant":"t","user":""},"metadata":{"k":  2.50},"created_at":1,"updated_at":2,"message_count":0,"last_seq":0,"version":0}"#;
        let info: ConversationInfo = serde_json::from_str(info)?;
        assert_eq!(info.meta.metadata.as_ref().map(JsonText::as_str), Some(r#"{"k":  2.50}"#));
        assert!(serde_json::to_string(&info)?.contains(r#""metadata":{"k":  2.50}"#));
        Ok(())
    }
}

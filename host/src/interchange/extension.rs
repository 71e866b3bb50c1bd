//! `x_stowage`: what a provider format has no slot for, carried in keep mode.
//!
//! On a line: the conversation id (unless the format has a native slot), agent
//! id, title, metadata and, when the format's own members do not reproduce
//! them, the conversation's extras. On the first native unit of a Stowage
//! message: its id, timestamp and metadata, and every modelled field the units
//! do not reproduce (role, parts, usage, stop reason, extras). A unit carrying
//! `x_stowage` starts a new Stowage message; `"continues": true` marks a unit
//! that belongs to the message before it.
//!
//! JSON values (metadata, extras) are embedded as JSON. Earlier versions wrote
//! metadata as a string holding JSON text; such strings are still read.

use serde::{Deserialize, Deserializer, Serialize};

use super::compare;
use super::fields::{Path, Result};
use super::raw::Node;
use crate::model::{ConversationMeta, JsonText, NewMessage, Part, Role, StopReason, Timestamp, Usage};

/// The member name.
pub const KEY: &str = "x_stowage";

/// Per-message extension.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageExt {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Part>>,
    /// Each part's complete `extra` (`null`: none), when the parts differ only
    /// in their extras (extras of other formats, typically).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extras: Option<Vec<Option<JsonText>>>,
    /// `null`: the message has no usage.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub usage: Option<Option<Usage>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub stop_reason: Option<Option<StopReason>>,
    /// The message's complete `extra` (`null`: none).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub extra: Option<Option<JsonText>>,
    /// This unit belongs to the message before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Conversation-level extension.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineExt {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonText>,
    /// The conversation's complete `extra` (`null`: none).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub extra: Option<Option<JsonText>>,
    /// Anthropic: the extension of the message rendered as `system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<MessageExt>,
}

/// Reads `x_stowage` of an object (absent or null: `None`).
pub fn read<T: for<'de> Deserialize<'de>>(unit: &Node<'_>, path: &Path) -> Result<Option<T>> {
    let Some(value) = unit.as_object().and_then(|o| o.get(KEY)).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let at = path.key(KEY);
    let text = value.to_text();
    let mut deserializer = serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(&mut deserializer).map(Some).map_err(|e| {
        let inner = e.path().to_string();
        let field = if inner == "." { at.clone() } else { at.key(&inner) };
        field.error(e.into_inner().to_string())
    })
}

/// The unit without its `x_stowage`.
pub fn strip<'a>(unit: &Node<'a>) -> Node<'a> {
    match unit {
        Node::Object(object) if object.contains(KEY) => {
            let mut object = object.clone();
            object.remove(KEY);
            object.into_node()
        }
        other => other.clone(),
    }
}

/// Sets `x_stowage` on an object unit.
pub fn attach<'a, T: Serialize>(unit: &mut Node<'a>, ext: &T) {
    if let (Node::Object(object), Ok(text)) = (unit, serde_json::to_string(ext))
        && let Ok(node) = Node::parse(&text)
    {
        object.set(KEY, node.into_owned());
    }
}

/// Metadata as written: embedded JSON, or (earlier versions) a string of JSON.
fn unlegacy(metadata: JsonText) -> JsonText {
    match serde_json::from_str::<String>(metadata.as_str()) {
        Ok(inner) => JsonText::parse(inner).unwrap_or(metadata),
        Err(_) => metadata,
    }
}

/// Whether two optional JSON texts hold the same value.
pub fn same_json(a: Option<&JsonText>, b: Option<&JsonText>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x == y || compare::equivalent_text(x.as_str(), y.as_str()),
        _ => false,
    }
}

/// Parts equal, JSON-valued fields compared as JSON.
pub fn same_parts(a: &[Part], b: &[Part]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| same_part(p, q))
}

fn same_part(a: &Part, b: &Part) -> bool {
    same_json(a.extra(), b.extra()) && same_content(a, b)
}

/// Parts equal but for their extras.
fn same_content(a: &Part, b: &Part) -> bool {
    match (a, b) {
        (Part::Provider { format: f, value: v, .. }, Part::Provider { format: g, value: w, .. }) => {
            f == g && same_json(Some(v), Some(w))
        }
        _ => strip_extra(a) == strip_extra(b),
    }
}

fn strip_extra(part: &Part) -> Part {
    let mut part = part.clone();
    super::parts::set_extra(&mut part, None);
    part
}

impl MessageExt {
    pub fn is_empty(&self) -> bool {
        *self == MessageExt::default()
    }

    /// What turns `parsed` (what the native units alone give) into `message`.
    pub fn between(message: &NewMessage, parsed: Option<&NewMessage>) -> MessageExt {
        let Some(parsed) = parsed else { return MessageExt::full(message) };
        let mut ext = MessageExt {
            id: message.id.clone().filter(|id| Some(id) != parsed.id.as_ref()),
            created_at: message.created_at.filter(|t| Some(*t) != parsed.created_at),
            metadata: None,
            role: (message.role != parsed.role).then_some(message.role),
            parts: None,
            extras: None,
            usage: (message.usage != parsed.usage).then(|| message.usage.clone()),
            stop_reason: (message.stop_reason != parsed.stop_reason).then(|| message.stop_reason.clone()),
            extra: None,
            continues: false,
        };
        if !same_parts(&message.parts, &parsed.parts) {
            let only_extras = message.parts.len() == parsed.parts.len()
                && message.parts.iter().zip(&parsed.parts).all(|(p, q)| same_content(p, q));
            if only_extras {
                ext.extras = Some(message.parts.iter().map(|p| p.extra().cloned()).collect());
            } else {
                ext.parts = Some(message.parts.clone());
            }
        }
        if !same_json(message.metadata.as_ref(), parsed.metadata.as_ref()) {
            ext.metadata = message.metadata.clone();
        }
        if !same_json(message.extra.as_ref(), parsed.extra.as_ref()) {
            ext.extra = Some(message.extra.clone());
        }
        ext
    }

    /// Everything of `message`.
    pub fn full(message: &NewMessage) -> MessageExt {
        MessageExt {
            id: message.id.clone(),
            created_at: message.created_at,
            metadata: message.metadata.clone(),
            role: Some(message.role),
            parts: Some(message.parts.clone()),
            extras: None,
            usage: Some(message.usage.clone()),
            stop_reason: Some(message.stop_reason.clone()),
            extra: Some(message.extra.clone()),
            continues: false,
        }
    }

    /// A message made only of this extension (`role` defaults to user).
    pub fn into_message(self) -> NewMessage {
        let mut message = NewMessage::new(self.role.unwrap_or(Role::User), Vec::new());
        self.apply(&mut message);
        message
    }

    pub fn apply(self, message: &mut NewMessage) {
        if let Some(id) = self.id {
            message.id = Some(id);
        }
        if let Some(created_at) = self.created_at {
            message.created_at = Some(created_at);
        }
        if let Some(metadata) = self.metadata {
            message.metadata = Some(unlegacy(metadata));
        }
        if let Some(role) = self.role {
            message.role = role;
        }
        if let Some(parts) = self.parts {
            message.parts = parts;
        }
        if let Some(extras) = self.extras.filter(|e| e.len() == message.parts.len()) {
            for (part, extra) in message.parts.iter_mut().zip(extras) {
                super::parts::set_extra(part, extra);
            }
        }
        if let Some(usage) = self.usage {
            message.usage = usage;
        }
        if let Some(stop_reason) = self.stop_reason {
            message.stop_reason = stop_reason;
        }
        if let Some(extra) = self.extra {
            message.extra = extra;
        }
    }
}

impl LineExt {
    /// The extension of a conversation whose own members parsed back to
    /// `parsed_extra`; `native_id` when the format carries the id itself.
    pub fn of(
        conversation_id: Option<&str>,
        meta: &ConversationMeta,
        parsed_extra: Option<&JsonText>,
        native_id: bool,
    ) -> LineExt {
        LineExt {
            conversation_id: conversation_id.filter(|_| !native_id).map(str::to_owned),
            agent_id: meta.agent_id.clone(),
            title: meta.title.clone(),
            metadata: meta.metadata.clone(),
            extra: (!same_json(meta.extra.as_ref(), parsed_extra)).then(|| meta.extra.clone()),
            system: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == LineExt::default()
    }

    /// Applies the conversation-level fields to `meta` (and the id).
    pub fn apply(self, id: &mut Option<String>, meta: &mut ConversationMeta) {
        if let Some(conversation_id) = self.conversation_id {
            *id = Some(conversation_id);
        }
        meta.agent_id = self.agent_id.or(meta.agent_id.take());
        meta.title = self.title.or(meta.title.take());
        if let Some(metadata) = self.metadata {
            meta.metadata = Some(unlegacy(metadata));
        }
        if let Some(extra) = self.extra {
            meta.extra = extra;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extension_restores_what_the_units_lost() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let message = NewMessage::new(Role::Developer, vec![Part::thinking("t", None), Part::text("x")])
            .with_id("m1")
            .with_created_at(5)
            .with_metadata(JsonText::parse(r#"{"n": 1.50}"#)?);
        let parsed = NewMessage::new(Role::User, vec![Part::text("x")]);
        let ext = MessageExt::between(&message, Some(&parsed));
        let text = serde_json::to_string(&ext)?;
        let node = Node::parse(&text)?;
        let wrapped = Node::object(vec![(KEY, node)]);
        let back: Option<MessageExt> = read(&wrapped, &Path::root())?;
        let mut rebuilt = parsed.clone();
        back.ok_or("no ext")?.apply(&mut rebuilt);
        assert_eq!(rebuilt, message);
        // Legacy: metadata as a string of JSON.
        let legacy = Node::parse(r#"{"x_stowage":{"metadata":"{\"k\": 1}","continues":true}}"#)?;
        let ext: MessageExt = read(&legacy, &Path::root())?.ok_or("none")?;
        assert!(ext.continues);
        let mut m = NewMessage::text(Role::User, "");
        ext.apply(&mut m);
        assert_eq!(m.metadata.map(JsonText::into_string).as_deref(), Some("{\"k\": 1}"));
        let bad = Node::parse(r#"{"x_stowage":{"idd":"m1"}}"#)?;
        let err = read::<MessageExt>(&bad, &Path::root().key("messages").index(0)).err().ok_or("accepted")?;
        assert!(err.field.starts_with("messages[0].x_stowage"), "{err:?}");
        Ok(())
    }
}

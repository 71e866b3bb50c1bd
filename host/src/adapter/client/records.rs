//! Turning public records into boundary records (encode, seal, tag) and back
//! (verify the tag against the binding asked for, open, decode).

use super::Client;
use crate::adapter::backend::Features;
use crate::adapter::raw::{RawDisplay, RawInfo, RawMessage, RawMeta, RawStored, RawStoredDisplay};
use crate::error::Error;
use crate::integrity::bindings::{self, DisplayFields};
use crate::integrity::codec::{self, DisplayBody, MessageContent};
use crate::integrity::{Binding, Verdict};
use crate::model::{ConversationInfo, ConversationMeta, DisplayRecord, Message, NewMessage, Role, Scope, ToolStatus};

/// A validated message, encoded (and sealed) once, numbered per attempt.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub id: String,
    pub role: Role,
    pub created_at: i64,
    pub content: Vec<u8>,
}

/// What verifying a record found, besides the record.
pub enum Checked<T> {
    Verified(T),
    /// Accepted without a tag (reported to the caller).
    Untagged(T),
}

impl<T> Checked<T> {
    pub fn into_inner(self) -> T {
        match self {
            Checked::Verified(t) | Checked::Untagged(t) => t,
        }
    }

    pub fn untagged(&self) -> bool {
        matches!(self, Checked::Untagged(_))
    }
}

impl<B> Client<B> {
    /// Checks a tag; `Err` is the integrity error naming the record.
    fn verdict(
        &self,
        features: Features,
        tag: &[u8],
        binding: &Binding,
        payload: &[u8],
        conversation: &str,
        record: impl FnOnce() -> String,
    ) -> Result<bool, Error> {
        match self.protector.verify(tag, binding, payload, features.tags) {
            Verdict::Verified => Ok(false),
            Verdict::Untagged => Ok(true),
            Verdict::Refused(reason) => Err(self.integrity(conversation, record(), reason)),
        }
    }

    /// Encodes and seals a message's content (the tag comes with its seq).
    pub fn prepare(
        &self,
        scope: &Scope,
        conversation: &str,
        id: String,
        created_at: i64,
        m: NewMessage,
    ) -> Result<Prepared, Error> {
        let content = MessageContent {
            parts: m.parts,
            usage: m.usage,
            stop_reason: m.stop_reason,
            metadata: m.metadata,
            extra: m.extra,
        };
        let plain = codec::encode(&content).map_err(Error::Internal)?;
        if plain.len() as u64 > self.max_message_bytes {
            return Err(Error::InvalidInput(format!(
                "message \"{}\" is {} bytes encoded; the limit is {}",
                crate::validate::shown(&id),
                plain.len(),
                self.max_message_bytes
            )));
        }
        let sealed = self
            .protector
            .seal(scope, &bindings::message_seal(scope, conversation, &id), plain)
            .map_err(Error::Internal)?;
        Ok(Prepared { id, role: m.role, created_at, content: sealed })
    }

    /// A prepared message at `seq`, tagged.
    pub fn numbered(&self, features: Features, scope: &Scope, conversation: &str, seq: u64, p: &Prepared) -> RawStored {
        let binding = bindings::message(scope, conversation, seq, &p.id, p.role, p.created_at);
        let tag = if features.tags { self.protector.tag(&binding, &p.content) } else { Vec::new() };
        RawStored {
            seq,
            message: RawMessage {
                id: p.id.clone(),
                role: p.role,
                created_at: p.created_at,
                content: p.content.clone(),
                tag,
            },
        }
    }

    /// A stored message, verified at its seq in (scope, conversation), decoded.
    pub fn message_back(
        &self,
        features: Features,
        scope: &Scope,
        conversation: &str,
        m: &RawStored,
    ) -> Result<Checked<Message>, Error> {
        let seq = m.seq;
        let raw = &m.message;
        let record = || format!("message seq {seq}");
        if raw.content.len() as u64 > self.max_message_bytes.saturating_add(64) {
            return Err(self.violation_in(
                conversation,
                format!("load returned message seq {seq} of {} bytes, over the store's limit", raw.content.len()),
            ));
        }
        let binding = bindings::message(scope, conversation, seq, &raw.id, raw.role, raw.created_at);
        let untagged = self.verdict(features, &raw.tag, &binding, &raw.content, conversation, record)?;
        let plain = self
            .protector
            .open(scope, &bindings::message_seal(scope, conversation, &raw.id), &raw.content)
            .map_err(|reason| self.integrity(conversation, record(), reason))?;
        let content: MessageContent = codec::decode(&plain)
            .map_err(|reason| Error::Storage(format!("message seq {seq} of `{conversation}` {reason}")))?;
        let message = Message {
            id: raw.id.clone(),
            seq,
            role: raw.role,
            parts: content.parts,
            usage: content.usage,
            stop_reason: content.stop_reason,
            created_at: raw.created_at,
            metadata: content.metadata,
            extra: content.extra,
        };
        Ok(if untagged { Checked::Untagged(message) } else { Checked::Verified(message) })
    }

    /// A new conversation's meta, encoded, sealed and tagged for `created_at`.
    pub fn meta(
        &self,
        features: Features,
        scope: &Scope,
        conversation: &str,
        meta: &ConversationMeta,
        created_at: i64,
    ) -> Result<RawMeta, Error> {
        let binding = bindings::meta(scope, conversation, created_at);
        let plain = codec::encode_meta(meta).map_err(Error::Internal)?;
        let content = self.protector.seal(scope, &binding, plain).map_err(Error::Internal)?;
        let tag = if features.tags { self.protector.tag(&binding, &content) } else { Vec::new() };
        Ok(RawMeta { content, tag })
    }

    /// A conversation as the adapter reported it, checked to be the one asked for
    /// and verified.
    pub fn info_back(
        &self,
        features: Features,
        scope: &Scope,
        conversation: &str,
        raw: RawInfo,
    ) -> Result<ConversationInfo, Error> {
        super::checks::same_conversation(&raw, scope, conversation).map_err(|v| self.violation_in(conversation, v))?;
        super::checks::counts(&raw).map_err(|v| self.violation_in(conversation, v))?;
        let binding = bindings::meta(scope, conversation, raw.created_at);
        let record = || "conversation info".to_owned();
        let untagged = self.verdict(features, &raw.meta.tag, &binding, &raw.meta.content, conversation, record)?;
        if untagged {
            tracing::warn!(store = %self.store, "conversation info without an integrity tag accepted");
        }
        let plain = self
            .protector
            .open(scope, &binding, &raw.meta.content)
            .map_err(|reason| self.integrity(conversation, record(), reason))?;
        let meta: ConversationMeta =
            codec::decode(&plain).map_err(|reason| Error::Storage(format!("the meta of `{conversation}` {reason}")))?;
        Ok(ConversationInfo {
            id: raw.id,
            scope: raw.scope,
            meta,
            created_at: raw.created_at,
            updated_at: raw.updated_at,
            message_count: raw.message_count,
            last_seq: raw.last_seq,
            version: raw.version,
        })
    }

    /// A display record at `seq`, encoded, sealed and tagged.
    pub fn display(&self, features: Features, record: &DisplayRecord, seq: u64) -> Result<RawStoredDisplay, Error> {
        let (scope, conversation) = (&record.scope, record.conversation_id.as_str());
        let body = DisplayBody { content: record.content.clone(), metadata: record.metadata.clone() };
        let plain = codec::encode(&body).map_err(Error::Internal)?;
        let body =
            self.protector.seal(scope, &bindings::display_seal(scope, conversation), plain).map_err(Error::Internal)?;
        let status = record.status.map(|s| s.as_str().to_owned());
        let fields = DisplayFields {
            seq,
            message_id: record.message_id.as_deref(),
            message_type: &record.message_type,
            content_type: &record.content_type,
            tool_call_id: record.tool_call_id.as_deref(),
            status: status.as_deref(),
            created_at: record.created_at,
            updated_at: record.updated_at,
        };
        let tag = if features.tags {
            self.protector.tag(&bindings::display(scope, conversation, &fields), &body)
        } else {
            Vec::new()
        };
        Ok(RawStoredDisplay {
            seq,
            record: RawDisplay {
                message_id: record.message_id.clone(),
                message_type: record.message_type.clone(),
                content_type: record.content_type.clone(),
                tool_call_id: record.tool_call_id.clone(),
                status,
                body,
                created_at: record.created_at,
                updated_at: record.updated_at,
                tag,
            },
        })
    }

    /// A stored display record of (scope, conversation), verified and decoded.
    pub fn display_back(
        &self,
        features: Features,
        scope: &Scope,
        conversation: &str,
        raw: RawStoredDisplay,
    ) -> Result<DisplayRecord, Error> {
        let seq = raw.seq;
        let r = raw.record;
        let record = || format!("display record {seq}");
        let fields = DisplayFields {
            seq,
            message_id: r.message_id.as_deref(),
            message_type: &r.message_type,
            content_type: &r.content_type,
            tool_call_id: r.tool_call_id.as_deref(),
            status: r.status.as_deref(),
            created_at: r.created_at,
            updated_at: r.updated_at,
        };
        let binding = bindings::display(scope, conversation, &fields);
        if self.verdict(features, &r.tag, &binding, &r.body, conversation, record)? {
            tracing::warn!(store = %self.store, seq, "display record without an integrity tag accepted");
        }
        let status = match r.status {
            None => None,
            Some(s) => Some(ToolStatus::parse(&s).ok_or_else(|| {
                Error::Storage(format!("display record {seq} of `{conversation}` has an unknown status"))
            })?),
        };
        let plain = self
            .protector
            .open(scope, &bindings::display_seal(scope, conversation), &r.body)
            .map_err(|reason| self.integrity(conversation, record(), reason))?;
        let body: DisplayBody = codec::decode(&plain)
            .map_err(|reason| Error::Storage(format!("display record {seq} of `{conversation}` {reason}")))?;
        Ok(DisplayRecord {
            scope: scope.clone(),
            conversation_id: conversation.to_owned(),
            seq,
            message_id: r.message_id,
            message_type: r.message_type,
            content_type: r.content_type,
            tool_call_id: r.tool_call_id,
            status,
            content: body.content,
            metadata: body.metadata,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

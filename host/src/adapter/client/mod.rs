//! The checked adapter client: one typed method per WIT function, over any
//! backend. It encodes, seals and tags what goes to the adapter, and checks every
//! answer — shape ([`checks`]), integrity and binding ([`records`]) — before it is
//! returned. Nothing an adapter says reaches a caller unchecked.

pub mod checks;
mod display;
#[cfg(test)]
mod fake;
mod memo;
mod records;
#[cfg(test)]
mod tests;

use std::borrow::Borrow;
use std::sync::Arc;

use self::memo::Memo;
pub use self::records::Prepared;
use crate::adapter::backend::{ConversationBackend, Features};
use crate::adapter::raw::{AppendReply, Range, RawInfo, RawStored, TruncateReply};
use crate::config::Limits;
use crate::error::Error;
use crate::integrity::Protector;
use crate::model::{ConversationInfo, ConversationMeta, Message, Scope};
use crate::util::parallel;

/// A page of verified messages.
pub struct Loaded {
    pub messages: Vec<Message>,
    /// Seqs of messages accepted without an integrity tag.
    pub unverified: Vec<u64>,
}

pub struct Client<B> {
    backend: B,
    protector: Arc<Protector>,
    store: String,
    max_message_bytes: u64,
    max_response_bytes: u64,
    /// Messages checked before, recognised by their exact stored form.
    memo: Memo,
}

impl<B> Client<B> {
    pub fn new(backend: B, protector: Arc<Protector>, store: String, limits: &Limits) -> Self {
        Self {
            backend,
            protector,
            store,
            max_message_bytes: limits.max_message_bytes,
            max_response_bytes: limits.max_response_bytes,
            memo: Memo::new(limits.verified_cache_bytes),
        }
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn protector(&self) -> &Protector {
        &self.protector
    }

    pub fn protector_arc(&self) -> Arc<Protector> {
        Arc::clone(&self.protector)
    }

    pub fn into_backend(self) -> B {
        self.backend
    }

    pub fn violation(&self, message: impl Into<String>) -> Error {
        Error::ContractViolation { store: self.store.clone(), message: message.into() }
    }

    /// A violation in an answer about one conversation, naming it.
    pub fn violation_in(&self, conversation: &str, message: impl std::fmt::Display) -> Error {
        self.violation(format!("conversation `{conversation}`: {message}"))
    }

    pub fn integrity(&self, conversation: &str, record: String, reason: String) -> Error {
        Error::Integrity { store: self.store.clone(), conversation: conversation.to_owned(), record, reason }
    }

    fn budget(&self, bytes: usize) -> Result<(), Error> {
        if bytes as u64 > self.max_response_bytes {
            return Err(self.violation(format!(
                "an answer of {bytes} bytes exceeds the store's response budget of {}",
                self.max_response_bytes
            )));
        }
        Ok(())
    }
}

impl<B: ConversationBackend> Client<B> {
    pub fn features(&self) -> Features {
        self.backend.features()
    }

    pub async fn open(
        &self,
        scope: &Scope,
        id: &str,
        meta: &ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        let features = self.features();
        let raw_meta = self.meta(features, scope, id, meta, now)?;
        let raw = self.backend.open(scope, id, raw_meta, now).await?;
        self.info_back(features, scope, id, raw)
    }

    pub async fn info(&self, scope: &Scope, id: &str) -> Result<ConversationInfo, Error> {
        let features = self.features();
        let raw = self.backend.info(scope, id).await?;
        self.info_back(features, scope, id, raw)
    }

    /// Replaces the meta of a conversation created at `created_at` (the tag
    /// binds it).
    pub async fn update_meta(
        &self,
        scope: &Scope,
        id: &str,
        meta: &ConversationMeta,
        created_at: i64,
    ) -> Result<(), Error> {
        let raw_meta = self.meta(self.features(), scope, id, meta, created_at)?;
        self.backend.update_meta(scope, id, raw_meta).await
    }

    /// Appends `batch` numbered from `first_seq`; the reply is checked but the
    /// retry protocol is the caller's (`store::history`).
    /// Appends `batch` (prepared messages, or references to them: a round of
    /// an append sends the pending ones without copying them) numbered from
    /// `first_seq`.
    pub async fn append<P: Borrow<Prepared>>(
        &self,
        scope: &Scope,
        id: &str,
        first_seq: u64,
        batch: &[P],
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendReply, Error> {
        let features = self.features();
        let raw =
            batch.iter().zip(first_seq..).map(|(p, seq)| self.numbered(features, scope, id, seq, p.borrow())).collect();
        let reply = self.backend.append(scope, id, raw, expected_version, now).await?;
        checks::append(&reply, batch.len(), first_seq, features.host_seqs).map_err(|v| self.violation_in(id, v))?;
        Ok(match reply {
            // Stored past where this host numbered from: another writer (another
            // host, or another handle on the same data) stored the retry after
            // this host last looked. Renumber past them, as for `out-of-sequence`.
            AppendReply::AlreadyStored { seqs, .. }
                if features.host_seqs && seqs.iter().any(|&(_, seq)| seq >= first_seq) =>
            {
                AppendReply::OutOfSequence { last_seq: seqs.iter().map(|&(_, seq)| seq).max().unwrap_or(first_seq) }
            }
            other => other,
        })
    }

    /// Replaces the history with `batch`, numbered from 1.
    pub async fn replace(
        &self,
        scope: &Scope,
        id: &str,
        batch: &[Prepared],
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        let features = self.features();
        let raw = batch.iter().zip(1..).map(|(p, seq)| self.numbered(features, scope, id, seq, p)).collect();
        let version = self.backend.replace(scope, id, raw, expected_version, now).await?;
        if version == 0 {
            return Err(self.violation_in(id, "replace reported version 0"));
        }
        Ok(version)
    }

    /// At most `limit` messages of `range`, checked and verified.
    pub async fn load(&self, scope: &Scope, id: &str, range: Range, limit: u32) -> Result<Loaded, Error> {
        let features = self.features();
        let found = self.backend.load(scope, id, range, limit).await?;
        self.budget(found.iter().map(|m| m.message.content.len() + m.message.tag.len() + m.message.id.len()).sum())?;
        checks::page(&found, range, limit).map_err(|v| self.violation_in(id, v))?;
        // Records checked before come from the memo; the others are checked (a
        // long page on several cores), in page order so the error reported is
        // the first one's.
        let recalled = self.memo.recall(scope, id, &found);
        let unknown: Vec<&RawStored> = found
            .iter()
            .enumerate()
            .filter(|(i, _)| recalled.get(*i).is_none_or(Option::is_none))
            .map(|(_, m)| m)
            .collect();
        let mut checked = parallel::map(unknown, |stored| self.message_back(features, scope, id, stored)).into_iter();
        let mut recalled = recalled.into_iter();
        let mut loaded = Loaded { messages: Vec::with_capacity(found.len()), unverified: Vec::new() };
        let mut verified = Vec::new();
        for stored in found {
            if let Some(message) = recalled.next().flatten() {
                loaded.messages.push(message);
                continue;
            }
            let Some(checked) = checked.next() else {
                return Err(Error::Internal("a load's records and their checks went out of step".into()));
            };
            let checked = checked?;
            let untagged = checked.untagged();
            let message = checked.into_inner();
            if untagged {
                loaded.unverified.push(message.seq);
            } else if self.memo.enabled() {
                verified.push((stored, message.clone()));
            }
            loaded.messages.push(message);
        }
        self.memo.keep(scope, id, verified);
        if !loaded.unverified.is_empty() {
            tracing::warn!(store = %self.store, count = loaded.unverified.len(), "messages without an integrity tag accepted");
        }
        Ok(loaded)
    }

    pub async fn truncate_after(
        &self,
        scope: &Scope,
        id: &str,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateReply, Error> {
        let reply = self.backend.truncate_after(scope, id, seq, expected_version, now).await?;
        if reply.removed > 0 && reply.version == 0 {
            return Err(self.violation_in(id, "truncate removed messages but reported version 0"));
        }
        Ok(reply)
    }

    pub async fn delete(&self, scope: &Scope, id: &str) -> Result<bool, Error> {
        self.backend.delete(scope, id).await
    }

    /// One page of `scope`'s conversations after `after`, checked and verified.
    pub async fn list(&self, scope: &Scope, after: Option<String>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
        let features = self.features();
        let found: Vec<RawInfo> = self.backend.list(scope, after.clone(), limit).await?;
        self.budget(found.iter().map(|c| c.meta.content.len() + c.meta.tag.len() + c.id.len()).sum())?;
        checks::listing(&found, scope, after.as_deref(), limit).map_err(|v| self.violation(v))?;
        found
            .into_iter()
            .map(|raw| {
                let id = raw.id.clone();
                self.info_back(features, scope, &id, raw)
            })
            .collect()
    }
}

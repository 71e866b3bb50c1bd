//! A store: the async conversation-store API over one adapter.
//!
//! The semantics every backend shares live here, once: validation, id and
//! timestamp assignment, one writer per conversation, paging cursors, and checks
//! that the adapter kept its side of the contract before anything it returned is
//! handed to the caller.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::adapter::bindings::conversation_store::MessageRange;
use crate::adapter::bindings::display_store as wit_display;
use crate::adapter::convert::{self, Outgoing};
use crate::adapter::pool::InstancePool;
use crate::capability::sql::SqlDatabase;
use crate::config::Limits;
use crate::cursor::{self, MessagePosition};
use crate::error::Error;
use crate::locks::ConversationLocks;
use crate::model::{
    AppendOutcome, ConversationInfo, ConversationMeta, ConversationPage, LoadFrom, LoadRequest, Message, NewMessage,
    Page, Scope, TruncateOutcome,
};
use crate::validate;

/// Counters of a store's adapter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    pub calls: u64,
    pub errors: u64,
    pub traps: u64,
    pub timeouts: u64,
    pub memory_limit_hits: u64,
    pub instantiations: u64,
}

/// A handle to one store. Cheap to clone; every clone shares the adapter instances.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    pool: Arc<InstancePool>,
    locks: ConversationLocks,
    sql: Option<Arc<SqlDatabase>>,
}

pub(crate) fn now_millis() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

impl Store {
    pub(crate) fn new(name: String, pool: Arc<InstancePool>, sql: Option<Arc<SqlDatabase>>) -> Self {
        Self { inner: Arc::new(Inner { name, pool, locks: ConversationLocks::default(), sql }) }
    }

    /// The store's name, from its configuration.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// SHA-256 of the adapter component this store runs.
    pub fn adapter_digest(&self) -> &str {
        &self.inner.pool.image().digest
    }

    /// The interfaces the adapter imports.
    pub fn adapter_imports(&self) -> &[String] {
        &self.inner.pool.image().imports
    }

    fn limits(&self) -> &Limits {
        &self.inner.pool.settings().limits
    }

    pub fn stats(&self) -> StoreStats {
        let c = &self.inner.pool.counters;
        StoreStats {
            calls: c.calls.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            traps: c.traps.load(Ordering::Relaxed),
            timeouts: c.timeouts.load(Ordering::Relaxed),
            memory_limit_hits: c.memory_limit_hits.load(Ordering::Relaxed),
            instantiations: c.instantiations.load(Ordering::Relaxed),
        }
    }

    /// Fault injection for tests: the SQL statement after the next `statements`
    /// ones fails once with an I/O error. Errors when the store has no SQL grant.
    #[doc(hidden)]
    pub fn inject_sql_failure_after(&self, statements: u32) -> Result<(), Error> {
        let sql = self.inner.sql.as_ref().ok_or_else(|| Error::Config("the store has no sql grant".into()))?;
        sql.inject_failure_after(statements);
        Ok(())
    }

    fn violation(&self, message: impl Into<String>) -> Error {
        Error::ContractViolation { store: self.inner.name.clone(), message: message.into() }
    }

    fn check_info(&self, info: &ConversationInfo, scope: &Scope, conversation_id: &str) -> Result<(), Error> {
        if &info.scope != scope || info.id != conversation_id {
            return Err(self.violation("returned another conversation than the one asked for"));
        }
        Ok(())
    }

    fn check_key(&self, scope: &Scope, conversation_id: &str) -> Result<(), Error> {
        validate::scope(scope)?;
        validate::conversation_id(conversation_id)
    }

    /// Finds or creates a conversation. Idempotent: an existing conversation is
    /// returned unchanged and `meta` is ignored.
    pub async fn open(
        &self,
        scope: &Scope,
        conversation_id: &str,
        meta: ConversationMeta,
    ) -> Result<ConversationInfo, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let (wit_scope, id, wit_meta, now) =
            (convert::scope(scope), conversation_id.to_owned(), convert::meta(&meta), now_millis());
        let info = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_open(store, &wit_scope, &id, &wit_meta, now)
            })
            .await?
            .map_err(convert::error_back)?;
        let info = convert::info_back(info)?;
        self.check_info(&info, scope, conversation_id)?;
        Ok(info)
    }

    /// The conversation without its messages.
    pub async fn info(&self, scope: &Scope, conversation_id: &str) -> Result<ConversationInfo, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        self.info_locked(scope, conversation_id).await
    }

    async fn info_locked(&self, scope: &Scope, conversation_id: &str) -> Result<ConversationInfo, Error> {
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        let info = self
            .inner
            .pool
            .run(move |adapter, store| adapter.stowage_store_conversation_store().call_info(store, &wit_scope, &id))
            .await?
            .map_err(convert::error_back)?;
        let info = convert::info_back(info)?;
        self.check_info(&info, scope, conversation_id)?;
        Ok(info)
    }

    /// Validates a batch and assigns ids and timestamps.
    fn prepare(
        &self,
        messages: &[NewMessage],
    ) -> Result<(Vec<String>, Vec<crate::adapter::bindings::types::Message>), Error> {
        validate::batch(messages, self.limits())?;
        let now = now_millis();
        let ids: Vec<String> =
            messages.iter().map(|m| m.id.clone().unwrap_or_else(|| uuid::Uuid::now_v7().to_string())).collect();
        let mut seen = HashSet::with_capacity(ids.len());
        for (index, id) in ids.iter().enumerate() {
            if !seen.insert(id.as_str()) {
                return Err(Error::InvalidInput(format!(
                    "message {index}: id \"{}\" appears more than once in the batch",
                    validate::shown(id)
                )));
            }
        }
        let wit = messages
            .iter()
            .zip(&ids)
            .map(|(m, id)| {
                convert::message(&Outgoing {
                    id,
                    created_at: m.created_at.unwrap_or(now),
                    role: m.role,
                    parts: &m.parts,
                    usage: m.usage.as_ref(),
                    stop_reason: m.stop_reason.as_ref(),
                    metadata: m.metadata.as_ref(),
                })
            })
            .collect();
        Ok((ids, wit))
    }

    /// Appends a batch atomically. Messages whose id is already stored keep their
    /// original seq and are not stored again, so retrying an acknowledged append is
    /// safe. With `expected_version`, fails with `Conflict` if another writer changed
    /// the conversation first (unless the whole batch was already stored).
    pub async fn append(
        &self,
        scope: &Scope,
        conversation_id: &str,
        messages: Vec<NewMessage>,
        expected_version: Option<u64>,
    ) -> Result<AppendOutcome, Error> {
        self.check_key(scope, conversation_id)?;
        let (ids, wit) = self.prepare(&messages)?;
        drop(messages);
        let count = wit.len();
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let (wit_scope, id, now) = (convert::scope(scope), conversation_id.to_owned(), now_millis());
        let outcome = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_append(
                    store,
                    &wit_scope,
                    &id,
                    &wit,
                    expected_version,
                    now,
                )
            })
            .await?
            .map_err(convert::error_back)?;
        if outcome.seqs.len() != count || outcome.stored as usize > count {
            return Err(self.violation(format!(
                "append of {count} messages returned {} seqs and {} stored",
                outcome.seqs.len(),
                outcome.stored
            )));
        }
        Ok(AppendOutcome { ids, seqs: outcome.seqs, stored: outcome.stored, version: outcome.version })
    }

    /// Replaces the whole history atomically; messages are renumbered from 1.
    /// Returns the new version.
    pub async fn replace(
        &self,
        scope: &Scope,
        conversation_id: &str,
        messages: Vec<NewMessage>,
        expected_version: Option<u64>,
    ) -> Result<u64, Error> {
        self.check_key(scope, conversation_id)?;
        let (_, wit) = self.prepare(&messages)?;
        drop(messages);
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let (wit_scope, id, now) = (convert::scope(scope), conversation_id.to_owned(), now_millis());
        self.inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_replace(
                    store,
                    &wit_scope,
                    &id,
                    &wit,
                    expected_version,
                    now,
                )
            })
            .await?
            .map_err(convert::error_back)
    }

    /// One page of messages in ascending seq order.
    pub async fn load(&self, scope: &Scope, conversation_id: &str, request: LoadRequest) -> Result<Page, Error> {
        self.check_key(scope, conversation_id)?;
        validate::limit(request.limit, self.limits())?;
        let position = match request.from {
            LoadFrom::Latest => None,
            LoadFrom::After(seq) => Some(MessagePosition::After(seq)),
            LoadFrom::Before(seq) => Some(MessagePosition::Before(seq)),
            LoadFrom::Cursor(ref c) => Some(cursor::decode_message(scope, conversation_id, c)?),
        };
        let limit = request.limit;
        let (range, fetch) = match position {
            None => (MessageRange::Latest, limit),
            Some(MessagePosition::Before(seq)) => (MessageRange::Before(seq), limit),
            // One extra tells whether newer messages remain.
            Some(MessagePosition::After(seq)) => (MessageRange::After(seq), limit.saturating_add(1)),
        };
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        let stored = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_load(store, &wit_scope, &id, range, fetch)
            })
            .await?
            .map_err(convert::error_back)?;
        drop(_guard);

        if stored.len() > fetch as usize {
            return Err(self.violation(format!("load returned {} messages for a limit of {fetch}", stored.len())));
        }
        let mut messages = stored.into_iter().map(convert::stored_message).collect::<Result<Vec<Message>, Error>>()?;
        for pair in messages.windows(2) {
            if pair[1].seq != pair[0].seq + 1 {
                return Err(self.violation(format!("load returned seq {} after seq {}", pair[1].seq, pair[0].seq)));
            }
        }
        let in_range = |m: &Message| match position {
            None => true,
            Some(MessagePosition::Before(seq)) => m.seq < seq,
            Some(MessagePosition::After(seq)) => m.seq > seq,
        };
        if let Some(bad) = messages.iter().find(|m| !in_range(m) || m.seq == 0) {
            return Err(self.violation(format!("load returned seq {} outside the requested range", bad.seq)));
        }
        let next = match position {
            Some(MessagePosition::After(_)) => {
                if messages.len() > limit as usize {
                    messages.truncate(limit as usize);
                    messages.last().map(|m| MessagePosition::After(m.seq))
                } else {
                    None
                }
            }
            // Seqs are contiguous from 1: older messages exist iff the first is not 1.
            _ => messages.first().filter(|m| m.seq > 1).map(|m| MessagePosition::Before(m.seq)),
        };
        Ok(Page { messages, next_cursor: next.map(|p| cursor::encode_message(scope, conversation_id, p)) })
    }

    /// Removes every message after `seq`. Removing nothing is a no-op.
    pub async fn truncate_after(
        &self,
        scope: &Scope,
        conversation_id: &str,
        seq: u64,
        expected_version: Option<u64>,
    ) -> Result<TruncateOutcome, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        self.truncate_locked(scope, conversation_id, seq, expected_version).await
    }

    async fn truncate_locked(
        &self,
        scope: &Scope,
        conversation_id: &str,
        seq: u64,
        expected_version: Option<u64>,
    ) -> Result<TruncateOutcome, Error> {
        let (wit_scope, id, now) = (convert::scope(scope), conversation_id.to_owned(), now_millis());
        let outcome = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_truncate_after(
                    store,
                    &wit_scope,
                    &id,
                    seq,
                    expected_version,
                    now,
                )
            })
            .await?
            .map_err(convert::error_back)?;
        Ok(TruncateOutcome { removed: outcome.removed, version: outcome.version })
    }

    /// Removes and returns the newest message (undo); `None` when empty.
    pub async fn pop_last(&self, scope: &Scope, conversation_id: &str) -> Result<Option<Message>, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let info = self.info_locked(scope, conversation_id).await?;
        if info.last_seq == 0 {
            return Ok(None);
        }
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        let mut last = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_load(store, &wit_scope, &id, MessageRange::Latest, 1)
            })
            .await?
            .map_err(convert::error_back)?;
        let Some(last) = last.pop() else {
            return Ok(None);
        };
        let last = convert::stored_message(last)?;
        self.truncate_locked(scope, conversation_id, last.seq - 1, Some(info.version)).await?;
        Ok(Some(last))
    }

    /// Deletes a conversation with its display records. Idempotent: returns whether
    /// anything existed.
    pub async fn delete(&self, scope: &Scope, conversation_id: &str) -> Result<bool, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        self.inner
            .pool
            .run(move |adapter, store| adapter.stowage_store_conversation_store().call_delete(store, &wit_scope, &id))
            .await?
            .map_err(convert::error_back)
    }

    /// One page of the scope's conversations, ordered by id.
    pub async fn list(&self, scope: &Scope, cursor: Option<&str>, limit: u32) -> Result<ConversationPage, Error> {
        validate::scope(scope)?;
        validate::limit(limit, self.limits())?;
        let after = cursor.map(|c| cursor::decode_list(scope, c)).transpose()?;
        let (wit_scope, wit_after, fetch) = (convert::scope(scope), after.clone(), limit.saturating_add(1));
        let listed = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_list(store, &wit_scope, wit_after.as_deref(), fetch)
            })
            .await?
            .map_err(convert::error_back)?;
        if listed.len() > fetch as usize {
            return Err(self.violation(format!("list returned {} conversations for a limit of {fetch}", listed.len())));
        }
        let mut conversations = listed.into_iter().map(convert::info_back).collect::<Result<Vec<_>, _>>()?;
        // Never pass on another scope's conversation, whatever the adapter says.
        if conversations.iter().any(|c| &c.scope != scope) {
            return Err(self.violation("list returned a conversation of another scope"));
        }
        let mut previous = after.as_deref();
        for c in &conversations {
            if previous.is_some_and(|p| c.id.as_str() <= p) {
                return Err(self.violation("list returned conversations out of order"));
            }
            previous = Some(&c.id);
        }
        let next_cursor = if conversations.len() > limit as usize {
            conversations.truncate(limit as usize);
            conversations.last().map(|c| cursor::encode_list(scope, &c.id))
        } else {
            None
        };
        Ok(ConversationPage { conversations, next_cursor })
    }

    // Display-store primitives, for `Display`. Callers hold the conversation lock.

    pub(crate) async fn lock_conversation(
        &self,
        scope: &Scope,
        conversation_id: &str,
    ) -> tokio::sync::OwnedMutexGuard<()> {
        self.inner.locks.lock(scope, conversation_id).await
    }

    pub(crate) async fn display_insert(
        &self,
        scope: &Scope,
        conversation_id: &str,
        records: Vec<wit_display::DisplayRecord>,
    ) -> Result<Vec<u64>, Error> {
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        self.inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_display_store().call_insert(store, &wit_scope, &id, &records)
            })
            .await?
            .map_err(convert::error_back)
    }

    pub(crate) async fn display_by_tool_call_id(
        &self,
        scope: &Scope,
        conversation_id: &str,
        tool_call_id: &str,
    ) -> Result<Vec<wit_display::StoredDisplayRecord>, Error> {
        let (wit_scope, id, call) = (convert::scope(scope), conversation_id.to_owned(), tool_call_id.to_owned());
        let found = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_display_store().call_by_tool_call_id(store, &wit_scope, &id, &call)
            })
            .await?
            .map_err(convert::error_back)?;
        if found.iter().any(|r| r.record.tool_call_id.as_deref() != Some(tool_call_id)) {
            return Err(self.violation("by-tool-call-id returned a record of another call"));
        }
        Ok(found)
    }

    pub(crate) async fn display_update(
        &self,
        scope: &Scope,
        conversation_id: &str,
        seq: u64,
        record: wit_display::DisplayRecord,
    ) -> Result<(), Error> {
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        self.inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_display_store().call_update(store, &wit_scope, &id, seq, &record)
            })
            .await?
            .map_err(convert::error_back)
    }

    pub(crate) async fn display_list(
        &self,
        scope: &Scope,
        conversation_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<wit_display::StoredDisplayRecord>, Error> {
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        let listed = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_display_store().call_list(store, &wit_scope, &id, after, limit)
            })
            .await?
            .map_err(convert::error_back)?;
        if listed.len() > limit as usize {
            return Err(
                self.violation(format!("display list returned {} records for a limit of {limit}", listed.len()))
            );
        }
        Ok(listed)
    }

    pub(crate) async fn display_find_by_status(
        &self,
        statuses: &[String],
        limit: u32,
    ) -> Result<Vec<wit_display::LocatedDisplayRecord>, Error> {
        let statuses = statuses.to_vec();
        let wanted = statuses.clone();
        let found = self
            .inner
            .pool
            .run(move |adapter, store| {
                adapter.stowage_store_display_store().call_find_by_status(store, &statuses, limit)
            })
            .await?
            .map_err(convert::error_back)?;
        if found.len() > limit as usize
            || found.iter().any(|r| r.stored.record.status.as_ref().is_none_or(|s| !wanted.contains(s)))
        {
            return Err(self.violation("find-by-status returned records that do not match"));
        }
        Ok(found)
    }
}

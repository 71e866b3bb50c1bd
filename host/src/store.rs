//! A store: the async conversation-store API over one adapter.
//!
//! The semantics every backend shares live here, once: validation, id and
//! timestamp assignment, one writer per conversation, paging cursors, and checks
//! that the adapter kept its side of the contract before anything it returned is
//! handed to the caller.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use serde::Serialize;

use crate::adapter::bindings::conversation_store::MessageRange;
use crate::adapter::bindings::display_store as wit_display;
use crate::adapter::convert::{self, Outgoing};
use crate::adapter::pool::{Counters, InstancePool};
use crate::capability::sql::{SqlDatabase, SqlFault};
use crate::config::{AdapterSource, Limits};
use crate::cursor::{self, MessagePosition};
use crate::error::Error;
use crate::locks::ConversationLocks;
use crate::model::{
    AppendOutcome, ConversationInfo, ConversationMeta, ConversationPage, LoadFrom, LoadRequest, Message, NewMessage,
    Page, Part, Scope, TruncateOutcome,
};
use crate::repair::{self, OrphanPolicy, RepairReport};
use crate::runtime::Runtime;
use crate::validate;

/// Counters of a store's adapter, cumulative across swaps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    pub calls: u64,
    pub errors: u64,
    pub traps: u64,
    pub timeouts: u64,
    pub memory_limit_hits: u64,
    pub instantiations: u64,
    pub restarts: u64,
    /// Calls refused while the store was unhealthy.
    pub refused: u64,
    pub swaps: u64,
}

/// How the store's adapter is doing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HealthStatus {
    Healthy,
    /// Recent calls failed (trap, timeout, memory cap); instances are being
    /// replaced with back-off.
    Degraded {
        consecutive_failures: u32,
        last_error: String,
    },
    /// The restart budget is spent: calls are refused for `retry_in_ms`.
    Unhealthy {
        consecutive_failures: u32,
        last_error: String,
        retry_in_ms: u64,
    },
}

/// Health and counters of a store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Health {
    pub status: HealthStatus,
    /// SHA-256 of the adapter serving now.
    pub adapter_digest: String,
    pub stats: StoreStats,
}

/// What a hot swap did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwapReport {
    pub previous_digest: String,
    pub current_digest: String,
}

/// The scope of the swap smoke test: reads only, in a scope no caller uses.
/// Messages per adapter call when scanning (repairs, pair checks).
const SCAN_BATCH: u32 = 500;

const SMOKE_TENANT: &str = "\u{1f6a7}stowage-swap-smoke-test";

/// A handle to one store. Cheap to clone; every clone shares the adapter instances.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    /// The adapter currently serving. A swap replaces it; calls already running
    /// hold their own `Arc` and finish on the old one.
    pool: RwLock<Arc<InstancePool>>,
    locks: ConversationLocks,
    sql: Option<Arc<SqlDatabase>>,
    runtime: Runtime,
    counters: Arc<Counters>,
}

pub(crate) fn now_millis() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

impl Store {
    pub(crate) fn new(
        name: String,
        pool: Arc<InstancePool>,
        sql: Option<Arc<SqlDatabase>>,
        runtime: Runtime,
        counters: Arc<Counters>,
    ) -> Self {
        let inner =
            Inner { name, pool: RwLock::new(pool), locks: ConversationLocks::default(), sql, runtime, counters };
        Self { inner: Arc::new(inner) }
    }

    fn pool(&self) -> Arc<InstancePool> {
        match self.inner.pool.read() {
            Ok(pool) => Arc::clone(&pool),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The store's name, from its configuration.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// SHA-256 of the adapter component this store runs.
    pub fn adapter_digest(&self) -> String {
        self.pool().image().digest.clone()
    }

    /// The interfaces the adapter imports.
    pub fn adapter_imports(&self) -> Vec<String> {
        self.pool().image().imports.clone()
    }

    fn limits(&self) -> Limits {
        self.pool().settings().limits.clone()
    }

    pub fn stats(&self) -> StoreStats {
        let c = &self.inner.counters;
        StoreStats {
            calls: c.calls.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            traps: c.traps.load(Ordering::Relaxed),
            timeouts: c.timeouts.load(Ordering::Relaxed),
            memory_limit_hits: c.memory_limit_hits.load(Ordering::Relaxed),
            instantiations: c.instantiations.load(Ordering::Relaxed),
            restarts: c.restarts.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            swaps: c.swaps.load(Ordering::Relaxed),
        }
    }

    /// Health (from the supervisor) and counters.
    pub fn health(&self) -> Health {
        let pool = self.pool();
        let snapshot = pool.health();
        let last_error = snapshot.last_error.unwrap_or_default();
        let status = match (snapshot.retry_in, snapshot.consecutive_failures) {
            (Some(retry_in), failures) => HealthStatus::Unhealthy {
                consecutive_failures: failures,
                last_error,
                retry_in_ms: u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX),
            },
            (None, 0) => HealthStatus::Healthy,
            (None, failures) => HealthStatus::Degraded { consecutive_failures: failures, last_error },
        };
        Health { status, adapter_digest: pool.image().digest.clone(), stats: self.stats() }
    }

    /// Replaces the store's adapter while it serves. The candidate is loaded,
    /// type-checked against the contract and the store's grants, instantiated and
    /// smoke-tested (read-only calls on the store's data) before it takes a call;
    /// calls already running finish on the old adapter, and per-conversation
    /// ordering holds across the swap. A candidate that fails any check is
    /// rejected with the reason and the old adapter keeps serving.
    pub async fn swap_adapter(&self, source: AdapterSource) -> Result<SwapReport, Error> {
        let old = self.pool();
        let settings = old.settings().clone();
        let reject = |reason: String| Error::SwapRejected { store: self.inner.name.clone(), reason };
        let image = self.inner.runtime.load_image(&source, settings.grants).await.map_err(|e| reject(e.to_string()))?;
        let candidate = Arc::new(InstancePool::new(
            self.inner.runtime.engine().clone(),
            Arc::new(image),
            settings,
            Arc::new(Counters::default()),
        ));
        candidate.warm_up().await.map_err(|e| reject(e.to_string()))?;
        Self::smoke_test(&candidate).await.map_err(reject)?;
        let current_digest = candidate.image().digest.clone();
        let candidate = Arc::new(candidate.adopt_counters(Arc::clone(&self.inner.counters)));
        {
            let mut pool = match self.inner.pool.write() {
                Ok(pool) => pool,
                Err(poisoned) => poisoned.into_inner(),
            };
            *pool = candidate;
        }
        self.inner.counters.swaps.fetch_add(1, Ordering::Relaxed);
        tracing::info!(store = %self.inner.name, previous = %old.image().digest, current = %current_digest, "adapter swapped");
        Ok(SwapReport { previous_digest: old.image().digest.clone(), current_digest })
    }

    /// Read-only calls the candidate must answer within the contract.
    async fn smoke_test(candidate: &Arc<InstancePool>) -> Result<(), String> {
        let scope = crate::adapter::bindings::types::Scope { tenant: SMOKE_TENANT.into(), user: String::new() };
        let (list_scope, info_scope) = (scope.clone(), scope);
        let listed = candidate
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_list(store, &list_scope, None, 1)
            })
            .await
            .map_err(|e| format!("smoke test `list` failed: {e}"))?;
        match listed {
            Ok(found) if found.is_empty() => {}
            Ok(_) => return Err("smoke test `list` returned conversations of an unused scope".into()),
            Err(e) => return Err(format!("smoke test `list` failed: {}", convert::error_back(e))),
        }
        let info = candidate
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_info(store, &info_scope, "smoke")
            })
            .await
            .map_err(|e| format!("smoke test `info` failed: {e}"))?;
        match info {
            Err(crate::adapter::bindings::types::Error::NotFound) => Ok(()),
            Ok(_) => Err("smoke test `info` found a conversation in an unused scope".into()),
            Err(e) => Err(format!("smoke test `info` failed: {}", convert::error_back(e))),
        }
    }

    /// Fault injection for tests: the SQL statement after the next `statements`
    /// ones fails once with an I/O error. Errors when the store has no SQL grant.
    #[doc(hidden)]
    pub fn inject_sql_failure_after(&self, statements: u32) -> Result<(), Error> {
        self.inject_sql_fault(statements, SqlFault::Error)
    }

    /// Fault injection for tests: disarms a fault that has not struck.
    #[doc(hidden)]
    pub fn disarm_sql_fault(&self) {
        if let Some(sql) = &self.inner.sql {
            sql.disarm();
        }
    }

    /// Fault injection for tests: `fault` strikes the SQL statement after the next
    /// `statements` ones, once. Errors when the store has no SQL grant.
    #[doc(hidden)]
    pub fn inject_sql_fault(&self, statements: u32, fault: SqlFault) -> Result<(), Error> {
        let sql = self.inner.sql.as_ref().ok_or_else(|| Error::Config("the store has no sql grant".into()))?;
        sql.inject(statements, fault);
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

    async fn open_now(
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
            .pool()
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_open(store, &wit_scope, &id, &wit_meta, now)
            })
            .await?
            .map_err(convert::error_back)?;
        let info = convert::info_back(info)?;
        self.check_info(&info, scope, conversation_id)?;
        Ok(info)
    }

    async fn info_now(&self, scope: &Scope, conversation_id: &str) -> Result<ConversationInfo, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        self.info_locked(scope, conversation_id).await
    }

    async fn info_locked(&self, scope: &Scope, conversation_id: &str) -> Result<ConversationInfo, Error> {
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        let info = self
            .pool()
            .run(move |adapter, store| adapter.stowage_store_conversation_store().call_info(store, &wit_scope, &id))
            .await?
            .map_err(convert::error_back)?;
        let info = convert::info_back(info)?;
        self.check_info(&info, scope, conversation_id)?;
        Ok(info)
    }

    /// Runs `op` as a task of its own: a caller that stops waiting (a timeout, a
    /// dropped request) cannot cut an operation short between taking its
    /// conversation's lock and finishing its adapter work, so a cancelled call never
    /// overlaps the next one on the same conversation.
    async fn detached<T, Fut>(&self, op: impl FnOnce(Store) -> Fut) -> Result<T, Error>
    where
        Fut: std::future::Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        tokio::spawn(op(self.clone())).await.map_err(|e| Error::Internal(format!("store task failed: {e}")))?
    }

    /// Finds or creates a conversation. Idempotent: an existing conversation is
    /// returned unchanged and `meta` is ignored.
    pub async fn open(
        &self,
        scope: &Scope,
        conversation_id: &str,
        meta: ConversationMeta,
    ) -> Result<ConversationInfo, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.open_now(&scope, &id, meta).await }).await
    }

    /// The conversation without its messages.
    pub async fn info(&self, scope: &Scope, conversation_id: &str) -> Result<ConversationInfo, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.info_now(&scope, &id).await }).await
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
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.append_now(&scope, &id, messages, expected_version).await }).await
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
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.replace_now(&scope, &id, messages, expected_version).await }).await
    }

    /// One page of messages in ascending seq order, with crash repair as requested.
    pub async fn load(&self, scope: &Scope, conversation_id: &str, request: LoadRequest) -> Result<Page, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.load_now(&scope, &id, request).await }).await
    }

    /// Removes every message after `seq`. Removing nothing is a no-op; a cut that
    /// would keep a tool call and drop its result is refused.
    pub async fn truncate_after(
        &self,
        scope: &Scope,
        conversation_id: &str,
        seq: u64,
        expected_version: Option<u64>,
    ) -> Result<TruncateOutcome, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.truncate_after_now(&scope, &id, seq, expected_version).await }).await
    }

    /// Removes and returns the newest message (undo); `None` when empty.
    pub async fn pop_last(&self, scope: &Scope, conversation_id: &str) -> Result<Option<Message>, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.pop_last_now(&scope, &id).await }).await
    }

    /// Deletes a conversation with its display records. Idempotent: returns whether
    /// anything existed.
    pub async fn delete(&self, scope: &Scope, conversation_id: &str) -> Result<bool, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.delete_now(&scope, &id).await }).await
    }

    /// Validates a batch and assigns ids and timestamps.
    fn prepare(
        &self,
        messages: &[NewMessage],
    ) -> Result<(Vec<String>, Vec<crate::adapter::bindings::types::Message>), Error> {
        validate::batch(messages, &self.limits())?;
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

    async fn append_now(
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
            .pool()
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

    async fn replace_now(
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
        self.pool()
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

    async fn load_now(&self, scope: &Scope, conversation_id: &str, request: LoadRequest) -> Result<Page, Error> {
        self.check_key(scope, conversation_id)?;
        validate::limit(request.limit, &self.limits())?;
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
        let mut messages = self.fetch(scope, conversation_id, range, fetch).await?;
        let in_range = |m: &Message| match position {
            None => true,
            Some(MessagePosition::Before(seq)) => m.seq < seq,
            Some(MessagePosition::After(seq)) => m.seq > seq,
        };
        if let Some(bad) = messages.iter().find(|m| !in_range(m)) {
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
        let repairs = if request.orphans == OrphanPolicy::Keep {
            None
        } else {
            // A call's result may lie beyond the page: collect every later result.
            let mut later = HashSet::new();
            if let Some(last) = messages.last() {
                let mut after = last.seq;
                loop {
                    let batch = self.fetch(scope, conversation_id, MessageRange::After(after), SCAN_BATCH).await?;
                    later.extend(repair::result_ids(&batch));
                    match batch.last() {
                        Some(m) if batch.len() == SCAN_BATCH as usize => after = m.seq,
                        _ => break,
                    }
                }
            }
            let orphans = repair::orphaned_calls(&messages, &later);
            messages = repair::apply(request.orphans, messages, &orphans);
            Some(RepairReport { policy: request.orphans, orphaned_calls: orphans })
        };
        drop(_guard);
        Ok(Page { messages, next_cursor: next.map(|p| cursor::encode_message(scope, conversation_id, p)), repairs })
    }

    /// One adapter `load`, checked: at most `limit`, ascending, contiguous, seq ≥ 1.
    /// The caller holds the conversation lock.
    async fn fetch(
        &self,
        scope: &Scope,
        conversation_id: &str,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<Message>, Error> {
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        let stored = self
            .pool()
            .run(move |adapter, store| {
                adapter.stowage_store_conversation_store().call_load(store, &wit_scope, &id, range, limit)
            })
            .await?
            .map_err(convert::error_back)?;
        if stored.len() > limit as usize {
            return Err(self.violation(format!("load returned {} messages for a limit of {limit}", stored.len())));
        }
        let messages = stored.into_iter().map(convert::stored_message).collect::<Result<Vec<Message>, Error>>()?;
        for pair in messages.windows(2) {
            if pair[0].seq.checked_add(1) != Some(pair[1].seq) {
                return Err(self.violation(format!("load returned seq {} after seq {}", pair[1].seq, pair[0].seq)));
            }
        }
        if messages.first().is_some_and(|m| m.seq == 0) {
            return Err(self.violation("load returned seq 0"));
        }
        // Out-of-range answers would also make the host's scans loop forever.
        let in_range = |m: &Message| match range {
            MessageRange::Latest => true,
            MessageRange::After(seq) => m.seq > seq,
            MessageRange::Before(seq) => m.seq < seq,
        };
        if let Some(bad) = messages.iter().find(|m| !in_range(m)) {
            return Err(self.violation(format!("load returned seq {} outside the requested range", bad.seq)));
        }
        Ok(messages)
    }

    /// Refuses a cut after `seq` that would keep a tool call and drop its result.
    async fn check_pairs(&self, scope: &Scope, conversation_id: &str, seq: u64) -> Result<(), Error> {
        // Only ids are kept: the part that would be removed may be large.
        let mut removed_calls: HashSet<String> = HashSet::new();
        let mut removed_results: Vec<(String, u64)> = Vec::new();
        let mut after = seq;
        loop {
            let batch = self.fetch(scope, conversation_id, MessageRange::After(after), SCAN_BATCH).await?;
            for m in &batch {
                for p in &m.parts {
                    match p {
                        Part::ToolCall { id, .. } => {
                            removed_calls.insert(id.clone());
                        }
                        Part::ToolResult { call_id, .. } => removed_results.push((call_id.clone(), m.seq)),
                        _ => {}
                    }
                }
            }
            match batch.last() {
                Some(last) if batch.len() == SCAN_BATCH as usize => after = last.seq,
                _ => break,
            }
        }
        let results: Vec<(&str, u64)> = removed_results
            .iter()
            .filter(|(call, _)| !removed_calls.contains(call))
            .map(|(call, seq)| (call.as_str(), *seq))
            .collect();
        if results.is_empty() {
            return Ok(());
        }
        // Look for those calls among the messages that would be kept, newest first.
        let mut before = seq.saturating_add(1);
        while before > 1 {
            let batch = self.fetch(scope, conversation_id, MessageRange::Before(before), SCAN_BATCH).await?;
            let Some(first) = batch.first() else { break };
            before = first.seq;
            for m in batch.iter().rev() {
                for p in &m.parts {
                    if let Part::ToolCall { id, .. } = p
                        && let Some((_, result_seq)) = results.iter().find(|(call, _)| *call == id)
                    {
                        return Err(Error::InvalidInput(format!(
                            "truncating after seq {seq} would separate tool call \"{}\" (seq {}) from its result (seq {result_seq}); truncate after seq {} or after seq {result_seq}",
                            validate::shown(id),
                            m.seq,
                            m.seq.saturating_sub(1)
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    async fn truncate_after_now(
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
        self.check_pairs(scope, conversation_id, seq).await?;
        let (wit_scope, id, now) = (convert::scope(scope), conversation_id.to_owned(), now_millis());
        let outcome = self
            .pool()
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

    async fn pop_last_now(&self, scope: &Scope, conversation_id: &str) -> Result<Option<Message>, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let info = self.info_locked(scope, conversation_id).await?;
        if info.last_seq == 0 {
            return Ok(None);
        }
        let Some(last) = self.fetch(scope, conversation_id, MessageRange::Latest, 1).await?.pop() else {
            return Ok(None);
        };
        if last.seq != info.last_seq {
            return Err(self.violation(format!("the newest message has seq {}, info says {}", last.seq, info.last_seq)));
        }
        self.truncate_locked(scope, conversation_id, last.seq.saturating_sub(1), Some(info.version)).await?;
        Ok(Some(last))
    }

    async fn delete_now(&self, scope: &Scope, conversation_id: &str) -> Result<bool, Error> {
        self.check_key(scope, conversation_id)?;
        let _guard = self.inner.locks.lock(scope, conversation_id).await;
        let (wit_scope, id) = (convert::scope(scope), conversation_id.to_owned());
        self.pool()
            .run(move |adapter, store| adapter.stowage_store_conversation_store().call_delete(store, &wit_scope, &id))
            .await?
            .map_err(convert::error_back)
    }

    /// One page of the scope's conversations, ordered by id.
    pub async fn list(&self, scope: &Scope, cursor: Option<&str>, limit: u32) -> Result<ConversationPage, Error> {
        validate::scope(scope)?;
        validate::limit(limit, &self.limits())?;
        let after = cursor.map(|c| cursor::decode_list(scope, c)).transpose()?;
        let (wit_scope, wit_after, fetch) = (convert::scope(scope), after.clone(), limit.saturating_add(1));
        let listed = self
            .pool()
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
        self.pool()
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
            .pool()
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
        self.pool()
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
            .pool()
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
            .pool()
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

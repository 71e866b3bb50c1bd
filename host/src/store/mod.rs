//! A store: the async conversation-store API over one adapter.
//!
//! The semantics every backend shares live here, once: validation, id and
//! timestamp assignment, numbering, one writer per conversation, paging cursors
//! and crash repair. Every adapter answer goes through the checked client first.
//!
//! - `history`: prepare, append (with the numbering protocol), replace, load.
//! - `cuts`: tool-pair checks, truncate, pop-last.
//! - `conversations`: open, info, meta changes, delete, list, ownership.
//! - `supervision`: health, stats, hot swap with its smoke test.
//!
//! Every operation runs to its end ([`Store::detached`]): a caller that stops
//! waiting cannot cut an operation short between taking its conversation's lock
//! and finishing its adapter work.

mod conversations;
mod cuts;
#[cfg(feature = "fault-injection")]
mod faults;
mod history;
mod opened;
mod seqs;
mod supervision;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use tokio::sync::OwnedMutexGuard;

pub(crate) use self::opened::Opened;
use self::seqs::SeqCache;
pub use self::supervision::{Health, HealthStatus, StoreStats, SwapReport};
use crate::adapter::client::Client;
use crate::adapter::loader::Loader;
use crate::adapter::wasm::WasmBackend;
use crate::capability::sql::PostgresSettings;
use crate::config::Limits;
use crate::error::Error;
use crate::locks::ConversationLocks;
use crate::model::{
    AppendOutcome, ConversationInfo, ConversationMeta, ConversationPage, LoadRequest, Message, MetaPatch, NewMessage,
    Page, Scope, TruncateOutcome,
};
use crate::util::detach::run_to_completion;

/// A handle to one store. Cheap to clone; every clone shares the adapter instances.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    name: String,
    client: Client<WasmBackend>,
    loader: Arc<Loader>,
    locks: ConversationLocks,
    seqs: SeqCache,
    limits: Limits,
    /// Serialises hot swaps.
    swap: tokio::sync::Mutex<()>,
    /// The database server other hosts may share (`sql.url`).
    shared: Option<SharedDatabase>,
    /// Operations run on the caller's task (`RuntimeConfig::ops_on_caller`).
    on_caller: bool,
    /// Operations under way.
    running: Arc<AtomicUsize>,
}

/// Counts an operation as running until dropped.
struct Running(Arc<AtomicUsize>);

impl Running {
    /// Counts one more; `true` if it is the only one.
    fn start(counter: &Arc<AtomicUsize>) -> (Self, bool) {
        let before = counter.fetch_add(1, Ordering::AcqRel);
        (Self(Arc::clone(counter)), before == 0)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A store's database server, which other hosts may use too.
#[derive(Clone, Debug)]
pub(crate) struct SharedDatabase {
    pub url: String,
    pub settings: PostgresSettings,
}

impl Store {
    pub(crate) fn new(
        name: String,
        client: Client<WasmBackend>,
        loader: Arc<Loader>,
        limits: Limits,
        shared: Option<SharedDatabase>,
        on_caller: bool,
    ) -> Self {
        let inner = Inner {
            name,
            client,
            loader,
            locks: ConversationLocks::default(),
            seqs: SeqCache::default(),
            limits,
            swap: tokio::sync::Mutex::new(()),
            shared,
            on_caller,
            running: Arc::new(AtomicUsize::new(0)),
        };
        Self { inner: Arc::new(inner) }
    }

    /// The store's name, from its configuration.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub(crate) fn client(&self) -> &Client<WasmBackend> {
        &self.inner.client
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The database server this store shares with other hosts, if any.
    pub(crate) fn shared_database(&self) -> Option<SharedDatabase> {
        self.inner.shared.clone()
    }

    pub(crate) fn seqs(&self) -> &SeqCache {
        &self.inner.seqs
    }

    /// The lock of one conversation (display changes take it too).
    pub(crate) async fn lock_conversation(&self, scope: &Scope, conversation_id: &str) -> OwnedMutexGuard<()> {
        self.inner.locks.lock(scope, conversation_id).await
    }

    /// Runs `op` to its end even if the caller stops waiting (a timeout, a
    /// dropped request): as a task of its own, or, with `ops_on_caller` and no
    /// other operation of the store under way, on the caller's task, moved to a
    /// task of its own only when the caller drops it (see
    /// [`crate::util::detach`]). Concurrent operations are spawned: each then
    /// runs on whichever worker is free, not on its caller's.
    async fn detached<T, Fut>(&self, op: impl FnOnce(Store) -> Fut) -> Result<T, Error>
    where
        Fut: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        let (running, alone) = Running::start(&self.inner.running);
        // Boxed where it is made: an append's future is ~5 KiB, and the
        // wrappers below (and the futures holding them) would otherwise copy
        // it whole, eight copies a call (callgrind, BENCHMARKS.md).
        let op = Box::pin(op(self.clone()));
        let op = async move {
            let _running = running;
            op.await
        };
        if self.inner.on_caller && alone {
            return run_to_completion(op).await.map_err(|e| Error::Internal(format!("store task {e}")))?;
        }
        tokio::spawn(op).await.map_err(|e| Error::Internal(format!("store task failed: {e}")))?
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

    /// Replaces the conversation's meta (title, agent id, metadata and extra);
    /// its history, version and `updated_at` stay. Returns the conversation with its new meta.
    /// `NotFound` if it does not exist; `Unsupported` on a 0.1.0 adapter.
    pub async fn update_meta(
        &self,
        scope: &Scope,
        conversation_id: &str,
        meta: ConversationMeta,
    ) -> Result<ConversationInfo, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.update_meta_now(&scope, &id, meta).await }).await
    }

    /// Changes some of the conversation's meta ([`MetaPatch`]: fields left
    /// `None` keep their stored value), atomically under the conversation's
    /// lock; like [`Store::update_meta`] otherwise.
    pub async fn patch_meta(
        &self,
        scope: &Scope,
        conversation_id: &str,
        patch: MetaPatch,
    ) -> Result<ConversationInfo, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.patch_meta_now(&scope, &id, patch).await }).await
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
        self.detached(move |s| async move { s.append_now(&scope, &id, messages, expected_version, None).await }).await
    }

    /// Appends a batch, creating the conversation (with `meta`) if it does not
    /// exist yet — what session APIs expect of their first write.
    pub async fn append_creating(
        &self,
        scope: &Scope,
        conversation_id: &str,
        meta: ConversationMeta,
        messages: Vec<NewMessage>,
    ) -> Result<AppendOutcome, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.append_now(&scope, &id, messages, None, Some(meta)).await }).await
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

    /// The whole history, oldest first, read page by page under the conversation's
    /// lock (writers of this conversation wait until it is read).
    pub async fn load_all(&self, scope: &Scope, conversation_id: &str) -> Result<Vec<Message>, Error> {
        let (scope, id) = (scope.clone(), conversation_id.to_owned());
        self.detached(move |s| async move { s.load_all_now(&scope, &id).await }).await
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

    /// One page of the scope's conversations, ordered by id.
    pub async fn list(&self, scope: &Scope, cursor: Option<&str>, limit: u32) -> Result<ConversationPage, Error> {
        let (scope, cursor) = (scope.clone(), cursor.map(str::to_owned));
        self.detached(move |s| async move { s.list_now(&scope, cursor.as_deref(), limit).await }).await
    }

    /// Waits for running calls to finish and releases the adapter's instances.
    /// Later calls fail with `Closed`.
    pub async fn close(&self) {
        self.inner.client.backend().close().await;
    }

    /// A handle that does not keep the store open ([`Opened`]'s).
    fn downgrade(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// The store behind `weak`, if some handle still keeps it.
    fn upgrade(weak: &Weak<Inner>) -> Option<Self> {
        weak.upgrade().map(|inner| Self { inner })
    }
}

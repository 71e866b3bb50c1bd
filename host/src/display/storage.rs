//! Where display records go: a store's adapter ([`Persistent`]) or nowhere
//! ([`super::ephemeral::Ephemeral`]). `Display` holds one of them as a trait
//! object and never asks which.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::OwnedMutexGuard;

use crate::adapter::raw::{DisplayPosition, InsertReply};
use crate::error::Error;
use crate::model::{DisplayRecord, Scope};
use crate::store::Store;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Rounds of renumbering before an insert gives up (another host keeps writing).
const MAX_ROUNDS: usize = 8;

/// Storage for display records. Callers hold the conversation's lock around
/// every change.
pub trait Storage: Send + Sync {
    /// For messages ("ephemeral" or the store's name).
    fn name(&self) -> String;
    fn persistent(&self) -> bool;
    /// Whether `stale` pages by position (else the sweep widens its window).
    fn paged_sweep(&self) -> bool;
    fn lock(&self, scope: Scope, conversation: String) -> BoxFuture<'_, OwnedMutexGuard<()>>;
    /// Stores `records` after the conversation's last one; returns their seqs.
    fn insert(
        &self,
        scope: Scope,
        conversation: String,
        records: Vec<DisplayRecord>,
    ) -> BoxFuture<'_, Result<Vec<u64>, Error>>;
    fn by_call(
        &self,
        scope: Scope,
        conversation: String,
        call_id: String,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>>;
    fn update(&self, record: DisplayRecord) -> BoxFuture<'_, Result<(), Error>>;
    fn list(
        &self,
        scope: Scope,
        conversation: String,
        after: u64,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>>;
    /// Cards whose status is one of `statuses`, across conversations, after `after`.
    fn stale(
        &self,
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>>;
}

/// Display records kept by a store's adapter.
pub struct Persistent {
    store: Store,
}

impl Persistent {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Inserts with the host's numbering: from the last display seq this host
    /// saw (or 1), renumbering when the adapter says the conversation moved on.
    async fn insert_numbered(
        &self,
        scope: Scope,
        conversation: String,
        records: Vec<DisplayRecord>,
    ) -> Result<Vec<u64>, Error> {
        let seqs = self.store.seqs();
        let mut last = seqs.last_display(&scope, &conversation).unwrap_or(0);
        for _ in 0..MAX_ROUNDS {
            let first = last.saturating_add(1);
            match self.store.client().display_insert(&scope, &conversation, first, &records).await {
                Ok(InsertReply::Stored { seqs: stored }) => {
                    if let Some(newest) = stored.last() {
                        seqs.set_last_display(&scope, &conversation, *newest);
                    }
                    return Ok(stored);
                }
                Ok(InsertReply::OutOfSequence { last_seq }) => last = last_seq,
                Err(e) => {
                    seqs.forget(&scope, &conversation);
                    return Err(e);
                }
            }
        }
        Err(Error::Storage(format!("display records of `{conversation}` kept moving under another writer; retry")))
    }
}

impl Storage for Persistent {
    fn name(&self) -> String {
        self.store.name().to_owned()
    }

    fn persistent(&self) -> bool {
        true
    }

    fn paged_sweep(&self) -> bool {
        self.store.client().features().paged_sweep
    }

    fn lock(&self, scope: Scope, conversation: String) -> BoxFuture<'_, OwnedMutexGuard<()>> {
        Box::pin(async move { self.store.lock_conversation(&scope, &conversation).await })
    }

    fn insert(
        &self,
        scope: Scope,
        conversation: String,
        records: Vec<DisplayRecord>,
    ) -> BoxFuture<'_, Result<Vec<u64>, Error>> {
        Box::pin(self.insert_numbered(scope, conversation, records))
    }

    fn by_call(
        &self,
        scope: Scope,
        conversation: String,
        call_id: String,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>> {
        Box::pin(async move { self.store.client().display_by_call(&scope, &conversation, &call_id).await })
    }

    fn update(&self, record: DisplayRecord) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move { self.store.client().display_update(&record).await })
    }

    fn list(
        &self,
        scope: Scope,
        conversation: String,
        after: u64,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>> {
        Box::pin(async move { self.store.client().display_list(&scope, &conversation, after, limit).await })
    }

    fn stale(
        &self,
        statuses: Vec<String>,
        after: Option<DisplayPosition>,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<DisplayRecord>, Error>> {
        Box::pin(async move { self.store.client().display_stale(&statuses, after, limit).await })
    }
}

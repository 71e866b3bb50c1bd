//! Display events across hosts: every host that shares a store's database sees
//! every display change, its own and the others', exactly once and in one order.
//!
//! A [`Relay`] is the seam (the PostgreSQL one is [`postgres::PgRelay`]; a test
//! fake lives beside the unit tests). A change runs inside a [`Lease`]: taking it
//! serializes changes of the conversation across hosts; committing it records the
//! change's events in a journal, in the same transaction that releases the lock.
//! Each host reads the journal in order with a cursor and feeds what it reads to
//! its local subscribers, so local and remote events come out in the same order
//! on every host. Journal entries are authenticated (and sealed when the store
//! seals) by [`entry`], so whoever else can write the journal's table cannot
//! inject, alter or replay an event.

pub mod entry;
pub mod postgres;

use crate::display::storage::BoxFuture;
use crate::error::Error;
use crate::model::{DisplayEvent, Scope};

/// Carries display events between the hosts that share a store.
pub trait Relay: Send + Sync {
    /// Takes the conversation's cross-host lock for one change; waits at most the
    /// store's busy timeout for another host to finish.
    fn lease(&self, scope: Scope, conversation: String) -> BoxFuture<'_, Result<Box<dyn Lease>, Error>>;
}

/// One change of one conversation, holding its cross-host lock.
pub trait Lease: Send {
    /// Records `events` (possibly none) and releases the lock. On error nothing
    /// was recorded; the caller announces the events locally instead.
    fn commit(self: Box<Self>, events: Vec<DisplayEvent>) -> BoxFuture<'static, Result<(), Error>>;
}

//! A change of one conversation's display records: it holds the conversation's
//! lock (and, with a relay, its cross-host lease) and collects the change's
//! events; [`Change::finish`] announces them and releases the locks.
//!
//! Without a relay the events go straight to the local subscribers. With one,
//! they are journaled when the lease commits and reach every host's subscribers,
//! this host's included, from the journal, in the journal's order. If journaling
//! fails after the change was stored, the events are announced locally (other
//! hosts miss them; the records are stored either way) and a warning is logged.

use tokio::sync::OwnedMutexGuard;

use super::Display;
use super::relay::Lease;
use crate::error::Error;
use crate::model::{DisplayEvent, Scope};

/// An open change; call [`finish`](Self::finish) on every path.
pub(super) struct Change {
    _guard: OwnedMutexGuard<()>,
    lease: Option<Box<dyn Lease>>,
    events: Vec<DisplayEvent>,
}

impl Change {
    /// Queues `event` until the change finishes.
    pub(super) fn emit(&mut self, event: DisplayEvent) {
        self.events.push(event);
    }

    /// Announces the change's events and releases its locks.
    pub(super) async fn finish(self, display: &Display) {
        let Self { _guard, lease, events } = self;
        let Some(lease) = lease else {
            events.into_iter().for_each(|event| display.announce(event));
            return;
        };
        if let Err(error) = lease.commit(events.clone()).await {
            tracing::warn!(%error, events = events.len(), "display events announced on this host only");
            events.into_iter().for_each(|event| display.announce(event));
        }
    }
}

impl Display {
    /// Starts a change of `conversation`: its lock, then its lease.
    pub(super) async fn change(&self, scope: &Scope, conversation: &str) -> Result<Change, Error> {
        let guard = self.storage().lock(scope.clone(), conversation.to_owned()).await;
        let lease = match self.relay() {
            Some(relay) => Some(relay.lease(scope.clone(), conversation.to_owned()).await?),
            None => None,
        };
        Ok(Change { _guard: guard, lease, events: Vec::new() })
    }
}

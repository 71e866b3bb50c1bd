//! Queued calls on a drainer thread, in commit groups.
//!
//! A drainer ([`super::super::backlog`]) keeps one instance from call to call.
//! While more calls wait behind the one it starts, it runs them in one commit
//! group on that instance's SQL session (see
//! `crate::capability::sql::SqlSession::open_group`): their transactions share
//! one SQLite commit and one WAL flush. Each call's answer is held until the
//! group commits, so no caller is acknowledged, or sees another call's write,
//! before it is committed. When the commit needs a flush (`sql_sync = "full"`),
//! one task waits for (or leads) that flush, then answers every call of the
//! group: the drainer wakes that task alone, and each caller is woken once.
//! A group ends when the queue is empty, after [`GROUP_CALLS`] calls, or at the
//! end of a call once its first held answer is [`GROUP_AGE`] old.
//! A call that traps undoes only its own writes: the group before it is
//! committed from the discarded instance's session, which the host owns.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::super::backlog::Drained;
use super::super::supervisor::{Admission, Counters};
use super::{Backlog, Instance, InstancePool, PendingSync};
use crate::error::Error;
use crate::wit::SqlErrorKind;

/// Most calls in one commit group.
pub const GROUP_CALLS: usize = 32;
/// Longest a group holds its first answer back.
pub const GROUP_AGE: Duration = Duration::from_millis(5);

/// Where a queued call's answer goes.
pub type Answer<R> = oneshot::Sender<Result<(R, Result<PendingSync, SqlErrorKind>), Error>>;

/// Sends a held answer once its group's commit is known.
type Deliver = Box<dyn FnOnce(Result<PendingSync, Error>) + Send>;

/// What a drainer keeps between the calls it runs.
#[derive(Default)]
pub struct Drain {
    instance: Option<Instance>,
    /// Answers of the open group's calls, waiting for its commit.
    held: Vec<Deliver>,
    /// When the first of them was held.
    since: Option<Instant>,
}

impl Drained for InstancePool {
    type Drain = Drain;

    fn backlog(&self) -> &Backlog<Self> {
        &self.backlog
    }

    fn settle(&self, drain: &mut Drain) {
        self.end_group(drain);
        if let Some(instance) = drain.instance.take() {
            self.keep(instance);
        }
    }
}

impl InstancePool {
    /// Runs one queued call on the drainer's instance and answers it, at once
    /// or when its group commits.
    pub(super) fn run_queued<R, F>(
        &self,
        drain: &mut Drain,
        call: F,
        admission: Admission,
        restarting: bool,
        counters: &Counters,
        answer: Answer<R>,
    ) where
        R: Send + 'static,
        F: FnOnce(&mut Instance) -> wasmtime::Result<R>,
    {
        if drain.instance.is_none() {
            match self.take_instance(admission, restarting, counters) {
                Ok(instance) => drain.instance = Some(instance),
                Err(error) => {
                    let _ = answer.send(Err(error));
                    return;
                }
            }
        }
        // Group only when calls wait behind this one (a lone call commits alone).
        if self.backlog.queued() > 0
            && let Some(instance) = drain.instance.as_mut()
        {
            instance.store.data_mut().sql.open_group();
        }
        let mut discarded_group = None;
        let done = self.call_in(&mut drain.instance, &mut discarded_group, call, admission, restarting, counters);
        let pending = drain.instance.as_mut().is_some_and(|i| i.store.data_mut().sql.group_pending());
        let deliver = move |commit: Result<PendingSync, Error>| {
            let answered = done.and_then(|(value, own)| commit.map(|group| (value, Ok(group.or(own)))));
            // A caller that gave up no longer listens; the call ran all the same.
            let _ = answer.send(answered);
        };
        if let Some(outcome) = discarded_group {
            // The call ran in the discarded instance's group, if one had begun:
            // it is answered with the group's calls, once the group is flushed.
            if !matches!(outcome, Ok(None)) {
                drain.held.push(Box::new(deliver));
                self.deliver_held(drain, outcome);
                return;
            }
            self.deliver_held(drain, outcome);
        }
        if !pending {
            deliver(Ok(None));
            return;
        }
        drain.held.push(Box::new(deliver));
        let since = *drain.since.get_or_insert_with(Instant::now);
        if drain.held.len() >= GROUP_CALLS || since.elapsed() >= GROUP_AGE {
            self.end_group(drain);
        }
    }

    /// Commits the drainer's open group and answers its calls.
    fn end_group(&self, drain: &mut Drain) {
        let outcome = match drain.instance.as_mut() {
            Some(instance) => instance.store.data_mut().sql.close_group(),
            None => Ok(None),
        };
        self.deliver_held(drain, outcome);
    }

    fn deliver_held(&self, drain: &mut Drain, outcome: Result<PendingSync, SqlErrorKind>) {
        drain.since = None;
        let held = std::mem::take(&mut drain.held);
        if held.is_empty() {
            return;
        }
        let failed = |e: &SqlErrorKind| {
            Error::Storage(format!(
                "committing the group of calls this one ran in failed; none of their writes was stored: {e:?}"
            ))
        };
        match &outcome {
            Ok(_) => {
                tracing::debug!(store = %self.settings.store_name, calls = held.len(), "a commit group committed");
                self.counters().grouped.fetch_add(held.len() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                tracing::warn!(store = %self.settings.store_name, error = ?e, calls = held.len(), "a commit group failed");
            }
        }
        match (outcome, tokio::runtime::Handle::try_current()) {
            // Answered from a task once the group's flush is done: the drainer
            // wakes one task, not every caller (each wake-up from this thread could
            // let the woken worker take its core), and each caller is woken once,
            // with a commit already durable, instead of twice.
            (Ok(Some((db, ticket))), Ok(runtime)) => {
                runtime.spawn(async move {
                    let commit = match db.durability().durable(ticket, false).await {
                        Ok(()) => None,
                        // Each caller then tries the flush again itself.
                        Err(_) => Some((db, ticket)),
                    };
                    for deliver in held {
                        deliver(Ok(commit.clone()));
                    }
                });
            }
            (outcome, _) => {
                for deliver in held {
                    deliver(outcome.clone().map_err(|e| failed(&e)));
                }
            }
        }
    }
}

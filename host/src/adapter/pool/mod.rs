//! Instances of one adapter image, and running calls on them.
//!
//! Each instance lives in its own wasmtime `Store` and serves one call at a time;
//! a pool keeps up to `limits.instances` of them so distinct conversations are
//! served in parallel. A call runs inside `block_in_place` on the caller's
//! thread when an instance is free and calls may run inline
//! (`RuntimeConfig::inline_calls`, multi-thread runtime); otherwise it queues on
//! the pool's [`Backlog`] and runs on a drainer, a blocking thread (`drain`):
//! adapter code and the SQL it issues never block an async worker. A call that traps, times
//! out or exceeds the memory cap discards its instance — its memory, and any
//! transaction it held open, die with it — and the next call gets a fresh one
//! (`call`).

mod call;
mod deferred;
mod drain;
mod heads;
mod instance;
mod plan;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use wasmtime::{Engine, Trap};

pub use self::deferred::deferring;
use self::drain::Drain;
pub use self::heads::{Head, Heads};
pub use self::instance::{Bindings, Instance};
pub use self::plan::{AppendPlan, LoadPlan};
use super::backlog::{Backlog, Job};
use super::loader::AdapterImage;
use super::state::MemoryLimitExceeded;
use super::supervisor::{Admission, Counters, HealthSnapshot, Supervisor};
use crate::capability::Grants;
#[cfg(feature = "fault-injection")]
use crate::capability::filesystem;
use crate::capability::sql::SqlDatabase;
use crate::config::Limits;
use crate::error::Error;
use crate::wit::SqlErrorKind;

/// The SQL database a call wrote to and its write ticket, when the call must
/// wait for that write to be durable before it returns.
type PendingSync = Option<(Arc<SqlDatabase>, u64)>;

/// Everything needed to create instances.
#[derive(Clone)]
pub struct PoolSettings {
    pub store_name: String,
    pub grants: Grants,
    /// Preopened at `/data` when the filesystem capability is granted.
    pub adapter_dir: PathBuf,
    pub limits: Limits,
    pub deadline_ticks: u64,
    /// Run calls on the caller's thread when the runtime allows it.
    pub inline_calls: bool,
    pub sql: Option<Arc<SqlDatabase>>,
    #[cfg(feature = "fault-injection")]
    pub power_loss: Option<filesystem::power_loss::PowerLoss>,
}

/// Whether the current task may run a call on its own thread: only on a
/// multi-thread runtime, through `block_in_place` (which hands the worker's
/// other tasks to another thread for the call's length).
pub(crate) fn can_block_here() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Makes a call's commit durable on this (blocking) thread if no other caller is
/// flushing: `Ok(None)` once durable, `Ok(Some(..))` when it must wait for the
/// flush under way.
fn durable_here(commit: PendingSync) -> Result<PendingSync, SqlErrorKind> {
    let Some((db, ticket)) = commit else { return Ok(None) };
    match db.durability().durable_here(ticket) {
        Some(result) => result.map(|()| None),
        None => Ok(Some((db, ticket))),
    }
}

/// One call waiting for an instance (until it starts); gives its slot back when
/// dropped.
struct WaitingSlot {
    counter: Arc<AtomicU32>,
    /// How many were waiting before this one.
    before: u32,
}

impl WaitingSlot {
    fn take(counter: &Arc<AtomicU32>) -> Self {
        Self { counter: Arc::clone(counter), before: counter.fetch_add(1, Ordering::AcqRel) }
    }
}

impl Drop for WaitingSlot {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Gives a probe admission back if the call never reached the adapter.
struct AdmissionGuard<'a> {
    supervisor: &'a Supervisor,
    admission: Option<Admission>,
}

impl Drop for AdmissionGuard<'_> {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            self.supervisor.abandoned(admission);
        }
    }
}

pub struct InstancePool {
    engine: Engine,
    image: Arc<AdapterImage>,
    settings: PoolSettings,
    idle: Mutex<Vec<Instance>>,
    /// The calls waiting for an instance, and one permit per instance.
    backlog: Backlog<InstancePool>,
    waiting: Arc<AtomicU32>,
    supervisor: Supervisor,
    /// The store's counters (a swap candidate counts into its own until adopted).
    counters: RwLock<Arc<Counters>>,
    closed: AtomicBool,
}

impl InstancePool {
    pub fn new(engine: Engine, image: Arc<AdapterImage>, settings: PoolSettings, counters: Arc<Counters>) -> Self {
        let backlog = Backlog::new(settings.limits.instances as usize);
        let supervisor = Supervisor::new(settings.store_name.clone(), &settings.limits);
        Self {
            engine,
            image,
            settings,
            idle: Mutex::new(Vec::new()),
            backlog,
            waiting: Arc::new(AtomicU32::new(0)),
            supervisor,
            counters: RwLock::new(counters),
            closed: AtomicBool::new(false),
        }
    }

    pub fn health(&self) -> HealthSnapshot {
        self.supervisor.health()
    }

    fn counters(&self) -> Arc<Counters> {
        match self.counters.read() {
            Ok(counters) => Arc::clone(&counters),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Counts into `counters` from now on, after adding what was counted so far
    /// (a swap candidate joining the store). The pool keeps its warm instances.
    pub fn adopt_counters(&self, counters: Arc<Counters>) {
        let mut slot = match self.counters.write() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        };
        counters.absorb(&slot);
        *slot = counters;
    }

    /// Turns a wasmtime failure into the public error, counting it.
    fn classify(&self, err: wasmtime::Error, during: &str, counters: &Counters) -> Error {
        let store = self.settings.store_name.clone();
        if let Some(limit) = err.downcast_ref::<MemoryLimitExceeded>() {
            counters.memory_limit_hits.fetch_add(1, Ordering::Relaxed);
            return Error::MemoryLimit { store, limit: limit.limit };
        }
        if let Some(Trap::Interrupt) = err.downcast_ref::<Trap>() {
            counters.timeouts.fetch_add(1, Ordering::Relaxed);
            return Error::Timeout { store, deadline: self.settings.limits.call_timeout };
        }
        counters.traps.fetch_add(1, Ordering::Relaxed);
        Error::Trap { store, message: format!("{during}: {err:#}") }
    }

    /// Runs `call` on an instance. Contract errors are the call's own business
    /// and keep the instance; traps, timeouts and memory-cap hits discard it.
    pub async fn run<R, F>(self: &Arc<Self>, call: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Instance) -> wasmtime::Result<R> + Send + 'static,
    {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed { store: self.settings.store_name.clone() });
        }
        let max_waiting = self.settings.limits.max_waiting_calls;
        let waiting = WaitingSlot::take(&self.waiting);
        if waiting.before >= max_waiting {
            return Err(Error::Overloaded {
                store: self.settings.store_name.clone(),
                message: format!("{max_waiting} calls are already waiting for an adapter instance"),
            });
        }
        let counters = self.counters();
        let mut admission =
            AdmissionGuard { supervisor: &self.supervisor, admission: Some(self.supervisor.admit(&counters)?) };
        // A replacement instance waits out the back-off here, holding no permit
        // and blocking no thread.
        let idle_available = self.idle.lock().map(|idle| !idle.is_empty()).unwrap_or(false);
        let restarting = match self.supervisor.backoff() {
            Some(delay) if !idle_available => {
                tokio::time::sleep(delay).await;
                true
            }
            _ => false,
        };
        let inline = self.settings.inline_calls && can_block_here();
        let defer = deferred::deferring_here();
        // With an instance free and no call queued: the call on this thread,
        // then (with the instance and its permit already given back) the flush
        // its commit needs, led here when no other caller is flushing: one hop
        // off the async worker, not two. Otherwise the call queues.
        let free = if inline { self.backlog.run_now() } else { None };
        let (result, inline) = match free {
            Some(permit) => {
                drop(waiting);
                counters.calls.fetch_add(1, Ordering::Relaxed);
                let taken = admission.admission.take().unwrap_or(Admission::Normal);
                let done = tokio::task::block_in_place(|| {
                    let done = self.run_blocking(call, taken, restarting, &counters);
                    self.backlog.release(self, permit);
                    done.map(|(value, commit)| (value, if defer { Ok(commit) } else { durable_here(commit) }))
                });
                (done, true)
            }
            None => (self.queue(call, waiting, &mut admission, restarting, &counters).await, false),
        };
        let (value, commit) = match result {
            Ok(done) => done,
            Err(e) => {
                counters.errors.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        // This call's commit must be durable before it is acknowledged (group
        // commit): wait for the flush another caller leads. Unless the task
        // defers it to a later call (`deferred`).
        let commit = match commit {
            Ok(pending) if deferred::defer(&pending) => Ok(None),
            other => other,
        };
        let flushed = match commit {
            Ok(Some((db, ticket))) => db.durability().durable(ticket, inline).await,
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = flushed {
            counters.errors.fetch_add(1, Ordering::Relaxed);
            return Err(Error::Storage(format!(
                "making the call's commit, or one it read, durable failed (it may or may not survive a power \
                 loss; retrying with the same message ids is safe): {e:?}"
            )));
        }
        Ok(value)
    }

    /// Queues `call` behind the calls waiting for an instance; it runs on a
    /// drainer thread, which leaves the flush its commit needs to a task (a
    /// flush on the drainer would hold up the calls queued behind it): this one,
    /// or, for a commit group, the task that answers the group once it is flushed.
    async fn queue<R, F>(
        self: &Arc<Self>,
        call: F,
        waiting: WaitingSlot,
        admission: &mut AdmissionGuard<'_>,
        restarting: bool,
        counters: &Arc<Counters>,
    ) -> Result<(R, Result<PendingSync, SqlErrorKind>), Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Instance) -> wasmtime::Result<R> + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let taken = admission.admission.take().unwrap_or(Admission::Normal);
        let counters = Arc::clone(counters);
        let job: Job<Self> = Box::new(move |pool: &Self, drain: &mut Drain| {
            drop(waiting);
            counters.calls.fetch_add(1, Ordering::Relaxed);
            pool.run_queued(drain, call, taken, restarting, &counters, answer);
        });
        let closed = || Error::Closed { store: self.settings.store_name.clone() };
        if self.backlog.push(self, job).is_err() {
            // The job (and the admission it took) was dropped unrun.
            self.supervisor.abandoned(taken);
            return Err(closed());
        }
        answered.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Creates one instance and keeps it idle: surfaces instantiation failures (a
    /// start function that traps, say) at load time. On the caller's thread
    /// (`block_in_place` on a multi-threaded runtime's worker): a hop to the
    /// blocking pool and back cost more than the ~0.2 ms of instantiating.
    pub fn warm_up(self: &Arc<Self>) -> Result<(), Error> {
        crate::util::blocking::here(|| {
            let counters = self.counters();
            let instance = self.instantiate(&counters)?;
            if let Ok(mut idle) = self.idle.lock() {
                idle.push(instance);
            }
            Ok(())
        })
    }

    /// Refuses new calls, waits for the running ones and drops every instance.
    ///
    /// A SQLite store's WAL is checkpointed and deleted by the last connection
    /// to close, and only if no other is open. So the host's own background
    /// work (a WAL prefill or a checkpoint, each on a connection of its own
    /// that closes without checkpointing) is waited for *before* the
    /// instances' connections close: closing them first left the WAL behind
    /// (and a prefill that ran on then wrote ahead into a WAL made anew).
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.backlog.close(self.settings.limits.instances).await;
        if let Some(sql) = &self.settings.sql {
            sql.durability().settle().await;
        }
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
        if let Some(sql) = &self.settings.sql {
            sql.close_ahead();
        }
    }
}

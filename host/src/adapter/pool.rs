//! Instances of one store's adapter, and running calls on them.
//!
//! Each instance lives in its own wasmtime `Store` and serves one call at a time;
//! a store keeps up to `limits.instances` of them so distinct conversations are
//! served in parallel. Calls run on tokio's blocking pool (adapter code and the
//! SQL it issues never block an async worker). A call that traps, times out or
//! exceeds the memory cap discards its instance — its memory, and any transaction
//! it held open, die with it — and the next call gets a fresh one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Trap};
use wasmtime_wasi::{FsPerms, WasiCtx};

use super::bindings::SqlAdapter;
use super::image::AdapterImage;
use super::state::{AdapterState, Limiter, MemoryLimitExceeded};
use crate::capability::log::LogSink;
use crate::capability::sql::{SqlDatabase, SqlSession};
use crate::config::{Grants, Limits};
use crate::error::Error;

/// One live adapter instance.
pub struct Instance {
    pub store: wasmtime::Store<AdapterState>,
    pub bindings: SqlAdapter,
}

/// Counters of a store's adapter, readable through [`Store::stats`](crate::Store::stats).
#[derive(Debug, Default)]
pub struct Counters {
    pub calls: AtomicU64,
    pub errors: AtomicU64,
    pub traps: AtomicU64,
    pub timeouts: AtomicU64,
    pub memory_limit_hits: AtomicU64,
    pub instantiations: AtomicU64,
    /// Instances created to replace one lost to a failure.
    pub restarts: AtomicU64,
    /// Calls refused because the adapter was unhealthy.
    pub refused: AtomicU64,
    pub swaps: AtomicU64,
}

/// The adapter's health, as the supervisor sees it.
#[derive(Debug, Default)]
struct Supervision {
    consecutive_failures: u32,
    last_error: Option<String>,
    unhealthy_since: Option<Instant>,
}

/// A snapshot of [`Supervision`].
#[derive(Clone, Debug)]
pub struct HealthSnapshot {
    pub consecutive_failures: u32,
    pub last_error: Option<String>,
    /// Set while unhealthy: how long until calls are tried again.
    pub retry_in: Option<Duration>,
}

/// One call waiting for an instance.
struct WaitingSlot<'a> {
    counter: &'a AtomicU32,
    /// How many were waiting before this one.
    before: u32,
}

impl<'a> WaitingSlot<'a> {
    fn take(counter: &'a AtomicU32) -> Self {
        Self { counter, before: counter.fetch_add(1, Ordering::AcqRel) }
    }
}

impl Drop for WaitingSlot<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Everything needed to create instances.
#[derive(Clone)]
pub struct PoolSettings {
    pub store_name: String,
    pub grants: Grants,
    pub data_dir: PathBuf,
    pub limits: Limits,
    pub deadline_ticks: u64,
    pub sql: Option<Arc<SqlDatabase>>,
}

pub struct InstancePool {
    engine: Engine,
    image: Arc<AdapterImage>,
    settings: PoolSettings,
    idle: Mutex<Vec<Instance>>,
    permits: Arc<Semaphore>,
    waiting: AtomicU32,
    supervision: Mutex<Supervision>,
    /// Shared by every adapter generation of a store (they survive swaps).
    pub counters: Arc<Counters>,
}

impl InstancePool {
    pub fn new(engine: Engine, image: Arc<AdapterImage>, settings: PoolSettings, counters: Arc<Counters>) -> Self {
        let permits = Arc::new(Semaphore::new(settings.limits.instances as usize));
        Self {
            engine,
            image,
            settings,
            idle: Mutex::new(Vec::new()),
            permits,
            waiting: AtomicU32::new(0),
            supervision: Mutex::new(Supervision::default()),
            counters,
        }
    }

    fn supervision(&self) -> std::sync::MutexGuard<'_, Supervision> {
        match self.supervision.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub fn health(&self) -> HealthSnapshot {
        let s = self.supervision();
        let cooldown = Duration::from_millis(self.settings.limits.unhealthy_cooldown_ms);
        HealthSnapshot {
            consecutive_failures: s.consecutive_failures,
            last_error: s.last_error.clone(),
            retry_in: s.unhealthy_since.map(|since| cooldown.saturating_sub(since.elapsed())),
        }
    }

    /// Refuses calls while the adapter is unhealthy; after the cool-down one call
    /// at a time is let through to probe it (a half-open circuit breaker).
    fn admit(&self) -> Result<(), Error> {
        let mut s = self.supervision();
        let Some(since) = s.unhealthy_since else { return Ok(()) };
        if since.elapsed() >= Duration::from_millis(self.settings.limits.unhealthy_cooldown_ms) {
            // Probe: if it fails, the failure re-arms the breaker.
            s.unhealthy_since = Some(Instant::now());
            return Ok(());
        }
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
        Err(Error::Unhealthy {
            store: self.settings.store_name.clone(),
            last_error: s.last_error.clone().unwrap_or_default(),
        })
    }

    fn record_failure(&self, error: &Error) {
        let limits = &self.settings.limits;
        let mut s = self.supervision();
        s.consecutive_failures = s.consecutive_failures.saturating_add(1);
        s.last_error = Some(error.to_string());
        if s.consecutive_failures >= limits.restart_budget && s.unhealthy_since.is_none() {
            tracing::error!(store = %self.settings.store_name, %error, failures = s.consecutive_failures, "adapter unhealthy: restart budget spent");
            s.unhealthy_since = Some(Instant::now());
        }
    }

    fn record_success(&self) {
        let mut s = self.supervision();
        if s.consecutive_failures > 0 || s.unhealthy_since.is_some() {
            *s = Supervision::default();
        }
    }

    /// Back-off before replacing an instance lost to a failure: grows with each
    /// consecutive failure, capped.
    fn restart_backoff(&self) -> Option<Duration> {
        let failures = self.supervision().consecutive_failures;
        if failures == 0 {
            return None;
        }
        let limits = &self.settings.limits;
        let ms = limits.restart_backoff_ms.saturating_mul(u64::from(failures)).min(limits.max_restart_backoff_ms);
        Some(Duration::from_millis(ms))
    }

    /// The same pool, counting into the store's shared counters from now on (a
    /// swap candidate is tested with counters of its own).
    pub fn adopt_counters(self: Arc<Self>, counters: Arc<Counters>) -> Self {
        let pool = Arc::try_unwrap(self).unwrap_or_else(|shared| Self {
            engine: shared.engine.clone(),
            image: Arc::clone(&shared.image),
            settings: shared.settings.clone(),
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(shared.settings.limits.instances as usize)),
            waiting: AtomicU32::new(0),
            supervision: Mutex::new(Supervision::default()),
            counters: Arc::clone(&counters),
        });
        Self { counters, ..pool }
    }

    pub fn image(&self) -> &AdapterImage {
        &self.image
    }

    pub fn settings(&self) -> &PoolSettings {
        &self.settings
    }

    fn instantiate(&self) -> Result<Instance, Error> {
        let settings = &self.settings;
        let fail = |reason: String| {
            Error::Load(crate::error::LoadError::Instantiate { what: self.image.what.clone(), reason })
        };
        let mut wasi = WasiCtx::builder();
        // Calls already run on a blocking thread: let WASI do file I/O in place.
        wasi.allow_blocking_current_thread(true);
        if settings.grants.filesystem {
            wasi.preopened_dir(&settings.data_dir, "/data", FsPerms::ReadWrite)
                .map_err(|e| fail(format!("preopening {}: {e:#}", settings.data_dir.display())))?;
        }
        let state = AdapterState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: Limiter { memory_bytes: settings.limits.memory_bytes, table_elements: 100_000 },
            log: LogSink::new(settings.store_name.clone()),
            sql: settings.sql.clone().map(SqlSession::new),
        };
        let mut store = wasmtime::Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(settings.deadline_ticks);
        store.epoch_deadline_trap();
        let bindings = match self.image.pre.instantiate(&mut store) {
            Ok(bindings) => bindings,
            Err(err) => return Err(self.classify(err, "instantiating")),
        };
        self.counters.instantiations.fetch_add(1, Ordering::Relaxed);
        Ok(Instance { store, bindings })
    }

    /// Turns a wasmtime failure into the public error, counting it.
    fn classify(&self, err: wasmtime::Error, during: &str) -> Error {
        let store = self.settings.store_name.clone();
        if let Some(limit) = err.downcast_ref::<MemoryLimitExceeded>() {
            self.counters.memory_limit_hits.fetch_add(1, Ordering::Relaxed);
            return Error::MemoryLimit { store, limit: limit.limit };
        }
        if let Some(Trap::Interrupt) = err.downcast_ref::<Trap>() {
            self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
            return Error::Timeout { store, deadline: self.settings.limits.call_timeout };
        }
        self.counters.traps.fetch_add(1, Ordering::Relaxed);
        Error::Trap { store, message: format!("{during}: {err:#}") }
    }

    /// Runs `call` on an instance. `Ok(Err(_))` results (contract errors) keep the
    /// instance; traps, timeouts and memory-limit hits discard it.
    pub async fn run<R, F>(self: &Arc<Self>, call: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&SqlAdapter, &mut wasmtime::Store<AdapterState>) -> wasmtime::Result<R> + Send + 'static,
    {
        let max_waiting = self.settings.limits.max_waiting_calls;
        // Counted while waiting; the guard gives the slot back even if the caller
        // stops waiting.
        let waiting = WaitingSlot::take(&self.waiting);
        if waiting.before >= max_waiting {
            return Err(Error::Overloaded {
                store: self.settings.store_name.clone(),
                message: format!("{max_waiting} calls are already waiting for an adapter instance"),
            });
        }
        self.admit()?;
        let permit = self.permits.clone().acquire_owned().await;
        drop(waiting);
        let permit = permit.map_err(|_| Error::Internal("instance pool closed".into()))?;
        self.counters.calls.fetch_add(1, Ordering::Relaxed);

        let pool = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            pool.run_blocking(call)
        })
        .await;
        let result = joined.map_err(|e| Error::Internal(format!("adapter call task failed: {e}")))?;
        if result.is_err() {
            self.counters.errors.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn run_blocking<R, F>(&self, call: F) -> Result<R, Error>
    where
        F: FnOnce(&SqlAdapter, &mut wasmtime::Store<AdapterState>) -> wasmtime::Result<R>,
    {
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let mut instance = match reused {
            Some(instance) => instance,
            None => {
                if let Some(backoff) = self.restart_backoff() {
                    std::thread::sleep(backoff);
                    self.counters.restarts.fetch_add(1, Ordering::Relaxed);
                }
                match self.instantiate() {
                    Ok(instance) => instance,
                    Err(error) => {
                        self.record_failure(&error);
                        return Err(error);
                    }
                }
            }
        };
        instance.store.data_mut().log.reset();
        instance.store.set_epoch_deadline(self.settings.deadline_ticks);
        match call(&instance.bindings, &mut instance.store) {
            Ok(value) => {
                let mut reusable = true;
                if let Some(sql) = instance.store.data_mut().sql.as_mut() {
                    match sql.reset() {
                        Ok(false) => {}
                        Ok(true) => {
                            tracing::warn!(store = %self.settings.store_name, "adapter returned with a SQL transaction open; rolled back")
                        }
                        // It may still hold the write lock: never reuse it.
                        Err(e) => {
                            tracing::warn!(store = %self.settings.store_name, error = ?e, "rolling back an abandoned transaction failed; discarding the instance");
                            reusable = false;
                        }
                    }
                }
                if reusable && let Ok(mut idle) = self.idle.lock() {
                    idle.push(instance);
                }
                self.record_success();
                Ok(value)
            }
            Err(err) => {
                let error = self.classify(err, "during the call");
                tracing::warn!(store = %self.settings.store_name, %error, "discarding adapter instance");
                drop(instance);
                self.record_failure(&error);
                Err(error)
            }
        }
    }

    /// Creates one instance and returns it to the pool: surfaces instantiation
    /// failures (a start function that traps, say) at load time.
    pub async fn warm_up(self: &Arc<Self>) -> Result<(), Error> {
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let instance = pool.instantiate()?;
            if let Ok(mut idle) = pool.idle.lock() {
                idle.push(instance);
            }
            Ok(())
        })
        .await
        .map_err(|e| Error::Internal(format!("adapter warm-up task failed: {e}")))?
    }
}

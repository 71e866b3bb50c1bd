//! The engine and its compiled-component cache, built on a thread of their own.
//!
//! Creating the engine (its pooling allocator's reservations, the compiler's
//! settings) and the epoch ticker takes ~0.5 ms: [`Runtime::new`] returns at
//! once and a store's open goes on meanwhile with what needs no engine (its
//! directories, keys and database file, mostly flushes); loading the adapter
//! waits for it, and only for it: the thread hands the engine over, then goes
//! on to make the latest contract's linker (~0.25 ms) while the load
//! deserialises the adapter, which needs no linker yet. The cache directory is
//! checked before `Runtime::new` returns, so a bad one is still refused there.
//!
//! [`Runtime::new`]: crate::Runtime::new

use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

use super::cache::{ComponentCache, prepare_private_dir};
use super::engine::{self, Allocator};
use super::loader::{Linkers, Loader};
use crate::config::RuntimeConfig;
use crate::error::{Error, LoadError};
use crate::wit::ContractVersion;

/// What the thread builds.
#[derive(Clone)]
pub struct Ready {
    pub loader: Arc<Loader>,
    pub allocator: Allocator,
}

type Built = Result<Ready, String>;

/// Where the thread leaves what it built, and the waiters wait for it.
#[derive(Default)]
struct Handover {
    built: Mutex<Option<Built>>,
    arrived: Condvar,
}

impl Handover {
    /// Leaves `built` unless something already was.
    fn leave(&self, built: Built) {
        let mut slot = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(built);
            self.arrived.notify_all();
        }
    }

    fn wait(&self) -> Built {
        let slot = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = self.arrived.wait_while(slot, |slot| slot.is_none()).unwrap_or_else(PoisonError::into_inner);
        slot.clone().unwrap_or_else(|| Err("the engine was never built".into()))
    }

    fn arrived(&self) -> bool {
        self.built.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }
}

/// Leaves an error if the thread ends (a panic) before leaving anything, so
/// that no waiter waits forever.
struct LeaveOnDrop(Arc<Handover>);

impl Drop for LeaveOnDrop {
    fn drop(&mut self) {
        self.0.leave(Err("building the engine panicked".into()));
    }
}

/// The engine being built, then built (or the reason it could not be).
pub struct Starting {
    handover: Arc<Handover>,
    ready: OnceLock<Built>,
}

fn build(config: &RuntimeConfig) -> Built {
    let (engine, allocator) = engine::build(config).map_err(|e| e.to_string())?;
    engine::start_ticker(&engine, config.epoch_tick).map_err(|e| e.to_string())?;
    let cache = ComponentCache::new(&engine, config.cache_dir.clone(), config.max_cached_components)
        .map_err(|e| e.to_string())?;
    tracing::debug!(?allocator, cache = ?config.cache_dir, "stowage engine ready");
    let loader = Loader { engine, cache, linkers: Linkers::default() };
    Ok(Ready { loader: Arc::new(loader), allocator })
}

/// Builds the engine, hands it over, then makes the latest contract's linker:
/// a load needs that only once its component is deserialised, which it does
/// meanwhile. A failure is met again, and reported, by the load.
fn build_and_link(config: &RuntimeConfig, handover: &Handover) {
    let built = build(config);
    let loader = built.as_ref().ok().map(|ready| Arc::clone(&ready.loader));
    handover.leave(built);
    if let Some(loader) = loader {
        let _ = loader.linkers.get(&loader.engine, ContractVersion::LATEST);
    }
}

impl Starting {
    /// Checks the cache directory, then starts building (on this thread when no
    /// other can be started).
    pub fn spawn(config: &RuntimeConfig) -> Result<Self, Error> {
        if let Some(dir) = &config.cache_dir {
            prepare_private_dir(dir).map_err(|reason| LoadError::Cache { path: dir.clone(), reason })?;
        }
        let handover = Arc::new(Handover::default());
        let (for_thread, to_leave) = (config.clone(), Arc::clone(&handover));
        let spawned = std::thread::Builder::new().name("stowage-engine".into()).spawn(move || {
            let left = LeaveOnDrop(to_leave);
            build_and_link(&for_thread, &left.0);
        });
        if let Err(error) = spawned {
            tracing::debug!(%error, "no thread to build the engine on; building it here");
            build_and_link(config, &handover);
        }
        Ok(Self { handover, ready: OnceLock::new() })
    }

    /// The engine and cache, once built (waits for the thread the first time).
    pub fn get(&self) -> Result<&Ready, Error> {
        self.ready
            .get_or_init(|| self.handover.wait())
            .as_ref()
            .map_err(|reason| Error::Internal(format!("creating the wasm engine: {reason}")))
    }

    /// Whether the engine is built (or failed to be): [`Self::get`] would not wait.
    pub fn is_ready(&self) -> bool {
        self.ready.get().is_some() || self.handover.arrived()
    }

    /// The loader, once built.
    pub fn loader(&self) -> Result<Arc<Loader>, Error> {
        self.get().map(|ready| Arc::clone(&ready.loader))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_gets_what_was_left_first_and_never_waits_for_a_thread_that_died() {
        let handover = Arc::new(Handover::default());
        let waiter = {
            let handover = Arc::clone(&handover);
            std::thread::spawn(move || handover.wait().err())
        };
        let left = LeaveOnDrop(Arc::clone(&handover));
        assert!(!handover.arrived());
        // The thread dies (a panic unwinds through its guard) before leaving anything.
        drop(left);
        let reason = waiter.join().ok().flatten().unwrap_or_default();
        assert!(reason.contains("panicked"), "{reason}");
        handover.leave(Err("later".into()));
        assert!(handover.wait().err().is_some_and(|reason| reason.contains("panicked")), "the first stays");
    }
}

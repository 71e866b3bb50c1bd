//! The engine and its compiled-component cache, built on a thread of their own.
//!
//! Creating the engine (its pooling allocator's reservations, the compiler's
//! settings) and the epoch ticker takes ~0.5 ms: [`Runtime::new`] returns at
//! once and a store's open goes on meanwhile with what needs no engine (its
//! directories, keys and database file, mostly flushes); loading the adapter
//! waits for it. The cache directory is checked before `Runtime::new` returns,
//! so a bad one is still refused there.
//!
//! [`Runtime::new`]: crate::Runtime::new

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

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

/// The engine being built, then built (or the reason it could not be).
pub struct Starting {
    building: Mutex<Option<JoinHandle<Result<Ready, String>>>>,
    ready: OnceLock<Result<Ready, String>>,
}

fn build(config: &RuntimeConfig) -> Result<Ready, String> {
    let (engine, allocator) = engine::build(config).map_err(|e| e.to_string())?;
    engine::start_ticker(&engine, config.epoch_tick).map_err(|e| e.to_string())?;
    let cache = ComponentCache::new(&engine, config.cache_dir.clone(), config.max_cached_components)
        .map_err(|e| e.to_string())?;
    tracing::debug!(?allocator, cache = ?config.cache_dir, "stowage engine ready");
    let loader = Loader { engine, cache, linkers: Linkers::default() };
    // Made now, beside the store's open, not in its adapter's load; a failure
    // is met again, and reported, there.
    let _ = loader.linkers.get(&loader.engine, ContractVersion::LATEST);
    Ok(Ready { loader: Arc::new(loader), allocator })
}

impl Starting {
    /// Checks the cache directory, then starts building (on this thread when no
    /// other can be started).
    pub fn spawn(config: &RuntimeConfig) -> Result<Self, Error> {
        if let Some(dir) = &config.cache_dir {
            prepare_private_dir(dir).map_err(|reason| LoadError::Cache { path: dir.clone(), reason })?;
        }
        let starting = Self { building: Mutex::new(None), ready: OnceLock::new() };
        let for_thread = config.clone();
        match std::thread::Builder::new().name("stowage-engine".into()).spawn(move || build(&for_thread)) {
            Ok(handle) => *starting.building.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle),
            Err(error) => {
                tracing::debug!(%error, "no thread to build the engine on; building it here");
                let _ = starting.ready.set(build(config));
            }
        }
        Ok(starting)
    }

    /// The engine and cache, once built (waits for the thread the first time).
    pub fn get(&self) -> Result<&Ready, Error> {
        self.ready
            .get_or_init(|| {
                let handle = self.building.lock().unwrap_or_else(PoisonError::into_inner).take();
                match handle {
                    Some(handle) => handle.join().unwrap_or_else(|_| Err("building the engine panicked".into())),
                    None => Err("the engine was never built".into()),
                }
            })
            .as_ref()
            .map_err(|reason| Error::Internal(format!("creating the wasm engine: {reason}")))
    }

    /// Whether the engine is built (or failed to be): [`Self::get`] would not wait.
    pub fn is_ready(&self) -> bool {
        self.ready.get().is_some()
            || self
                .building
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .is_some_and(JoinHandle::is_finished)
    }

    /// The loader, once built.
    pub fn loader(&self) -> Result<Arc<Loader>, Error> {
        self.get().map(|ready| Arc::clone(&ready.loader))
    }
}

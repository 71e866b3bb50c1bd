//! The runtime: one wasmtime engine, its epoch ticker and the component cache,
//! shared by every store of the process.

use std::sync::Arc;

use wasmtime::Engine;

use crate::adapter::image::{self, AdapterImage};
use crate::adapter::pool::{Counters, InstancePool, PoolSettings};
use crate::cache::ComponentCache;
use crate::capability::sql::SqlDatabase;
use crate::config::{AdapterSource, Grants, RuntimeConfig, StoreConfig};
use crate::engine::{self, Allocator};
use crate::error::Error;
use crate::store::Store;

/// The SQL database file inside a store's data directory.
pub const SQL_DATABASE_FILE: &str = "stowage.sqlite3";

/// What loading an adapter found out about it (see [`Runtime::inspect`]).
#[derive(Clone, Debug)]
pub struct AdapterReport {
    pub digest: String,
    pub size: usize,
    pub imports: Vec<String>,
}

/// What a component declares (see [`Runtime::describe`]).
#[derive(Clone, Debug)]
pub struct ComponentDescription {
    pub digest: String,
    pub size: usize,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// Capabilities its imports need (`sql`, `filesystem`), without duplicates.
    pub capabilities: Vec<&'static str>,
    /// The `stowage:store` version of its conversation-store export, if any.
    pub contract_version: Option<String>,
}

/// Owns the engine. Create one per process and open stores from it.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    allocator: Allocator,
    cache: ComponentCache,
    config: RuntimeConfig,
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> Result<Self, Error> {
        let (engine, allocator) = engine::build(&config)?;
        engine::start_ticker(&engine, config.epoch_tick)?;
        let cache = ComponentCache::new(&engine, config.cache_dir.clone());
        tracing::debug!(?allocator, cache = ?config.cache_dir, "stowage runtime ready");
        Ok(Self { inner: Arc::new(RuntimeInner { engine, allocator, cache, config }) })
    }

    /// Which instance allocator the engine uses (pooling unless unavailable).
    pub fn allocator(&self) -> Allocator {
        self.inner.allocator
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub(crate) async fn load_image(&self, source: &AdapterSource, grants: Grants) -> Result<AdapterImage, Error> {
        let wasm = image::read_source(source)?;
        let what = source.describe();
        let inner = Arc::clone(&self.inner);
        // Compiling takes tens to hundreds of milliseconds: keep it off async workers.
        tokio::task::spawn_blocking(move || image::load(&inner.engine, &inner.cache, &wasm, what, grants))
            .await
            .map_err(|e| Error::Internal(format!("adapter load task failed: {e}")))?
            .map_err(Error::from)
    }

    /// Compiles a component and lists what it imports and exports, without
    /// checking it against the contract or any grants.
    pub async fn describe(&self, source: &AdapterSource) -> Result<ComponentDescription, Error> {
        let wasm = image::read_source(source)?;
        let what = source.describe();
        let inner = Arc::clone(&self.inner);
        let d = tokio::task::spawn_blocking(move || image::describe(&inner.engine, &inner.cache, &wasm, &what))
            .await
            .map_err(|e| Error::Internal(format!("adapter load task failed: {e}")))??;
        let mut capabilities: Vec<&'static str> = d.imports.iter().filter_map(|i| image::capability_of(i)).collect();
        capabilities.sort_unstable();
        capabilities.dedup();
        let contract_version =
            d.exports.iter().find_map(|e| e.strip_prefix("stowage:store/conversation-store@")).map(str::to_owned);
        Ok(ComponentDescription {
            digest: d.digest,
            size: d.size,
            imports: d.imports,
            exports: d.exports,
            capabilities,
            contract_version,
        })
    }

    /// Loads and checks an adapter without opening a store: its digest, size and
    /// imports. Fails exactly as opening a store with `grants` would.
    pub async fn inspect(&self, source: &AdapterSource, grants: Grants) -> Result<AdapterReport, Error> {
        let image = self.load_image(source, grants).await?;
        Ok(AdapterReport { digest: image.digest, size: image.size, imports: image.imports })
    }

    /// Opens a store: loads its adapter, checks it against the contract and the
    /// grants, creates its data directory and one warm instance.
    pub async fn open_store(&self, config: StoreConfig) -> Result<Store, Error> {
        config.validate(&self.inner.config)?;
        std::fs::create_dir_all(&config.data_dir).map_err(|e| {
            Error::Config(format!(
                "store `{}`: cannot create data directory {}: {e}",
                config.name,
                config.data_dir.display()
            ))
        })?;
        let image = Arc::new(self.load_image(&config.adapter, config.grants).await?);
        let sql = config.grants.sql.then(|| {
            Arc::new(SqlDatabase::new(
                config.data_dir.join(SQL_DATABASE_FILE),
                config.limits.max_sql_result_bytes,
                std::time::Duration::from_millis(config.limits.sql_busy_timeout_ms),
                config.sql_sync,
            ))
        });
        let settings = PoolSettings {
            store_name: config.name.clone(),
            grants: config.grants,
            deadline_ticks: engine::deadline_ticks(config.limits.call_timeout, self.inner.config.epoch_tick),
            data_dir: config.data_dir.clone(),
            limits: config.limits.clone(),
            sql: sql.clone(),
        };
        let counters = Arc::new(Counters::default());
        let pool = Arc::new(InstancePool::new(self.inner.engine.clone(), image, settings, Arc::clone(&counters)));
        pool.warm_up().await?;
        tracing::info!(store = %config.name, adapter = %config.adapter.describe(), "store opened");
        Ok(Store::new(config.name, pool, sql, self.clone(), counters))
    }
}

//! The runtime: one wasmtime engine, its epoch ticker and the component cache,
//! shared by every store of the process; and opening stores.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::adapter::client::Client;
use crate::adapter::engine::{self, Allocator};
use crate::adapter::loader::{self, AdapterImage, Loader};
use crate::adapter::starting::Starting;
use crate::adapter::wasm::{Setup, WasmBackend, local_database};
use crate::capability::sql::{PostgresSettings, SqlDatabase};
use crate::capability::{self, Capability, Grants, ImportNeed};
use crate::config::{AdapterSource, Isolation, KeySource, Limits, RuntimeConfig, SqlSync, StoreConfig};
use crate::error::{Error, LoadError};
use crate::integrity::Protector;
use crate::integrity::source::{self, PendingKeyring, Rotation};
use crate::layout::{self, Layout};
use crate::store::{Opened, SharedDatabase, Store};
use crate::wit::ContractVersion;

/// The SQLite database of a store whose data directory is `data_dir`.
pub fn sql_database_path(data_dir: &Path) -> PathBuf {
    Layout::at(data_dir).private_dir().join(layout::SQL_FILE)
}

/// What loading an adapter found out about it (see [`Runtime::inspect`]).
#[derive(Clone, Debug)]
pub struct AdapterReport {
    pub digest: String,
    pub size: usize,
    pub imports: Vec<String>,
    pub contract_version: &'static str,
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
    /// The `stowage:store` version whose exports it has, if any.
    pub contract_version: Option<&'static str>,
}

impl ComponentDescription {
    /// The grants its imports ask for.
    pub fn grants(&self) -> Grants {
        Grants::of(
            &self.capabilities.iter().filter_map(|name| capability::Capability::from_name(name)).collect::<Vec<_>>(),
        )
    }
}

/// Owns the engine. Create one per process and open stores from it.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Starting,
    config: RuntimeConfig,
    /// The stores opened from it, for [`Runtime::close`].
    opened: Opened,
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    joined(tokio::task::spawn_blocking(f)).await
}

async fn joined<T>(task: JoinHandle<Result<T, Error>>) -> Result<T, Error> {
    task.await.map_err(|e| Error::Internal(format!("blocking task failed: {e}")))?
}

/// What a store's open makes ready beside loading its adapter: its directories,
/// its keyring (started: see [`source::load_beside`]) and a local SQLite file
/// with the connection opened ahead (`local_sql`: its limits and sync level).
/// The file is made on this thread, not one of its own: on a small machine busy
/// loading the adapter, such threads waited 0.8–2.9 ms to be scheduled, longer
/// than their work. A new keyring's thread may wait as long: its work is mostly
/// waiting for the disk, and the open waits for it only at its end.
fn prepare(
    data_dir: &Path,
    keys: &KeySource,
    local_sql: Option<(Limits, SqlSync)>,
) -> Result<(Layout, PendingKeyring, Option<Arc<SqlDatabase>>), Error> {
    let layout = Layout::prepare(data_dir)?;
    let keyring = source::load_beside(keys, &layout.private_dir());
    let sql_local = local_sql.map(|(limits, sync)| {
        let db = local_database(layout.sql_path(), &limits, sync);
        db.open_ahead();
        Arc::new(db)
    });
    Ok((layout, keyring, sql_local))
}

/// Adds a fresh integrity key to the store's keyring and makes it current (old
/// keys stay, so everything tagged before keeps verifying). Hosts pick the new
/// key up when they reopen the store; until then they still read what it tags.
/// Fails for keys supplied by environment or in code: rotate those at the source.
pub fn rotate_keys(config: &StoreConfig) -> Result<Rotation, Error> {
    let layout = Layout::prepare(&config.data_dir)?;
    source::rotate(&config.keys, &layout.private_dir()).map_err(|e| Error::Config(format!("integrity keys: {e}")))
}

impl Runtime {
    /// Starts the runtime. The engine is built on a thread of its own while the
    /// caller goes on (opening a store waits for it only to load the adapter);
    /// a cache directory others may write to is refused here.
    pub fn new(config: RuntimeConfig) -> Result<Self, Error> {
        let engine = Starting::spawn(&config)?;
        Ok(Self { inner: Arc::new(RuntimeInner { engine, config, opened: Opened::default() }) })
    }

    /// Which instance allocator the engine uses (pooling unless unavailable);
    /// waits for the engine.
    pub fn allocator(&self) -> Result<Allocator, Error> {
        self.inner.engine.get().map(|ready| ready.allocator)
    }

    /// The loader, once the engine is built.
    fn loader(&self) -> Result<Arc<Loader>, Error> {
        self.inner.engine.loader()
    }

    async fn load_image(&self, source: &AdapterSource, grants: Grants) -> Result<AdapterImage, Error> {
        joined(self.start_load(source, grants)).await
    }

    /// Loads an adapter on the blocking pool, started now (not when awaited).
    fn start_load(&self, source: &AdapterSource, grants: Grants) -> JoinHandle<Result<AdapterImage, Error>> {
        let (runtime, source) = (self.clone(), source.clone());
        tokio::task::spawn_blocking(move || {
            let wasm = loader::read_source(&source)?;
            // While the engine is still being built, a shipped artifact's
            // copy is checked meanwhile (hashing ~1 MB) instead of after.
            let starting = &runtime.inner;
            let prechecked = match &starting.config.cache_dir {
                Some(dir) if !starting.engine.is_ready() => wasm.checked_copy(dir),
                _ => None,
            };
            let loader = runtime.loader()?;
            Ok(loader.load_checked(&wasm, source.describe(), grants, prechecked)?)
        })
    }

    /// Compiles a component and lists what it imports and exports, without
    /// checking it against the contract or any grants.
    pub async fn describe(&self, source: &AdapterSource) -> Result<ComponentDescription, Error> {
        let (runtime, source) = (self.clone(), source.clone());
        let d = blocking(move || {
            let wasm = loader::read_source(&source)?;
            let loader = runtime.loader()?;
            Ok(loader.describe(&wasm, &source.describe())?)
        })
        .await?;
        let mut capabilities: Vec<&'static str> = d
            .imports
            .iter()
            .filter_map(|i| match capability::classify(i) {
                ImportNeed::Capability(c) => Some(c.name()),
                _ => None,
            })
            .collect();
        capabilities.sort_unstable();
        capabilities.dedup();
        Ok(ComponentDescription {
            digest: d.digest,
            size: d.size,
            imports: d.imports,
            exports: d.exports,
            capabilities,
            contract_version: d.version.map(ContractVersion::as_str),
        })
    }

    /// Loads and checks an adapter without opening a store: its digest, size and
    /// imports. Fails exactly as opening a store with `grants` would.
    pub async fn inspect(&self, source: &AdapterSource, grants: Grants) -> Result<AdapterReport, Error> {
        let image = self.load_image(source, grants).await?;
        Ok(AdapterReport {
            digest: image.digest,
            size: image.size,
            imports: image.imports,
            contract_version: image.version.as_str(),
        })
    }

    /// Opens a store: prepares its directories (host-private and adapter), loads
    /// its adapter and checks it against the contract and the grants, reads or
    /// creates its keys, and starts one warm instance. The files are made on the
    /// calling thread (a millisecond or two of disk work; on a multi-threaded
    /// runtime's worker through `block_in_place`, so its other tasks move on).
    pub async fn open_store(&self, config: StoreConfig) -> Result<Store, Error> {
        if self.inner.opened.is_closed() {
            return Err(Error::Closed { store: config.name });
        }
        config.validate(&self.inner.config)?;
        // The adapter loads (its artifact checked, deserialised) on the blocking
        // pool while the data directory, the keyring and a local SQLite file
        // are made ready on this thread (see `prepare`): mostly CPU on one side,
        // mostly the disk on the other.
        let load = self.start_load(&config.adapter, config.grants);
        let local_sql = (config.isolation == Isolation::Shared
            && config.grants.contains(Capability::Sql)
            && config.sql.url.is_none())
        .then(|| (config.limits.clone(), config.sql_sync));
        let prepared = crate::util::blocking::here(|| prepare(&config.data_dir, &config.keys, local_sql));
        // Both run to their end (a keyring being made too: see
        // `PendingKeyring`): nothing is made after a failed open returns, and an
        // adapter that cannot load is the error reported. (A failed open may
        // leave the data directory made, with its keyring and database.)
        let image = joined(load).await;
        let image = Arc::new(image?);
        let (layout, keyring, sql_local) = prepared?;
        let sql_server = capability::sql::server_database(&config, image.version)?;
        if image.version < ContractVersion::V0_2 && config.integrity.seal {
            return Err(Error::Load(LoadError::ContractTooOld {
                what: image.what.clone(),
                version: image.version.as_str(),
                needs: "keep sealed records (seal = true)".into(),
            }));
        }
        let reload_source = config.keys.clone();
        let reload = source::reloader(&reload_source, &layout.private_dir());
        let setup = Setup {
            store: config.name.clone(),
            loader: self.loader()?,
            layout,
            isolation: config.isolation,
            limits: config.limits.clone(),
            deadline_ticks: engine::deadline_ticks(config.limits.call_timeout, self.inner.config.epoch_tick),
            inline_calls: self.inner.config.inline_calls,
            sql_sync: config.sql_sync,
            sql_server,
            sql_local,
            #[cfg(feature = "fault-injection")]
            power_loss: config.power_loss.clone(),
        };
        let backend = WasmBackend::start(setup, image).await?;
        // Waited for last: a new key file is flushed and in place before the
        // store is handed out (nothing is tagged before), however late its
        // thread ran.
        let keyring = crate::util::blocking::here(|| keyring.wait())
            .map_err(|e| Error::Config(format!("integrity keys: {e}")))?;
        let protector = Arc::new(Protector::new(config.integrity, keyring).with_reload(reload));
        let client = Client::new(backend, protector, config.name.clone(), &config.limits);
        tracing::info!(store = %config.name, adapter = %config.adapter.describe(), "store opened");
        let shared = config.sql.url.clone().map(|url| {
            let settings = capability::sql::server_settings(&config);
            // The display relay's pool: a lease per concurrent change, and its reader.
            SharedDatabase {
                url,
                settings: PostgresSettings { max_connections: settings.max_connections + 1, ..settings },
            }
        });
        let on_caller = self.inner.config.ops_on_caller;
        let store = Store::new(config.name.clone(), client, self.loader()?, config.limits, shared, on_caller);
        if !self.inner.opened.keep(&store) {
            // The runtime closed while this store opened.
            store.close().await;
            return Err(Error::Closed { store: config.name });
        }
        Ok(store)
    }

    /// Closes every store opened from this runtime that is still open (some
    /// handle of it alive), as [`Store::close`] does: each waits for its running
    /// calls, which answer only once what they wrote is as durable as the
    /// store's `sql_sync` promises, and releases its adapter's instances. Later
    /// calls on those stores, and later `open_store` calls, fail with `Closed`.
    /// Closing again does nothing more.
    pub async fn close(&self) {
        for store in self.inner.opened.close() {
            store.close().await;
        }
    }
}

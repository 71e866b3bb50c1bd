//! [`WasmBackend`]: a store's adapter component(s) behind the backend traits.
//!
//! It owns the store's instance pools: one for every tenant (`isolation =
//! "shared"`), or one per tenant with its own data directory and database
//! (`isolation = "tenant"`, created on first use, the least recently used idle
//! ones unloaded beyond `max_live_tenants`). A hot swap replaces the whole
//! generation (image and pools) at once; calls already running hold their pool
//! and finish on the old adapter.

mod calls;
mod display_calls;
mod plan;
mod v0_1;
mod v0_2;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

pub use self::v0_1::CONTENT_MIME;
use super::loader::{AdapterImage, Loader};
use super::pool::{InstancePool, PoolSettings};
use super::supervisor::{Counters, HealthSnapshot};
use crate::capability::Capability;
use crate::capability::sql::{Dialect, SqlDatabase, SqlSync};
use crate::config::{Isolation, Limits};
use crate::error::Error;
use crate::layout::Layout;
use crate::wit::ContractVersion;

/// What every generation of a store's adapter shares.
pub struct Setup {
    pub store: String,
    pub loader: Arc<Loader>,
    pub layout: Layout,
    pub isolation: Isolation,
    pub limits: Limits,
    pub deadline_ticks: u64,
    /// Run calls on the caller's thread (`RuntimeConfig::inline_calls`).
    pub inline_calls: bool,
    pub sql_sync: SqlSync,
    /// The store's database on a PostgreSQL server (`sql.url`), shared by every
    /// pool, instead of a SQLite file per data directory.
    pub sql_server: Option<Arc<SqlDatabase>>,
    /// The SQLite database of `layout`, made (and opened ahead) while the
    /// adapter loaded; `None` when the store has none or made none ahead.
    pub sql_local: Option<Arc<SqlDatabase>>,
    #[cfg(feature = "fault-injection")]
    pub power_loss: Option<crate::capability::filesystem::power_loss::PowerLoss>,
}

struct Shared {
    setup: Setup,
    /// One database per data directory, shared by every generation.
    databases: Mutex<HashMap<String, Arc<SqlDatabase>>>,
    counters: Arc<Counters>,
}

/// Per-tenant pools and their last use.
struct TenantPools {
    pools: HashMap<String, (Arc<InstancePool>, u64)>,
    clock: u64,
}

/// One adapter image and the pools running it.
struct Generation {
    image: Arc<AdapterImage>,
    /// The pool of every tenant (shared isolation) or of the swap smoke test.
    shared: Option<Arc<InstancePool>>,
    tenants: Mutex<TenantPools>,
    counters: Arc<Counters>,
}

pub struct WasmBackend {
    shared: Arc<Shared>,
    current: RwLock<Arc<Generation>>,
}

/// The SQLite database at `path` (a data directory's), under a store's limits.
pub fn local_database(path: std::path::PathBuf, limits: &Limits, sync: SqlSync) -> SqlDatabase {
    let db = SqlDatabase::sqlite(
        path,
        limits.max_sql_result_bytes,
        std::time::Duration::from_millis(limits.sql_busy_timeout_ms),
        sync,
    );
    db.durability().set_flush_spin(std::time::Duration::from_micros(limits.flush_spin_us));
    db
}

impl WasmBackend {
    /// A backend running `image`, with one warm instance (for shared isolation).
    pub async fn start(setup: Setup, image: Arc<AdapterImage>) -> Result<Self, Error> {
        let counters = Arc::new(Counters::default());
        let databases: HashMap<String, Arc<SqlDatabase>> =
            setup.sql_local.iter().map(|db| (db.path().display().to_string(), Arc::clone(db))).collect();
        let shared = Arc::new(Shared { setup, databases: Mutex::new(databases), counters: Arc::clone(&counters) });
        let generation = Self::generation(&shared, image, counters, None).await?;
        Ok(Self { shared, current: RwLock::new(Arc::new(generation)) })
    }

    async fn generation(
        shared: &Arc<Shared>,
        image: Arc<AdapterImage>,
        counters: Arc<Counters>,
        smoke_layout: Option<Layout>,
    ) -> Result<Generation, Error> {
        let pool_layout = match (shared.setup.isolation, smoke_layout) {
            (_, Some(layout)) => Some(layout),
            (Isolation::Shared, None) => Some(shared.setup.layout.clone()),
            (Isolation::Tenant, None) => None,
        };
        let pool = match pool_layout {
            Some(layout) => {
                let pool = Arc::new(Self::pool(shared, &image, &layout, Arc::clone(&counters)));
                pool.warm_up()?;
                Some(pool)
            }
            None => None,
        };
        let tenants = Mutex::new(TenantPools { pools: HashMap::new(), clock: 0 });
        Ok(Generation { image, shared: pool, tenants, counters })
    }

    fn pool(shared: &Shared, image: &Arc<AdapterImage>, layout: &Layout, counters: Arc<Counters>) -> InstancePool {
        let setup = &shared.setup;
        let sql = image.grants.contains(Capability::Sql).then(|| {
            let path = layout.sql_path();
            let key = path.display().to_string();
            let mut databases = match shared.databases.lock() {
                Ok(databases) => databases,
                Err(poisoned) => poisoned.into_inner(),
            };
            Arc::clone(databases.entry(key).or_insert_with(|| {
                if let Some(server) = &setup.sql_server {
                    return Arc::clone(server);
                }
                Arc::new(local_database(path, &setup.limits, setup.sql_sync))
            }))
        });
        let settings = PoolSettings {
            store_name: setup.store.clone(),
            grants: image.grants,
            adapter_dir: layout.adapter_dir(),
            limits: setup.limits.clone(),
            deadline_ticks: setup.deadline_ticks,
            // PostgreSQL connections block on a runtime of their own: never on
            // an async worker.
            inline_calls: setup.inline_calls && sql.as_ref().is_none_or(|db| db.dialect() == Dialect::Sqlite),
            sql,
            #[cfg(feature = "fault-injection")]
            power_loss: setup.power_loss.clone(),
        };
        InstancePool::new(shared.setup.loader.engine.clone(), Arc::clone(image), settings, counters)
    }

    fn generation_now(&self) -> Arc<Generation> {
        match self.current.read() {
            Ok(current) => Arc::clone(&current),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The pool serving `tenant`.
    async fn pool_for(&self, tenant: &str) -> Result<Arc<InstancePool>, Error> {
        let generation = self.generation_now();
        if let Some(pool) = &generation.shared {
            return Ok(Arc::clone(pool));
        }
        let clock = {
            let mut tenants = generation.tenants.lock().map_err(|_| Error::Internal("tenant pools poisoned".into()))?;
            tenants.clock += 1;
            let clock = tenants.clock;
            if let Some((pool, used)) = tenants.pools.get_mut(tenant) {
                *used = clock;
                return Ok(Arc::clone(pool));
            }
            clock
        };
        let (root, name) = (self.shared.setup.layout.clone(), tenant.to_owned());
        let layout = tokio::task::spawn_blocking(move || root.tenant(&name))
            .await
            .map_err(|e| Error::Internal(format!("preparing a tenant directory failed: {e}")))??;
        let pool = Arc::new(Self::pool(&self.shared, &generation.image, &layout, Arc::clone(&generation.counters)));
        let mut tenants = generation.tenants.lock().map_err(|_| Error::Internal("tenant pools poisoned".into()))?;
        let max = self.shared.setup.limits.max_live_tenants as usize;
        while tenants.pools.len() >= max {
            // Unload the least recently used tenant nobody is calling right now.
            let idle = tenants
                .pools
                .iter()
                .filter(|(_, (pool, _))| Arc::strong_count(pool) == 1)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(name, _)| name.clone());
            match idle {
                Some(name) => {
                    tenants.pools.remove(&name);
                }
                None => break,
            }
        }
        let entry = tenants.pools.entry(tenant.to_owned()).or_insert((pool, clock));
        Ok(Arc::clone(&entry.0))
    }

    /// The SQL databases this backend has opened (fault injection in tests).
    #[cfg(feature = "fault-injection")]
    pub fn databases(&self) -> Vec<Arc<SqlDatabase>> {
        self.shared.databases.lock().map(|d| d.values().cloned().collect()).unwrap_or_default()
    }

    /// The contract version of the adapter serving now.
    /// The store's name, for errors.
    fn store_name(&self) -> &str {
        &self.shared.setup.store
    }

    pub fn version(&self) -> ContractVersion {
        self.generation_now().image.version
    }

    pub fn image(&self) -> Arc<AdapterImage> {
        Arc::clone(&self.generation_now().image)
    }

    pub fn counters(&self) -> &Arc<Counters> {
        &self.shared.counters
    }

    /// The worst health among the live pools.
    pub fn health(&self) -> HealthSnapshot {
        let generation = self.generation_now();
        let mut pools: Vec<Arc<InstancePool>> = generation.shared.iter().cloned().collect();
        if let Ok(tenants) = generation.tenants.lock() {
            pools.extend(tenants.pools.values().map(|(pool, _)| Arc::clone(pool)));
        }
        pools
            .iter()
            .map(|pool| pool.health())
            .max_by_key(|h| (h.retry_in.is_some(), h.consecutive_failures))
            .unwrap_or(HealthSnapshot { consecutive_failures: 0, last_error: None, retry_in: None })
    }

    /// A candidate running `image` beside this backend, counting on its own: for
    /// the swap smoke test. With tenant isolation it runs in a scratch directory.
    pub async fn candidate(&self, image: Arc<AdapterImage>) -> Result<WasmBackend, Error> {
        let smoke = match self.shared.setup.isolation {
            Isolation::Shared => None,
            Isolation::Tenant => {
                let root = self.shared.setup.layout.private_dir().join("swap-smoke");
                Some(
                    tokio::task::spawn_blocking(move || {
                        let _ = std::fs::remove_dir_all(&root);
                        Layout::prepare(&root)
                    })
                    .await
                    .map_err(|e| Error::Internal(format!("preparing the smoke-test directory failed: {e}")))??,
                )
            }
        };
        let generation = Self::generation(&self.shared, image, Arc::new(Counters::default()), smoke).await?;
        Ok(Self { shared: Arc::clone(&self.shared), current: RwLock::new(Arc::new(generation)) })
    }

    /// Makes a smoke-tested candidate serve from now on. Calls already running
    /// finish on the old generation.
    pub fn install(&self, candidate: WasmBackend) {
        let mut generation = candidate.generation_now();
        if self.shared.setup.isolation == Isolation::Tenant {
            // The smoke pool ran in a scratch directory: tenants get fresh pools.
            self.shared.counters.absorb(&generation.counters);
            generation = Arc::new(Generation {
                image: Arc::clone(&generation.image),
                shared: None,
                tenants: Mutex::new(TenantPools { pools: HashMap::new(), clock: 0 }),
                counters: Arc::clone(&self.shared.counters),
            });
        } else if let Some(pool) = &generation.shared {
            pool.adopt_counters(Arc::clone(&self.shared.counters));
        }
        let mut current = match self.current.write() {
            Ok(current) => current,
            Err(poisoned) => poisoned.into_inner(),
        };
        *current = generation;
    }

    /// Refuses new calls and waits for running ones.
    pub async fn close(&self) {
        let generation = self.generation_now();
        let mut pools: Vec<Arc<InstancePool>> = generation.shared.iter().cloned().collect();
        if let Ok(tenants) = generation.tenants.lock() {
            pools.extend(tenants.pools.values().map(|(pool, _)| Arc::clone(pool)));
        }
        for pool in pools {
            pool.close().await;
        }
    }
}

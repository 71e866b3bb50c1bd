//! Configuration of the runtime and of each store.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::builtin::Builtin;
use crate::error::Error;

/// Process-wide settings: one [`Runtime`](crate::Runtime) owns one wasmtime engine.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Where compiled adapters are cached; `None` disables the on-disk cache.
    pub cache_dir: Option<PathBuf>,
    /// How often the epoch ticker advances (the granularity of call deadlines).
    pub epoch_tick: Duration,
    /// Use the pooling instance allocator (falls back to on-demand allocation when
    /// the machine cannot reserve the pool's address space).
    pub pooling: bool,
    /// Adapter instances that may exist at once across all stores (pool size).
    pub max_instances: u32,
    /// Largest linear memory any adapter may have; a store's own cap is at most this.
    pub max_memory_bytes: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: default_cache_dir(),
            epoch_tick: Duration::from_millis(10),
            pooling: true,
            max_instances: 256,
            max_memory_bytes: 1 << 30,
        }
    }
}

fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("STOWAGE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("stowage")))
        .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache").join("stowage")))
}

/// Which adapter a store runs.
#[derive(Clone, Debug)]
pub enum AdapterSource {
    /// One of the adapters compiled into this host.
    Builtin(Builtin),
    /// A `.wasm` component file, read at load time.
    File(PathBuf),
    /// Component bytes already in memory, with a name for messages.
    Bytes { name: String, wasm: Arc<[u8]> },
}

impl AdapterSource {
    /// Parses a configuration value: a built-in name (`sqlite`, `filesystem`,
    /// `null`) or a path to a `.wasm` file.
    pub fn parse(value: &str) -> Self {
        match Builtin::from_name(value) {
            Some(builtin) => Self::Builtin(builtin),
            None => Self::File(PathBuf::from(value)),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Builtin(b) => format!("built-in adapter `{}`", b.name()),
            Self::File(path) => format!("adapter {}", path.display()),
            Self::Bytes { name, .. } => format!("adapter `{name}`"),
        }
    }
}

/// Capabilities a store lends its adapter. Everything else is denied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// The store's data directory, preopened at `/data` (read-write).
    #[serde(default)]
    pub filesystem: bool,
    /// The host's SQL database (`stowage:store/sql`), a SQLite file in the data directory.
    #[serde(default)]
    pub sql: bool,
}

impl Grants {
    pub const NONE: Grants = Grants { filesystem: false, sql: false };
    pub const FILESYSTEM: Grants = Grants { filesystem: true, sql: false };
    pub const SQL: Grants = Grants { filesystem: false, sql: true };
}

/// Limits enforced on a store and its adapter.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Cap on the adapter's linear memory, per instance.
    pub memory_bytes: u64,
    /// Per-call deadline for adapter code (host-side SQL time counts only while the
    /// adapter runs; SQL waits are bounded by `sql_busy_timeout_ms`).
    #[serde(with = "millis", rename = "call_timeout_ms")]
    pub call_timeout: Duration,
    /// Adapter instances serving this store in parallel (distinct conversations).
    pub instances: u32,
    /// Calls that may wait for an instance before new calls are refused.
    pub max_waiting_calls: u32,
    /// Largest encoded message accepted.
    pub max_message_bytes: u64,
    /// Largest append or replace batch, in encoded bytes.
    pub max_batch_bytes: u64,
    /// Most messages in one append or replace.
    pub max_batch_messages: u32,
    /// Most items one load or list may return.
    pub max_page_size: u32,
    /// Largest SQL result the host hands to an adapter.
    pub max_sql_result_bytes: u64,
    /// How long a SQL statement waits for another writer's lock.
    pub sql_busy_timeout_ms: u64,
    /// Consecutive failures (traps, timeouts, memory-cap hits, failed
    /// instantiations) after which the store reports itself unhealthy.
    pub restart_budget: u32,
    /// Back-off before replacing a failed instance, times the failure count.
    pub restart_backoff_ms: u64,
    /// Cap on that back-off.
    pub max_restart_backoff_ms: u64,
    /// How long an unhealthy store refuses calls before it tries one again.
    pub unhealthy_cooldown_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 256 << 20,
            call_timeout: Duration::from_secs(10),
            instances: 4,
            max_waiting_calls: 1024,
            max_message_bytes: 16 << 20,
            max_batch_bytes: 64 << 20,
            max_batch_messages: 10_000,
            max_page_size: 1_000,
            max_sql_result_bytes: 64 << 20,
            sql_busy_timeout_ms: 5_000,
            restart_budget: 5,
            restart_backoff_ms: 100,
            max_restart_backoff_ms: 5_000,
            unhealthy_cooldown_ms: 30_000,
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// Durability of SQL commits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SqlSync {
    /// fsync on every commit: an acknowledged write survives power loss.
    #[default]
    Full,
    /// WAL `synchronous=NORMAL`: survives a process crash; the last commits may be
    /// lost on power loss.
    Normal,
}

/// One store: an adapter, where its data lives, what it may touch, its limits.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Name used in errors and logs.
    pub name: String,
    pub adapter: AdapterSource,
    /// The store's own directory: preopened for the filesystem grant, home of the
    /// SQL database for the sql grant. Created if missing.
    pub data_dir: PathBuf,
    pub grants: Grants,
    pub limits: Limits,
    pub sql_sync: SqlSync,
}

impl StoreConfig {
    /// A store running `adapter` with no grants and default limits.
    pub fn new(name: impl Into<String>, adapter: AdapterSource, data_dir: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            adapter,
            data_dir: data_dir.into(),
            grants: Grants::NONE,
            limits: Limits::default(),
            sql_sync: SqlSync::default(),
        }
    }

    /// A store running a built-in adapter with the grants that adapter needs.
    pub fn builtin(builtin: Builtin, data_dir: impl Into<PathBuf>) -> Self {
        let mut config = Self::new(builtin.name(), AdapterSource::Builtin(builtin), data_dir);
        config.grants = builtin.grants();
        config
    }

    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub(crate) fn validate(&self, runtime: &RuntimeConfig) -> Result<(), Error> {
        let limits = &self.limits;
        let fail = |what: &str| Err(Error::Config(format!("store `{}`: {what}", self.name)));
        if limits.memory_bytes > runtime.max_memory_bytes {
            return fail(&format!(
                "memory_bytes {} exceeds the runtime's max_memory_bytes {}",
                limits.memory_bytes, runtime.max_memory_bytes
            ));
        }
        if limits.memory_bytes < (1 << 20) {
            return fail("memory_bytes must be at least 1 MiB");
        }
        if limits.instances == 0 || limits.instances > runtime.max_instances {
            return fail(&format!("instances must be between 1 and {}", runtime.max_instances));
        }
        if limits.call_timeout.is_zero() {
            return fail("call_timeout_ms must be positive");
        }
        if limits.restart_budget == 0 {
            return fail("restart_budget must be positive");
        }
        if limits.max_page_size == 0 || limits.max_batch_messages == 0 {
            return fail("max_page_size and max_batch_messages must be positive");
        }
        Ok(())
    }
}

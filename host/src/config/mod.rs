//! Configuration of the runtime and of each store, in code ([`StoreConfig`]) or
//! from a TOML file ([`ConfigFile`]).

mod builtin;
mod file;
mod limits;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

pub use self::builtin::{Builtin, GUEST_ARTIFACT_DIR, Precompiled};
pub use self::file::{ConfigFile, DEFAULT_CONFIG_FILE, DEFAULT_DATA_DIR};
pub use self::limits::Limits;
pub use crate::capability::Grants;
pub use crate::capability::sql::{SqlSync, SqlTarget};
use crate::error::Error;

/// Process-wide settings: one [`Runtime`](crate::Runtime) owns one wasmtime engine.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Where compiled adapters are cached, and shipped artifacts copied to be
    /// mapped; `None` disables the on-disk cache. The directory is created
    /// owner-only; one that another user can write is refused.
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
    /// Compiled components kept in memory (least recently used beyond this are dropped).
    pub max_cached_components: usize,
    /// Run adapter calls (and the group-commit flush) on the calling task's
    /// thread, inside `tokio::task::block_in_place`, instead of sending them to
    /// the blocking pool and waiting to be woken: the caller no longer waits for
    /// two thread hand-offs per call, and the worker's other tasks move to
    /// another thread meanwhile. Applies on multi-thread runtimes to stores on
    /// SQLite or files; on a current-thread runtime, and for PostgreSQL stores,
    /// calls always go to the blocking pool.
    pub inline_calls: bool,
    /// Run a store operation (append, load, …) that finds no other operation of
    /// its store under way on the calling task instead of a task of its own.
    /// Saves the two thread hand-offs a spawned task costs (~20 µs a call on a
    /// small machine, more than the null adapter's whole call); concurrent
    /// operations are still spawned. An operation the caller drops half done
    /// still finishes, on a task of its own, so it is never cut short. The
    /// difference: with calls inline (`inline_calls`), a `timeout` around an
    /// operation can fire only between its adapter calls, not during one (each
    /// call is bounded by the store's `call_timeout`). Off (the default), every
    /// operation is spawned and a caller's timeout fires on time.
    pub ops_on_caller: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: default_cache_dir(),
            epoch_tick: Duration::from_millis(10),
            pooling: true,
            max_instances: 256,
            max_memory_bytes: 1 << 30,
            max_cached_components: 32,
            inline_calls: true,
            ops_on_caller: false,
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

    /// How messages name this adapter.
    pub fn describe(&self) -> String {
        match self {
            Self::Builtin(b) => format!("built-in adapter `{}`", b.name()),
            Self::File(path) => format!("adapter {}", path.display()),
            Self::Bytes { name, .. } => format!("adapter `{name}`"),
        }
    }
}

/// What happens to a record that carries no integrity tag (written before tags
/// existed, or by a 0.1.0 adapter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Untagged {
    /// Reading it is an integrity error naming the record.
    #[default]
    Refuse,
    /// It is returned and reported (`Page::unverified`, a warning in the log).
    Accept,
}

/// How a store protects what it hands its adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Integrity {
    /// Attach a keyed MAC to every record and verify it on every read. Turning it
    /// off exists to measure its cost; do not.
    pub tags: bool,
    /// Encrypt message content, metadata, display content and conversation
    /// metadata (XChaCha20-Poly1305, per-tenant keys). Needs a 0.2.0 adapter.
    pub seal: bool,
    /// Records without a tag.
    pub untagged: Untagged,
}

impl Default for Integrity {
    fn default() -> Self {
        Self { tags: true, seal: false, untagged: Untagged::Refuse }
    }
}

/// Whether tenants share adapter instances and data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// One set of instances and one data directory for every tenant.
    #[default]
    Shared,
    /// Each tenant gets its own adapter instances and its own data directory (and
    /// SQL database), so no adapter instance ever holds two tenants' data.
    Tenant,
}

/// Where a store's integrity keys come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KeySource {
    /// Generated at store creation into the store's host-private directory
    /// (owner-only permissions); `stowage rekey` adds keys there.
    #[default]
    Generated,
    /// A key file the embedder manages: lines `ID:HEX` (32 bytes each); the last
    /// line is the current key.
    File(PathBuf),
    /// The same format, from an environment variable.
    Env(String),
    /// The same format, supplied in code.
    Inline(String),
}

/// One store: an adapter, where its data lives, what it may touch, its limits.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Name used in errors and logs.
    pub name: String,
    pub adapter: AdapterSource,
    /// The store's own directory. The host keeps its private files in `host/`
    /// (never reachable by the adapter) and preopens `adapter/` for the filesystem
    /// grant. Created if missing.
    pub data_dir: PathBuf,
    pub grants: Grants,
    pub limits: Limits,
    /// Durability of SQL commits.
    pub sql_sync: SqlSync,
    /// The database the `sql` capability lends (SQLite in the host-private
    /// directory unless configured otherwise).
    pub sql: SqlTarget,
    pub integrity: Integrity,
    pub isolation: Isolation,
    pub keys: KeySource,
    /// Tests only: a simulated disk under the adapter directory.
    #[cfg(feature = "fault-injection")]
    pub power_loss: Option<crate::capability::filesystem::power_loss::PowerLoss>,
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
            sql: SqlTarget::default(),
            integrity: Integrity::default(),
            isolation: Isolation::default(),
            keys: KeySource::default(),
            #[cfg(feature = "fault-injection")]
            power_loss: None,
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

    pub fn with_integrity(mut self, integrity: Integrity) -> Self {
        self.integrity = integrity;
        self
    }

    pub fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    pub fn with_keys(mut self, keys: KeySource) -> Self {
        self.keys = keys;
        self
    }

    /// Checks the limits against each other and the runtime.
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
        if limits.max_page_size == 0 || limits.max_batch_messages == 0 || limits.max_live_tenants == 0 {
            return fail("max_page_size, max_batch_messages and max_live_tenants must be positive");
        }
        if limits.max_response_bytes < limits.max_message_bytes {
            return fail("max_response_bytes must be at least max_message_bytes");
        }
        if self.integrity.seal && !self.integrity.tags {
            return fail("seal = true needs tags = true");
        }
        Ok(())
    }
}

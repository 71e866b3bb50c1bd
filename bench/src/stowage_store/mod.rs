//! The Stowage rows: [`StowageKind`] opens `stowage::Store`s on a row's adapter, and
//! [`StowageRunner`] replays the workload through the store's public async API.
//!
//! - Input: `stowage::NewMessage`, built before the timer ([`convert::new_message`]);
//!   the host assigns ids (UUIDv7) and timestamps, validates, encodes and tags inside
//!   the timed call, as for any caller.
//! - Output: `stowage::Message`, decoded and verified by the host inside the call;
//!   [`convert::canonical`] rebuilds the canonical JSON for the untimed checks.
//! - Timed calls: `Store::append` (no expected version), `Store::load(LoadRequest::latest(n))`,
//!   `Store::load_all` (pages of `Limits::max_page_size`, 1,000 by default).
//! - One [`Runtime`] per process, created by the caller outside every timer; every
//!   store of the row (A + C, B + D, each point of E) is opened from it.
//! - Phase E: `Limits::instances` = min(agents, `e_instances`), and
//!   `Limits::max_waiting_calls` raised to cover every agent; the runtime's
//!   `max_instances` is raised to match ([`runtime_config`]).
//! - `stowage-sqlite-pg`: `StoreConfig::sql` names the server of [`crate::pg`], in a
//!   fresh schema per store (dropped when it closes); the host's pool holds
//!   `Limits::instances` connections.

pub mod convert;
pub mod row;

use std::path::{Path, PathBuf};

use stowage::{ConversationMeta, Grants, LoadRequest, Message as Stored, NewMessage, Runtime, RuntimeConfig, Scope};
use stowage::{KeySource, SqlTarget, Store, StoreConfig};

pub use self::row::{
    ADAPTER_PREFIX, AdapterChoice, BUILTIN_ROWS, NO_APPEND_PLAN_ROW, NO_MEMO_ROW, NO_PLAN_ROW, POSTGRES_ROW, SPIN_ROW,
    StowageRow, store_error,
};
use crate::error::Result;
use crate::pg::{PgSchema, base_url, describe_server};
use crate::runner::{OpenFor, RowDescription, StoreKind, StoreRunner};
use crate::workload::Message;

/// Default cap on adapter instances in phase E (see [`StowageKind::e_instances`]) for
/// stores on PostgreSQL (and the connections of `native-pg`'s pool): the server runs
/// writers in parallel. Measured on the 2-core machine before group commit: 4 and 8
/// gave the same throughput; 16 added tail latency.
pub const DEFAULT_E_INSTANCES: u32 = 8;

/// Default cap for stores on a SQLite file or on files: their writes take turns
/// anyway, and one instance runs the queued ones back to back in commit groups on
/// one connection (2-core machine, SQLite FULL, E messages/s: 1 instance ~21k,
/// 2 ~18k, 4 ~17k, 8 ~15.5k: each extra connection rereads the pages another one
/// changed, and groups hand the write turn between drainers).
pub const DEFAULT_E_INSTANCES_LOCAL: u32 = 1;

/// Phase E's instance cap for a row: `chosen`, or the default for where it stores.
pub fn e_instances_for(chosen: Option<u32>, on_server: bool) -> u32 {
    chosen.unwrap_or(if on_server { DEFAULT_E_INSTANCES } else { DEFAULT_E_INSTANCES_LOCAL })
}

/// The scope every bench call is made in.
pub fn bench_scope() -> Scope {
    Scope::new("bench", "agent")
}

/// The runtime configuration of a bench process: the defaults, with the given compiled
/// cache directory (`None`: the default one) and room for `e_instances` instances.
pub fn runtime_config(cache_dir: Option<PathBuf>, e_instances: u32) -> RuntimeConfig {
    let mut config = RuntimeConfig::default();
    if cache_dir.is_some() {
        config.cache_dir = cache_dir;
    }
    config.max_instances = config.max_instances.max(e_instances);
    // Calls on the caller's task, as the native baseline's are (no hand-off to
    // another thread and back); see `RuntimeConfig::ops_on_caller`.
    config.ops_on_caller = true;
    config
}

/// Opens stores of one Stowage row.
#[derive(Clone)]
pub struct StowageKind {
    pub row: StowageRow,
    runtime: Runtime,
    grants: Grants,
    /// Phase E: at most this many adapter instances serve the store at once.
    pub e_instances: u32,
    /// A PostgreSQL row: the server's URL (without a schema) and what it is.
    server: Option<(String, String)>,
}

impl StowageKind {
    /// A kind for `row` on `runtime` (resolves a third-party adapter's grants once).
    pub async fn new(row: StowageRow, runtime: Runtime, e_instances: u32) -> Result<Self> {
        let grants = row.grants(&runtime).await?;
        let server = if row.postgres {
            let url = base_url();
            let description = describe_server(&url).await?;
            Some((url, description))
        } else {
            None
        };
        Ok(Self { row, runtime, grants, e_instances: e_instances.max(1), server })
    }

    /// The store configuration of this row, with its data in `dir`.
    pub fn config(&self, dir: &Path, purpose: OpenFor) -> StoreConfig {
        let mut config = StoreConfig::new(self.row.id.clone(), self.row.source(), dir);
        config.grants = self.grants;
        config.sql_sync = self.row.sync;
        config.integrity = self.row.integrity;
        if !self.row.memo {
            config.limits.verified_cache_bytes = 0;
        }
        config.limits.load_plans = self.row.plan;
        config.limits.append_plans = self.row.append_plan;
        if self.row.spin {
            config.limits.flush_spin_us = 400;
        }
        if let OpenFor::Concurrent { agents } = purpose {
            let agents = u32::try_from(agents).unwrap_or(u32::MAX);
            config.limits.instances = agents.clamp(1, self.e_instances);
            config.limits.max_waiting_calls = config.limits.max_waiting_calls.max(agents.saturating_mul(2));
        }
        config
    }
}

impl StoreKind for StowageKind {
    type Runner = StowageRunner;

    fn describe(&self) -> RowDescription {
        let limits = stowage::Limits::default();
        let mut notes = vec![
            format!("adapter: {}; grants: {:?}", self.row.source().describe(), self.grants),
            format!(
                "integrity: tags {}, seal {}; sql_sync {:?}; stowage contract {}",
                self.row.integrity.tags,
                self.row.integrity.seal,
                self.row.sync,
                stowage::CONTRACT_VERSION
            ),
            format!(
                "default limits ({} instances, load_all pages of {}); phase E: instances = min(agents, {}), \
                 max_waiting_calls ≥ 2 × agents",
                limits.instances, limits.max_page_size, self.e_instances
            ),
            "RuntimeConfig: defaults but ops_on_caller = true (operations run on the calling task)".into(),
        ];
        if let Some((_, server)) = &self.server {
            notes.push(format!(
                "sql on PostgreSQL ({server}), a fresh schema per store; sql_sync does not apply: commits are as \
                 durable as the server's synchronous_commit; the host's pool holds `instances` connections; integrity keys inline (shared)"
            ));
        }
        if !self.row.keeps_messages() {
            notes.push("keeps nothing: loads return nothing and the read-back checks are skipped".into());
        }
        RowDescription {
            row: self.row.id.clone(),
            label: self.row.label(),
            sync: self.row.sync_label().into(),
            baseline: false,
            input: "stowage::NewMessage built before the timer (shape 0 user text; 1 assistant tool_call \
                    `search_docs` with the arguments string; 2 tool_result; 3 assistant text); ids and \
                    timestamps assigned by the host inside the call"
                .into(),
            output: "stowage::Message, decoded and verified by the host inside the call".into(),
            notes,
        }
    }

    async fn open(&self, dir: &Path, purpose: OpenFor) -> Result<StowageRunner> {
        let mut config = self.config(dir, purpose);
        let schema = match &self.server {
            Some((url, _)) => {
                let schema = PgSchema::create(url).await?;
                config.sql = SqlTarget { url: Some(schema.url.clone()) };
                // Keys every host of a shared database would share (generated ones draw the
                // host's warning, once per store); tags cost the same with any key.
                config.keys = KeySource::Inline(format!("1:{}", "b7".repeat(32)));
                Some(schema)
            }
            None => None,
        };
        let store = self.runtime.open_store(config).await.map_err(store_error)?;
        Ok(StowageRunner { store, scope: bench_scope(), keeps: self.row.keeps_messages(), schema })
    }
}

/// One open `stowage::Store`.
pub struct StowageRunner {
    store: Store,
    scope: Scope,
    keeps: bool,
    /// A PostgreSQL row's schema, dropped after the store closes.
    schema: Option<PgSchema>,
}

impl StowageRunner {
    /// The store, for probes that call more of its API.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

impl StoreRunner for StowageRunner {
    type Input = NewMessage;
    type Output = Stored;

    fn prepare(&self, message: &Message) -> Result<NewMessage> {
        convert::new_message(message)
    }

    async fn open_conversation(&self, conv: &str) -> Result<()> {
        self.store.open(&self.scope, conv, ConversationMeta::default()).await.map_err(store_error)?;
        Ok(())
    }

    async fn append(&self, conv: &str, batch: Vec<NewMessage>) -> Result<()> {
        self.store.append(&self.scope, conv, batch, None).await.map_err(store_error)?;
        Ok(())
    }

    async fn load_newest(&self, conv: &str, n: usize) -> Result<Vec<Stored>> {
        let limit = u32::try_from(n).unwrap_or(u32::MAX);
        let page = self.store.load(&self.scope, conv, LoadRequest::latest(limit)).await.map_err(store_error)?;
        Ok(page.messages)
    }

    async fn load_all(&self, conv: &str) -> Result<Vec<Stored>> {
        self.store.load_all(&self.scope, conv).await.map_err(store_error)
    }

    fn canonical(&self, output: &Stored) -> Result<String> {
        convert::canonical(output)
    }

    fn keeps_messages(&self) -> bool {
        self.keeps
    }

    async fn server_bytes(&self) -> Result<Option<u64>> {
        match &self.schema {
            Some(schema) => schema.bytes().await.map(Some),
            None => Ok(None),
        }
    }

    async fn close(self) -> Result<()> {
        self.store.close().await;
        match self.schema {
            Some(schema) => schema.drop_now().await,
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::conversation;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sqlite_store_round_trips_the_workload() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(runtime_config(Some(cache.path().to_path_buf()), 4)).unwrap();
        let row = StowageRow::parse("stowage-sqlite-normal").unwrap().unwrap();
        let kind = StowageKind::new(row, runtime, 4).await.unwrap();
        assert_eq!(kind.config(dir.path(), OpenFor::Concurrent { agents: 100 }).limits.instances, 4);
        let store = kind.open(dir.path(), OpenFor::Sequential).await.unwrap();
        let conv = "conv-0000";
        store.open_conversation(conv).await.unwrap();
        let messages = conversation(0, 9);
        store.append(conv, vec![store.prepare(&messages[0]).unwrap()]).await.unwrap();
        let rest = messages[1..].iter().map(|m| store.prepare(m)).collect::<Result<Vec<_>>>().unwrap();
        store.append(conv, rest).await.unwrap();
        let newest = store.load_newest(conv, 4).await.unwrap();
        let got: Vec<String> = newest.iter().map(|m| store.canonical(m).unwrap()).collect();
        let want: Vec<String> = messages[5..].iter().map(|m| m.canonical.clone()).collect();
        assert_eq!(got, want);
        assert_eq!(store.load_all(conv).await.unwrap().len(), 9);
        assert!(store.keeps_messages());
        store.close().await.unwrap();
    }
}

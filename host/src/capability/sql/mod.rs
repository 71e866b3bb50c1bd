//! The `sql` capability: a database the host runs (SQLite) or connects to on an
//! adapter's behalf, in the shape of `spin:sqlite`.
//!
//! - [`SqlDatabase`]: one per store (per tenant with tenant isolation): where the
//!   data lives and how connections are made.
//! - [`SqlSession`]: one per adapter instance: its connection, opened on first
//!   use, behind the [`Connection`] trait (the seam between the WIT surface and a
//!   database engine).
//! - `host`: the WIT `sql` host implementation for each contract version, and its
//!   linker wiring.
//! - `sqlite`: opening and hardening a SQLite connection (`fresh`: a new file
//!   made whole under a temporary name, in WAL mode); `durability` (group
//!   commit), `checkpoint` and `prefill` (WAL space written ahead, so commits
//!   overwrite it instead of growing the file): a SQLite file's flushes and WAL
//!   upkeep; `wal_writes` (a VFS shim): a commit's WAL frames in one write;
//!   `page_cache`: SQLite's page cache, wrapped so a commit skips truncations
//!   that would drop nothing; `identity`:
//!   which file the WAL path names, asked without reading its timestamps;
//!   `deadline`: the adapter call's deadline, at which SQLite interrupts the
//!   statement it runs.
//! - `postgres`: a PostgreSQL server (`sql = { url = … }`): a pool per store,
//!   connections pinned for a transaction.
//! - `fault` (feature `fault-injection`, tests only): a fault that strikes a chosen
//!   statement.
//!
//! Calls arrive on the thread that runs the adapter and connections use
//! blocking APIs directly. That thread is a blocking-pool thread, or, with
//! `RuntimeConfig::inline_calls`, the caller's async worker — for SQLite only:
//! PostgreSQL connections block on a runtime of their own, which must never
//! happen on an async worker, so those stores always hand calls off.

mod ahead;
mod checkpoint;
mod deadline;
mod durability;
#[cfg(feature = "fault-injection")]
mod fault;
mod fresh;
mod gate;
mod host;
mod identity;
mod page_cache;
mod postgres;
mod prefill;
mod session;
mod sqlite;
mod value;
mod wal_writes;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

pub use self::durability::Durability;
#[cfg(feature = "fault-injection")]
pub use self::fault::{FaultSlot, SqlFault};
use self::gate::{WriteGate, WriteTurn};
pub use self::host::add_to_linker;
pub(crate) use self::postgres::{Server as PostgresServer, spawn as spawn_on_postgres_runtime};
pub use self::postgres::{Settings as PostgresSettings, server_database, server_settings};
pub use self::session::{SqlSession, Statement};
pub use self::value::{Dialect, Rows, Value};
use crate::wit::SqlErrorKind;

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

/// Which database a store's `sql` capability lends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlTarget {
    /// A database server URL (`postgres://…`); `None` (the default) is a SQLite
    /// file in the store's host-private directory.
    pub url: Option<String>,
}

/// A connection to the database, as a session uses it. Implemented per engine.
pub trait Connection: Send {
    /// Runs one statement that returns no rows; rows changed.
    fn execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlErrorKind>;
    /// Runs one statement and returns its rows, failing with `too-large` once they
    /// exceed `max_bytes`.
    fn query(&mut self, statement: &str, params: &[Value], max_bytes: u64) -> Result<Rows, SqlErrorKind>;
    /// Whether a transaction is open.
    fn in_transaction(&self) -> bool;
    /// As `query`, for a statement that does not write; `None`, run nothing,
    /// for one that may (outside a transaction it then commits on its own, as
    /// the session arranges). Engines whose writers the host does not queue run
    /// every statement.
    fn query_unless_writes(
        &mut self,
        statement: &str,
        params: &[Value],
        max_bytes: u64,
    ) -> Result<Option<Rows>, SqlErrorKind> {
        self.query(statement, params, max_bytes).map(Some)
    }
    /// As `query`, only for a statement the engine confirms writes nothing;
    /// `None`, run nothing, otherwise. Engines that cannot tell run nothing.
    fn query_read_only(
        &mut self,
        _statement: &str,
        _params: &[Value],
        _max_bytes: u64,
    ) -> Result<Option<Rows>, SqlErrorKind> {
        Ok(None)
    }
    /// Starts a write transaction.
    fn begin(&mut self) -> Result<(), SqlErrorKind>;
    fn commit(&mut self) -> Result<(), SqlErrorKind>;
    fn rollback(&mut self) -> Result<(), SqlErrorKind>;
    /// Runs statements that return nothing (savepoint handling); no parameters.
    fn execute_plain(&mut self, statements: &str) -> Result<(), SqlErrorKind>;
    /// Interrupts any statement still running once `deadline` has passed (see
    /// [`deadline`]). Engines that cannot interrupt their statements ignore it.
    fn interrupt_after(&mut self, _deadline: Arc<deadline::CallDeadline>) -> Result<(), SqlErrorKind> {
        Ok(())
    }
    /// Runs `statements` in order as one step inside the open transaction: all
    /// take effect, or at the first failure none does (the transaction goes on)
    /// and that failure is returned. Engines may send them together.
    fn execute_atomic(&mut self, statements: &[Statement]) -> Result<Vec<u64>, SqlErrorKind> {
        self.execute_plain("SAVEPOINT stowage_batch")?;
        let mut changes = Vec::with_capacity(statements.len());
        for statement in statements {
            match self.execute(&statement.sql, &statement.params) {
                Ok(changed) => changes.push(changed),
                Err(err) => {
                    if let Err(undo) = self.execute_plain("ROLLBACK TO stowage_batch; RELEASE stowage_batch") {
                        tracing::warn!(error = ?undo, "undoing a failed batch failed");
                    }
                    return Err(err);
                }
            }
        }
        self.execute_plain("RELEASE stowage_batch")?;
        Ok(changes)
    }
}

/// The database a store lends its adapter.
pub struct SqlDatabase {
    path: PathBuf,
    max_result_bytes: u64,
    busy_timeout: Duration,
    /// Group commit and background checkpoints.
    durability: Arc<Durability>,
    /// The fair queue of this host's SQLite writers (`None` on PostgreSQL).
    writers: Option<Arc<WriteGate>>,
    /// A PostgreSQL server instead of the SQLite file at `path`.
    server: Option<Arc<postgres::Server>>,
    /// A connection opened before any session asked ([`Self::open_ahead`]).
    ahead: ahead::Ahead,
    #[cfg(feature = "fault-injection")]
    fault: FaultSlot,
}

impl std::fmt::Debug for SqlDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlDatabase").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqlDatabase {
    /// A SQLite database at `path` (created on first use).
    pub fn sqlite(path: PathBuf, max_result_bytes: u64, busy_timeout: Duration, sync: SqlSync) -> Self {
        page_cache::install();
        let writers = Arc::new(WriteGate::default());
        let durability =
            Arc::new(Durability::new(&path, sync == SqlSync::Full, Some(Arc::clone(&writers)), busy_timeout));
        Self {
            path,
            max_result_bytes,
            busy_timeout,
            durability,
            writers: Some(writers),
            server: None,
            ahead: ahead::Ahead::default(),
            #[cfg(feature = "fault-injection")]
            fault: FaultSlot::default(),
        }
    }

    /// A database on the PostgreSQL server at `url`, through a pool of its own
    /// (connected lazily). Fails on a malformed URL or one that asks for TLS this
    /// build lacks. Commits are as durable as the server's `synchronous_commit`
    /// makes them: no group commit here.
    pub fn postgres(url: &str, settings: &PostgresSettings, max_result_bytes: u64) -> Result<Self, String> {
        Ok(Self {
            path: PathBuf::new(),
            max_result_bytes,
            busy_timeout: settings.busy_timeout,
            durability: Arc::new(Durability::new(std::path::Path::new(""), false, None, settings.busy_timeout)),
            writers: None,
            server: Some(Arc::new(postgres::Server::open(url, settings)?)),
            ahead: ahead::Ahead::default(),
            #[cfg(feature = "fault-injection")]
            fault: FaultSlot::default(),
        })
    }

    /// The dialect its connections speak.
    pub fn dialect(&self) -> Dialect {
        if self.server.is_some() { Dialect::Postgres } else { Dialect::Sqlite }
    }

    /// The SQLite file (empty for PostgreSQL).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connect(&self) -> Result<Box<dyn Connection>, SqlErrorKind> {
        if let Some(server) = &self.server {
            return Ok(Box::new(postgres::PgConnection::new(Arc::clone(server))));
        }
        if let Some(conn) = self.ahead.take() {
            return Ok(conn);
        }
        Ok(Box::new(self.open_sqlite()?))
    }

    /// A new connection to the SQLite file, made first if missing.
    fn open_sqlite(&self) -> Result<sqlite::Sqlite, SqlErrorKind> {
        if fresh::create_if_missing(&self.path, self.durability.flushes())? {
            self.durability.placed_unflushed();
        }
        let d = &self.durability;
        sqlite::open(&self.path, self.busy_timeout, d.wal_frames(), d.wal_commits(), d.refusal())
    }

    /// Creates the SQLite file (in WAL mode, the first time) and opens the
    /// connection the first session will take, so that a store's first call
    /// pays for neither: a store opens this beside loading its adapter. An
    /// empty WAL is started on that connection meanwhile ([`ahead`]). A failure
    /// is left for that first use to meet again and report. No-op on
    /// PostgreSQL.
    pub fn open_ahead(&self) {
        if self.server.is_some() {
            return;
        }
        match self.open_sqlite() {
            Ok(conn) => self.ahead.keep(conn, &self.durability, self.busy_timeout),
            Err(error) => tracing::debug!(?error, "opening the database ahead failed; its first use tries again"),
        }
    }

    /// Closes the connection opened ahead if no session took it.
    pub fn close_ahead(&self) {
        self.ahead.close();
    }

    /// Waits for this host's turn to write to the database (SQLite only; `None`
    /// when the engine queues writers itself).
    fn write_turn(&self) -> Result<Option<WriteTurn>, SqlErrorKind> {
        self.writers.as_ref().map(|gate| gate.enter(self.busy_timeout)).transpose()
    }

    /// Group commit: tickets of commits, and waiting for them to be durable.
    pub fn durability(&self) -> &Arc<Durability> {
        &self.durability
    }

    /// The fault slot tests arm.
    #[cfg(feature = "fault-injection")]
    pub fn faults(&self) -> &FaultSlot {
        &self.fault
    }
}

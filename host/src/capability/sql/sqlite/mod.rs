//! SQLite connections, opened and hardened for an untrusted adapter.
//!
//! WAL mode, so instances read in parallel and writers queue on the busy timeout.
//! Commits do not flush (`synchronous=NORMAL`) and never checkpoint: the
//! database's `Durability` flushes the WAL for groups of commits and checkpoints
//! in the background. A commit's WAL frames go in one write (`wal_writes`).
//! The file is opened with `SQLITE_OPEN_NOFOLLOW` (a symbolic link in its place is
//! refused, never followed). An authorizer denies ATTACH/DETACH and every pragma
//! outside a short allow-list, denies transaction control (`BEGIN`, `COMMIT`,
//! `ROLLBACK`, `SAVEPOINT`, `RELEASE`) in an adapter's own statements — the host
//! runs transactions through the `begin`/`commit`/`rollback` calls, where its
//! write turn, group commit and commit groups depend on them — attached
//! databases are limited to zero (which also
//! stops `VACUUM INTO`), extension loading stays disabled, defensive mode is on,
//! `trusted_schema` is off, and query results are capped in bytes. An adapter
//! session's connection is interrupted at its call's deadline (`deadline`).
//! An empty WAL is started ahead of the first call (`wal_start`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization, Wal};
use rusqlite::limits::Limit;
use rusqlite::{ErrorCode, OpenFlags};

use super::Connection;
use super::value::{Rows, Value};
use crate::wit::SqlErrorKind;

mod wal_start;

/// Pragmas an adapter may run: schema versioning and introspection only.
const ALLOWED_PRAGMAS: &[&str] = &[
    "user_version",
    "table_info",
    "table_xinfo",
    "index_list",
    "index_info",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
];

/// Each connection's page cache, in KiB (SQLite's default is 2 MiB). A ~2,000-message
/// history (~3 MiB of pages) then stays cached between loads instead of being read
/// from the OS again on every load of it; the cache fills only as pages are read.
const PAGE_CACHE_KIB: i64 = 8 * 1024;

/// A hardened connection.
pub struct Sqlite {
    conn: rusqlite::Connection,
    /// Set while the host runs its own transaction control (the authorizer
    /// denies it to the adapter's statements otherwise).
    host_control: Arc<AtomicBool>,
    /// ` -- host <random>`, appended to the host's own statements (transaction
    /// control, savepoints), which stay prepared: it makes them unlike any text
    /// an adapter can guess, since the statement cache is keyed by text and a
    /// cached statement is not authorized again.
    host_tag: String,
    /// The database's flushes are refused (`Durability::refuse_flushes`): the
    /// connection then closes without checkpointing, should it be the last.
    refused: Arc<AtomicBool>,
}

impl Drop for Sqlite {
    fn drop(&mut self) {
        if self.refused.load(Ordering::Acquire)
            && let Err(error) = self.conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        {
            tracing::error!(%error, "could not keep a closing connection from checkpointing a database whose flushes failed");
        }
    }
}

/// Opens (creating if needed) the database at `path`; after each commit that
/// wrote to the WAL the connection stores the WAL's length, in frames, in
/// `wal_frames` and counts the commit in `wal_commits`. Once `refused` is set,
/// the connection closes without checkpointing.
pub fn open(
    path: &Path,
    busy_timeout: Duration,
    wal_frames: Arc<AtomicU64>,
    wal_commits: Arc<AtomicU64>,
    refused: Arc<AtomicBool>,
) -> Result<Sqlite, SqlErrorKind> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    super::page_cache::install();
    let mut conn = match super::wal_writes::vfs() {
        Some(vfs) => rusqlite::Connection::open_with_flags_and_vfs(path, flags, vfs),
        None => rusqlite::Connection::open_with_flags(path, flags),
    }
    .map_err(map_error)?;
    // Until it is wrapped (whose drop decides), the connection closes without
    // checkpointing: an open that fails once flushes are refused must not.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).map_err(map_error)?;
    conn.busy_timeout(busy_timeout).map_err(map_error)?;
    ensure_wal(&conn, busy_timeout)?;
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(map_error)?;
    conn.pragma_update(None, "wal_autocheckpoint", 0).map_err(map_error)?;
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB).map_err(map_error)?;
    // Replaces the auto-checkpoint's own hook (already off): only reports.
    conn.wal_hook(Some(move |_: &mut Wal, frames: std::ffi::c_int| -> rusqlite::Result<()> {
        wal_frames.store(u64::try_from(frames).unwrap_or(0), Ordering::Release);
        wal_commits.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }))
    .map_err(map_error)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(map_error)?;
    conn.pragma_update(None, "trusted_schema", "OFF").map_err(map_error)?;
    // Without it, a b-tree page whose cells are garbage can make a range scan
    // silently skip rows instead of reporting the database as malformed.
    conn.pragma_update(None, "cell_size_check", "ON").map_err(map_error)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true).map_err(map_error)?;
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0).map_err(map_error)?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, 256 << 20).map_err(map_error)?;
    conn.set_prepared_statement_cache_capacity(64);
    let host_control = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&host_control);
    conn.authorizer(Some(move |ctx: AuthContext<'_>| authorize(ctx, flag.load(Ordering::Acquire))))
        .map_err(map_error)?;
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|e| SqlErrorKind::Io(format!("no randomness for the connection: {e}")))?;
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false).map_err(map_error)?;
    Ok(Sqlite { conn, host_control, host_tag: format!(" -- host {nonce}"), refused })
}

/// Puts the file in WAL mode. Switching modes can report BUSY without waiting on
/// the busy handler when other connections are opening at the same moment, so it
/// is retried for up to the busy timeout.
fn ensure_wal(conn: &rusqlite::Connection, busy_timeout: Duration) -> Result<(), SqlErrorKind> {
    let started = Instant::now();
    loop {
        let mode: Result<String, _> = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0));
        let result = match mode {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(_) => conn.pragma_update(None, "journal_mode", "WAL"),
            Err(e) => Err(e),
        };
        match result.map_err(map_error) {
            Ok(()) => return Ok(()),
            Err(SqlErrorKind::Busy) if started.elapsed() < busy_timeout => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(e),
        }
    }
}

fn authorize(ctx: AuthContext<'_>, host_control: bool) -> Authorization {
    match ctx.action {
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } if !host_control => Authorization::Deny,
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => Authorization::Deny,
        AuthAction::Pragma { pragma_name, .. } => {
            let name = pragma_name.to_ascii_lowercase();
            if ALLOWED_PRAGMAS.contains(&name.as_str()) || (host_control && name == "synchronous") {
                Authorization::Allow
            } else {
                Authorization::Deny
            }
        }
        AuthAction::Function { function_name } if function_name.eq_ignore_ascii_case("load_extension") => {
            Authorization::Deny
        }
        _ => Authorization::Allow,
    }
}

/// The contract's error for a SQLite failure.
pub fn map_error(err: rusqlite::Error) -> SqlErrorKind {
    // The authorizer's denials of functions surface as plain prepare errors.
    let text = err.to_string();
    if text.contains("not authorized") {
        return SqlErrorKind::AccessDenied(text);
    }
    match &err {
        rusqlite::Error::SqliteFailure(e, message) => {
            let message = message.clone().unwrap_or_else(|| e.to_string());
            match e.code {
                ErrorCode::ConstraintViolation => SqlErrorKind::Constraint(message),
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => SqlErrorKind::Busy,
                ErrorCode::AuthorizationForStatementDenied | ErrorCode::PermissionDenied => {
                    SqlErrorKind::AccessDenied(message)
                }
                ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::DatabaseCorrupt
                | ErrorCode::NotADatabase
                | ErrorCode::ReadOnly => SqlErrorKind::Io(message),
                ErrorCode::TooBig => SqlErrorKind::TooLarge(message),
                _ => SqlErrorKind::InvalidStatement(message),
            }
        }
        rusqlite::Error::ExecuteReturnedResults => {
            SqlErrorKind::InvalidStatement("the statement returns rows: use `query`".into())
        }
        _ => SqlErrorKind::InvalidStatement(err.to_string()),
    }
}

fn to_sql(value: &Value) -> rusqlite::types::ToSqlOutput<'_> {
    use rusqlite::types::ValueRef as V;
    rusqlite::types::ToSqlOutput::Borrowed(match value {
        Value::Null => V::Null,
        Value::Integer(i) => V::Integer(*i),
        Value::Real(f) => V::Real(*f),
        Value::Text(s) => V::Text(s.as_bytes()),
        Value::Blob(b) => V::Blob(b),
    })
}

fn from_sql(value: rusqlite::types::ValueRef<'_>) -> Result<Value, SqlErrorKind> {
    use rusqlite::types::ValueRef as V;
    Ok(match value {
        V::Null => Value::Null,
        V::Integer(i) => Value::Integer(i),
        V::Real(f) => Value::Real(f),
        V::Text(t) => Value::Text(
            std::str::from_utf8(t)
                .map_err(|_| SqlErrorKind::InvalidStatement("a text value is not valid UTF-8".into()))?
                .to_owned(),
        ),
        V::Blob(b) => Value::Blob(b.to_vec()),
    })
}

/// SQLite's virtual-machine steps between two looks at a call's deadline
/// (a look is an atomic load and a clock read; a step is a few nanoseconds).
const STEPS_PER_DEADLINE_CHECK: std::ffi::c_int = 4096;

impl Connection for Sqlite {
    fn interrupt_after(&mut self, deadline: Arc<super::deadline::CallDeadline>) -> Result<(), SqlErrorKind> {
        self.conn.progress_handler(STEPS_PER_DEADLINE_CHECK, Some(move || deadline.passed())).map_err(map_error)
    }

    fn execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlErrorKind> {
        let mut stmt = self.conn.prepare_cached(statement).map_err(map_error)?;
        let changed = stmt.execute(rusqlite::params_from_iter(params.iter().map(to_sql))).map_err(map_error)?;
        Ok(changed as u64)
    }

    fn query(&mut self, statement: &str, params: &[Value], max_bytes: u64) -> Result<Rows, SqlErrorKind> {
        let mut stmt = self.conn.prepare_cached(statement).map_err(map_error)?;
        rows_of(&mut stmt, params, max_bytes)
    }

    fn query_unless_writes(
        &mut self,
        statement: &str,
        params: &[Value],
        max_bytes: u64,
    ) -> Result<Option<Rows>, SqlErrorKind> {
        let mut stmt = self.conn.prepare_cached(statement).map_err(map_error)?;
        if !stmt.readonly() {
            return Ok(None);
        }
        rows_of(&mut stmt, params, max_bytes).map(Some)
    }

    fn query_read_only(
        &mut self,
        statement: &str,
        params: &[Value],
        max_bytes: u64,
    ) -> Result<Option<Rows>, SqlErrorKind> {
        // `sqlite3_stmt_readonly`: inside a transaction too, a read-only
        // statement reads what `query` would.
        self.query_unless_writes(statement, params, max_bytes)
    }

    fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    fn begin(&mut self) -> Result<(), SqlErrorKind> {
        self.host_prepared("BEGIN IMMEDIATE")
    }

    fn commit(&mut self) -> Result<(), SqlErrorKind> {
        self.host_prepared("COMMIT")
    }

    fn rollback(&mut self) -> Result<(), SqlErrorKind> {
        self.host(|conn| conn.execute_batch("ROLLBACK"))
    }

    fn execute_plain(&mut self, statements: &str) -> Result<(), SqlErrorKind> {
        // One statement (a savepoint's start or release, up to four per write)
        // stays prepared; several (undoing a savepoint) are parsed each time.
        if statements.contains(';') {
            self.host(|conn| conn.execute_batch(statements))
        } else {
            self.host_prepared(statements)
        }
    }
}

impl Sqlite {
    /// Runs the host's own transaction control, which the authorizer lets
    /// through only meanwhile.
    fn host<T>(&mut self, run: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>) -> Result<T, SqlErrorKind> {
        self.host_control.store(true, Ordering::Release);
        let done = run(&self.conn);
        self.host_control.store(false, Ordering::Release);
        done.map_err(map_error)
    }

    /// Runs one of the host's own statements, kept prepared under its text and
    /// [`Sqlite::host_tag`]: parsed and authorized once per connection.
    fn host_prepared(&mut self, statement: &str) -> Result<(), SqlErrorKind> {
        let sql = format!("{statement}{}", self.host_tag);
        self.host(|conn| conn.prepare_cached(&sql).and_then(|mut stmt| stmt.execute([])).map(drop))
    }
}

/// Runs a prepared statement and collects its rows, failing with `too-large`
/// once they exceed `max_bytes`.
fn rows_of(stmt: &mut rusqlite::Statement<'_>, params: &[Value], max_bytes: u64) -> Result<Rows, SqlErrorKind> {
    let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    let width = columns.len();
    let mut out = Vec::new();
    let mut total: u64 = 0;
    let mut rows = stmt.query(rusqlite::params_from_iter(params.iter().map(to_sql))).map_err(map_error)?;
    while let Some(row) = rows.next().map_err(map_error)? {
        let mut values = Vec::with_capacity(width);
        for index in 0..width {
            let value = from_sql(row.get_ref(index).map_err(map_error)?)?;
            total += value.size();
            values.push(value);
        }
        if total > max_bytes {
            return Err(SqlErrorKind::TooLarge(format!("query result exceeds the host's limit of {max_bytes} bytes")));
        }
        out.push(values);
    }
    Ok(Rows { columns, rows: out })
}

//! The `sql` capability: SQLite run natively by the host on behalf of an adapter.
//!
//! One database file per store; one connection per adapter instance (opened on
//! first use, WAL mode, so instances read in parallel and writers queue on the
//! busy timeout). Hardening: ATTACH/DETACH and every pragma outside a short
//! allow-list are denied by an authorizer, attached databases are limited to zero
//! (which also stops `VACUUM INTO`), extension loading stays disabled, defensive
//! mode is on, and query results are capped in bytes.
//!
//! Calls arrive on the blocking thread that runs the adapter, never on an async
//! worker, so the blocking rusqlite API is used directly.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::adapter::bindings::sql::{Error as SqlError, QueryResult, Row, Statement, Value};
use crate::config::SqlSync;

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

/// The database a store lends its adapter.
#[derive(Debug)]
pub struct SqlDatabase {
    path: PathBuf,
    max_result_bytes: u64,
    busy_timeout: Duration,
    sync: SqlSync,
    /// Test hook: (statements still to let through, then the fault).
    fault: Mutex<Option<(u32, SqlFault)>>,
}

/// A fault the host can inject into the `sql` capability, for tests: it strikes
/// once, at a chosen call (`execute`, `query`, `execute-batch` or `commit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlFault {
    /// The statement fails with an I/O error the adapter sees.
    Error,
    /// The adapter traps inside the statement.
    Trap,
    /// The statement takes this long (past the call deadline, it makes the adapter
    /// time out as soon as it resumes).
    Stall(Duration),
}

/// What an injected fault does to the current statement.
pub enum Struck {
    /// Report this error to the adapter.
    Error(SqlError),
    /// Trap the adapter.
    Trap,
}

impl SqlDatabase {
    pub fn new(path: PathBuf, max_result_bytes: u64, busy_timeout: Duration, sync: SqlSync) -> Self {
        Self { path, max_result_bytes, busy_timeout, sync, fault: Mutex::new(None) }
    }

    /// Arms `fault` to strike the statement after the next `statements` ones.
    pub fn inject(&self, statements: u32, fault: SqlFault) {
        if let Ok(mut slot) = self.fault.lock() {
            *slot = Some((statements, fault));
        }
    }

    /// Disarms a fault that has not struck yet.
    pub fn disarm(&self) {
        if let Ok(mut slot) = self.fault.lock() {
            *slot = None;
        }
    }

    /// Called before each statement: the armed fault, if this is its statement.
    pub fn strike(&self) -> Option<Struck> {
        let fault = {
            let mut slot = self.fault.lock().ok()?;
            match slot.as_mut() {
                Some((0, fault)) => {
                    let fault = *fault;
                    *slot = None;
                    fault
                }
                Some((remaining, _)) => {
                    *remaining -= 1;
                    return None;
                }
                None => return None,
            }
        };
        match fault {
            SqlFault::Error => Some(Struck::Error(SqlError::Io("injected failure".into()))),
            SqlFault::Trap => Some(Struck::Trap),
            SqlFault::Stall(duration) => {
                std::thread::sleep(duration);
                None
            }
        }
    }

    fn open(&self) -> Result<Connection, SqlError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&self.path, flags).map_err(map_error)?;
        conn.busy_timeout(self.busy_timeout).map_err(map_error)?;
        Self::ensure_wal(&conn, self.busy_timeout)?;
        let sync = match self.sync {
            SqlSync::Full => "FULL",
            SqlSync::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", sync).map_err(map_error)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(map_error)?;
        conn.pragma_update(None, "trusted_schema", "OFF").map_err(map_error)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true).map_err(map_error)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0).map_err(map_error)?;
        conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, 256 << 20).map_err(map_error)?;
        conn.set_prepared_statement_cache_capacity(64);
        conn.authorizer(Some(authorize)).map_err(map_error)?;
        Ok(conn)
    }
}

impl SqlDatabase {
    /// Puts the file in WAL mode. Switching modes can report BUSY without waiting
    /// on the busy handler when other connections are opening at the same moment,
    /// so it is retried for up to the busy timeout.
    fn ensure_wal(conn: &Connection, busy_timeout: Duration) -> Result<(), SqlError> {
        let started = std::time::Instant::now();
        loop {
            let mode: Result<String, _> = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0));
            let result = match mode {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
                Ok(_) => conn.pragma_update(None, "journal_mode", "WAL"),
                Err(e) => Err(e),
            };
            match result.map_err(map_error) {
                Ok(()) => return Ok(()),
                Err(SqlError::Busy) if started.elapsed() < busy_timeout => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn authorize(ctx: AuthContext<'_>) -> Authorization {
    match ctx.action {
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => Authorization::Deny,
        AuthAction::Pragma { pragma_name, .. } => {
            if ALLOWED_PRAGMAS.contains(&pragma_name.to_ascii_lowercase().as_str()) {
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

fn map_error(err: rusqlite::Error) -> SqlError {
    match &err {
        rusqlite::Error::SqliteFailure(e, message) => {
            let message = message.clone().unwrap_or_else(|| e.to_string());
            match e.code {
                ErrorCode::ConstraintViolation => SqlError::Constraint(message),
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => SqlError::Busy,
                ErrorCode::AuthorizationForStatementDenied | ErrorCode::PermissionDenied => {
                    SqlError::AccessDenied(message)
                }
                ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::DatabaseCorrupt
                | ErrorCode::NotADatabase
                | ErrorCode::ReadOnly => SqlError::Io(message),
                ErrorCode::TooBig => SqlError::TooLarge(message),
                _ => SqlError::InvalidStatement(message),
            }
        }
        rusqlite::Error::ExecuteReturnedResults => {
            SqlError::InvalidStatement("the statement returns rows: use `query`".into())
        }
        _ => SqlError::InvalidStatement(err.to_string()),
    }
}

fn to_sql(value: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match value {
        Value::Null => V::Null,
        Value::Integer(i) => V::Integer(*i),
        Value::Real(f) => V::Real(*f),
        Value::Text(s) => V::Text(s.clone()),
        Value::Blob(b) => V::Blob(b.clone()),
    }
}

fn from_sql(value: rusqlite::types::ValueRef<'_>) -> Result<(Value, usize), SqlError> {
    use rusqlite::types::ValueRef as V;
    Ok(match value {
        V::Null => (Value::Null, 1),
        V::Integer(i) => (Value::Integer(i), 8),
        V::Real(f) => (Value::Real(f), 8),
        V::Text(t) => {
            let text = std::str::from_utf8(t)
                .map_err(|_| SqlError::InvalidStatement("a text value is not valid UTF-8".into()))?;
            (Value::Text(text.to_owned()), t.len())
        }
        V::Blob(b) => (Value::Blob(b.to_vec()), b.len()),
    })
}

/// One adapter instance's connection. Dropping it (the instance was discarded
/// after a trap or timeout) closes the connection, which rolls back any open
/// transaction.
pub struct SqlSession {
    db: Arc<SqlDatabase>,
    conn: Option<Connection>,
}

impl SqlSession {
    pub fn new(db: Arc<SqlDatabase>) -> Self {
        Self { db, conn: None }
    }

    fn conn(&mut self) -> Result<&mut Connection, SqlError> {
        if self.conn.is_none() {
            self.conn = Some(self.db.open()?);
        }
        self.conn.as_mut().ok_or_else(|| SqlError::Io("connection unavailable".into()))
    }

    pub fn database(&self) -> &SqlDatabase {
        &self.db
    }

    pub fn execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(statement).map_err(map_error)?;
        let changed = stmt.execute(rusqlite::params_from_iter(params.iter().map(to_sql))).map_err(map_error)?;
        Ok(changed as u64)
    }

    pub fn query(&mut self, statement: &str, params: &[Value]) -> Result<QueryResult, SqlError> {
        let max = self.db.max_result_bytes;
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(statement).map_err(map_error)?;
        let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
        let width = columns.len();
        let mut rows_out = Vec::new();
        let mut total: u64 = 0;
        let mut rows = stmt.query(rusqlite::params_from_iter(params.iter().map(to_sql))).map_err(map_error)?;
        while let Some(row) = rows.next().map_err(map_error)? {
            let mut values = Vec::with_capacity(width);
            for index in 0..width {
                let (value, size) = from_sql(row.get_ref(index).map_err(map_error)?)?;
                total += size as u64;
                values.push(value);
            }
            if total > max {
                return Err(SqlError::TooLarge(format!("query result exceeds the host's limit of {max} bytes")));
            }
            rows_out.push(Row { values });
        }
        Ok(QueryResult { columns, rows: rows_out })
    }

    pub fn execute_batch(&mut self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        let in_transaction = !self.conn()?.is_autocommit();
        let (open, undo, close) = if in_transaction {
            ("SAVEPOINT stowage_batch", "ROLLBACK TO stowage_batch; RELEASE stowage_batch", "RELEASE stowage_batch")
        } else {
            ("BEGIN IMMEDIATE", "ROLLBACK", "COMMIT")
        };
        self.conn()?.execute_batch(open).map_err(map_error)?;
        let mut changes = Vec::with_capacity(statements.len());
        for statement in statements {
            match self.execute(&statement.sql, &statement.params) {
                Ok(changed) => changes.push(changed),
                Err(err) => {
                    let _ = self.conn()?.execute_batch(undo);
                    return Err(err);
                }
            }
        }
        self.conn()?.execute_batch(close).map_err(map_error)?;
        Ok(changes)
    }

    pub fn begin(&mut self) -> Result<(), SqlError> {
        let conn = self.conn()?;
        if !conn.is_autocommit() {
            return Err(SqlError::Transaction("a transaction is already open".into()));
        }
        conn.execute_batch("BEGIN IMMEDIATE").map_err(map_error)
    }

    pub fn commit(&mut self) -> Result<(), SqlError> {
        let conn = self.conn()?;
        if conn.is_autocommit() {
            return Err(SqlError::Transaction("no transaction is open".into()));
        }
        conn.execute_batch("COMMIT").map_err(map_error)
    }

    pub fn rollback(&mut self) -> Result<(), SqlError> {
        match self.conn.as_mut() {
            Some(conn) if !conn.is_autocommit() => conn.execute_batch("ROLLBACK").map_err(map_error),
            _ => Ok(()),
        }
    }

    /// Called after every adapter call: a transaction the adapter left open is
    /// rolled back so the next call starts clean. `Ok(true)` if one was open.
    pub fn reset(&mut self) -> Result<bool, SqlError> {
        let open = self.conn.as_ref().is_some_and(|c| !c.is_autocommit());
        if open {
            self.rollback()?;
        }
        Ok(open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(dir: &tempfile::TempDir) -> SqlSession {
        let db = SqlDatabase::new(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
        SqlSession::new(Arc::new(db))
    }

    #[test]
    fn attach_vacuum_into_and_dangerous_pragmas_are_denied() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = session(&dir);
        let outside = dir.path().join("outside.db");
        let attach = s.execute(&format!("ATTACH DATABASE '{}' AS x", outside.display()), &[]);
        assert!(matches!(attach, Err(SqlError::AccessDenied(_))), "{attach:?}");
        s.execute("CREATE TABLE t (x)", &[]).map_err(|e| format!("{e:?}"))?;
        let vacuum = s.execute(&format!("VACUUM INTO '{}'", outside.display()), &[]);
        assert!(vacuum.is_err(), "VACUUM INTO must fail: {vacuum:?}");
        assert!(!outside.exists(), "no file may be written outside the database");
        for pragma in ["PRAGMA journal_mode = DELETE", "PRAGMA writable_schema = ON"] {
            assert!(s.execute(pragma, &[]).is_err() && s.query(pragma, &[]).is_err(), "{pragma} allowed");
        }
        let ext = s.query("SELECT load_extension('/tmp/x')", &[]);
        assert!(ext.is_err(), "load_extension must fail");
        s.execute("PRAGMA user_version = 3", &[]).map_err(|e| format!("{e:?}"))?;
        let version = s.query("PRAGMA user_version", &[]).map_err(|e| format!("{e:?}"))?;
        assert!(matches!(version.rows[0].values[..], [Value::Integer(3)]));
        Ok(())
    }

    #[test]
    fn results_over_the_cap_are_refused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = session(&dir);
        s.execute("CREATE TABLE t (x)", &[]).map_err(|e| format!("{e:?}"))?;
        for _ in 0..3 {
            s.execute("INSERT INTO t VALUES (?1)", &[Value::Blob(vec![0; 400 << 10])]).map_err(|e| format!("{e:?}"))?;
        }
        assert!(matches!(s.query("SELECT x FROM t", &[]), Err(SqlError::TooLarge(_))));
        Ok(())
    }

    #[test]
    fn a_failed_batch_leaves_nothing_and_an_abandoned_transaction_is_rolled_back()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = session(&dir);
        s.execute("CREATE TABLE t (x UNIQUE)", &[]).map_err(|e| format!("{e:?}"))?;
        let insert = |x| Statement { sql: "INSERT INTO t VALUES (?1)".into(), params: vec![Value::Integer(x)] };
        let batch = s.execute_batch(&[insert(1), insert(2), insert(1)]);
        assert!(matches!(batch, Err(SqlError::Constraint(_))), "{batch:?}");
        s.begin().map_err(|e| format!("{e:?}"))?;
        s.execute("INSERT INTO t VALUES (9)", &[]).map_err(|e| format!("{e:?}"))?;
        assert!(matches!(s.reset(), Ok(true)), "the open transaction is reported");
        let rows = s.query("SELECT count(*) FROM t", &[]).map_err(|e| format!("{e:?}"))?;
        assert!(matches!(rows.rows[0].values[..], [Value::Integer(0)]));
        Ok(())
    }
}

//! One adapter instance's use of the database: its connection (opened on first
//! use) and the transaction rules of the contract. Dropping a session (its
//! instance was discarded after a trap or timeout) closes the connection, which
//! rolls back any open transaction.

use std::sync::Arc;

use super::gate::WriteTurn;
use super::value::{Rows, Value};
use super::{Connection, SqlDatabase};
use crate::wit::SqlErrorKind;

/// A statement with its parameters.
pub struct Statement {
    pub sql: String,
    pub params: Vec<Value>,
}

pub struct SqlSession {
    /// `None` when the store does not grant `sql` (then nothing links to this).
    db: Option<Arc<SqlDatabase>>,
    conn: Option<Box<dyn Connection>>,
    /// This host's turn to write, held while a write transaction is open (after
    /// `conn`, so a dropped session rolls back before the next writer enters).
    turn: Option<WriteTurn>,
    /// The newest commit of the current adapter call not yet known durable.
    ticket: Option<u64>,
}

impl SqlSession {
    pub fn new(db: Arc<SqlDatabase>) -> Self {
        Self { db: Some(db), conn: None, turn: None, ticket: None }
    }

    /// A session of an instance whose store does not grant `sql`.
    pub fn ungranted() -> Self {
        Self { db: None, conn: None, turn: None, ticket: None }
    }

    pub fn database(&self) -> Option<&Arc<SqlDatabase>> {
        self.db.as_ref()
    }

    fn conn(&mut self) -> Result<&mut Box<dyn Connection>, SqlErrorKind> {
        if self.conn.is_none() {
            let db = self.db.as_ref().ok_or_else(|| SqlErrorKind::AccessDenied("sql is not granted".into()))?;
            self.conn = Some(db.connect()?);
        }
        self.conn.as_mut().ok_or_else(|| SqlErrorKind::Io("connection unavailable".into()))
    }

    /// Waits for this host's turn to write, unless it holds it already.
    fn take_turn(&mut self) -> Result<(), SqlErrorKind> {
        if self.turn.is_none()
            && let Some(db) = &self.db
        {
            self.turn = db.write_turn()?;
        }
        Ok(())
    }

    /// Gives the turn back once no transaction is open.
    fn settle(&mut self) {
        if !self.conn.as_ref().is_some_and(|c| c.in_transaction()) {
            self.turn = None;
        }
    }

    /// A transaction of this call committed: remember its group-commit ticket.
    fn committed(&mut self) {
        if let Some(ticket) = self.db.as_ref().and_then(|db| db.durability().committed()) {
            self.ticket = Some(ticket);
        }
    }

    /// The database and the ticket this call must wait for before its answer is
    /// acknowledged (taken once per adapter call).
    pub fn take_ticket(&mut self) -> Option<(Arc<SqlDatabase>, u64)> {
        let ticket = self.ticket.take()?;
        self.db.as_ref().map(|db| (Arc::clone(db), ticket))
    }

    pub fn execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlErrorKind> {
        let autocommit = !self.conn()?.in_transaction();
        if autocommit {
            // A statement on its own is a write transaction of its own.
            self.take_turn()?;
        }
        let changed = self.conn()?.execute(statement, params);
        self.settle();
        if autocommit && changed.as_ref().is_ok_and(|c| *c > 0) {
            self.committed();
        }
        changed
    }

    pub fn query(&mut self, statement: &str, params: &[Value]) -> Result<Rows, SqlErrorKind> {
        let max = self.db.as_ref().map_or(0, |db| db.max_result_bytes);
        self.conn()?.query(statement, params, max)
    }

    /// Runs every statement in one transaction (a savepoint inside an open one):
    /// all take effect or none does.
    pub fn execute_batch(&mut self, statements: &[Statement]) -> Result<Vec<u64>, SqlErrorKind> {
        let nested = self.conn()?.in_transaction();
        if !nested {
            self.take_turn()?;
        }
        let result = self.run_batch(statements, nested);
        self.settle();
        result
    }

    fn run_batch(&mut self, statements: &[Statement], nested: bool) -> Result<Vec<u64>, SqlErrorKind> {
        let conn = self.conn()?;
        if nested {
            return conn.execute_atomic(statements);
        }
        conn.begin()?;
        let mut changes = Vec::with_capacity(statements.len());
        for statement in statements {
            match conn.execute(&statement.sql, &statement.params) {
                Ok(changed) => changes.push(changed),
                Err(err) => {
                    if let Err(undo) = conn.rollback() {
                        tracing::warn!(error = ?undo, "undoing a failed batch failed");
                    }
                    return Err(err);
                }
            }
        }
        conn.commit()?;
        self.committed();
        Ok(changes)
    }

    pub fn begin(&mut self) -> Result<(), SqlErrorKind> {
        if self.conn()?.in_transaction() {
            return Err(SqlErrorKind::Transaction("a transaction is already open".into()));
        }
        self.take_turn()?;
        let begun = self.conn()?.begin();
        self.settle();
        begun
    }

    pub fn commit(&mut self) -> Result<(), SqlErrorKind> {
        let conn = self.conn()?;
        if !conn.in_transaction() {
            return Err(SqlErrorKind::Transaction("no transaction is open".into()));
        }
        let committed = conn.commit();
        self.settle();
        committed?;
        self.committed();
        Ok(())
    }

    pub fn rollback(&mut self) -> Result<(), SqlErrorKind> {
        let rolled_back = match self.conn.as_mut() {
            Some(conn) if conn.in_transaction() => conn.rollback(),
            _ => Ok(()),
        };
        self.settle();
        rolled_back
    }

    /// Called after every adapter call: a transaction the adapter left open is
    /// rolled back so the next call starts clean. `Ok(true)` if one was open.
    pub fn reset(&mut self) -> Result<bool, SqlErrorKind> {
        let open = self.conn.as_ref().is_some_and(|c| c.in_transaction());
        if open {
            self.rollback()?;
        }
        Ok(open)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::SqlSync;
    use super::*;

    fn session(dir: &tempfile::TempDir) -> SqlSession {
        let db = SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
        SqlSession::new(Arc::new(db))
    }

    fn ok<T>(result: Result<T, SqlErrorKind>) -> Result<T, String> {
        result.map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn attach_vacuum_into_and_dangerous_pragmas_are_denied() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = session(&dir);
        let outside = dir.path().join("outside.db");
        let attach = s.execute(&format!("ATTACH DATABASE '{}' AS x", outside.display()), &[]);
        assert!(matches!(attach, Err(SqlErrorKind::AccessDenied(_))), "{attach:?}");
        ok(s.execute("CREATE TABLE t (x)", &[]))?;
        let vacuum = s.execute(&format!("VACUUM INTO '{}'", outside.display()), &[]);
        assert!(vacuum.is_err(), "VACUUM INTO must fail: {vacuum:?}");
        assert!(!outside.exists(), "no file may be written outside the database");
        for pragma in ["PRAGMA journal_mode = DELETE", "PRAGMA writable_schema = ON"] {
            assert!(
                matches!(s.execute(pragma, &[]), Err(SqlErrorKind::AccessDenied(_)))
                    && matches!(s.query(pragma, &[]), Err(SqlErrorKind::AccessDenied(_))),
                "{pragma} allowed"
            );
        }
        ok(s.execute("PRAGMA user_version = 3", &[]))?;
        let version = ok(s.query("PRAGMA user_version", &[]))?;
        assert!(matches!(version.rows[0][..], [Value::Integer(3)]));
        Ok(())
    }

    #[test]
    fn loading_an_extension_is_denied_even_when_the_library_exists() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = session(&dir);
        // A real shared library: the denial must not depend on the path being bad.
        let library = ["/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .ok_or("no shared library to try loading")?;
        let result = s.query(&format!("SELECT load_extension('{library}')"), &[]);
        assert!(matches!(result, Err(SqlErrorKind::AccessDenied(_))), "{result:?}");
        Ok(())
    }

    #[test]
    fn a_symlink_in_place_of_the_database_is_refused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let elsewhere = dir.path().join("elsewhere.db");
        ok(session_at(&elsewhere).execute("CREATE TABLE secret (x)", &[]))?;
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("t.db"))?;
        let mut s = session(&dir);
        let result = s.query("SELECT name FROM sqlite_master", &[]);
        assert!(matches!(result, Err(SqlErrorKind::Io(_)) | Err(SqlErrorKind::InvalidStatement(_))), "{result:?}");
        Ok(())
    }

    fn session_at(path: &std::path::Path) -> SqlSession {
        let db = SqlDatabase::sqlite(path.to_path_buf(), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
        SqlSession::new(Arc::new(db))
    }

    #[test]
    fn writers_wait_their_turn_and_a_dropped_session_lets_the_next_in() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.db");
        let db = Arc::new(SqlDatabase::sqlite(path, 1 << 20, Duration::from_millis(50), SqlSync::Normal));
        let (mut a, mut b) = (SqlSession::new(Arc::clone(&db)), SqlSession::new(Arc::clone(&db)));
        ok(a.execute("CREATE TABLE t (x)", &[]))?;
        ok(a.begin())?;
        let blocked = b.execute("INSERT INTO t VALUES (1)", &[]);
        assert!(matches!(blocked, Err(SqlErrorKind::Busy)), "the second writer waits, then is busy: {blocked:?}");
        ok(b.query("SELECT count(*) FROM t", &[]))?;
        drop(a);
        ok(b.execute("INSERT INTO t VALUES (1)", &[]))?;
        ok(b.begin())?;
        ok(b.commit())?;
        Ok(())
    }

    #[test]
    fn results_over_the_cap_are_refused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = session(&dir);
        ok(s.execute("CREATE TABLE t (x)", &[]))?;
        for _ in 0..3 {
            ok(s.execute("INSERT INTO t VALUES (?1)", &[Value::Blob(vec![0; 400 << 10])]))?;
        }
        assert!(matches!(s.query("SELECT x FROM t", &[]), Err(SqlErrorKind::TooLarge(_))));
        Ok(())
    }

    #[test]
    fn a_failed_batch_leaves_nothing_and_an_abandoned_transaction_is_rolled_back()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = session(&dir);
        ok(s.execute("CREATE TABLE t (x UNIQUE)", &[]))?;
        let insert = |x| Statement { sql: "INSERT INTO t VALUES (?1)".into(), params: vec![Value::Integer(x)] };
        let batch = s.execute_batch(&[insert(1), insert(2), insert(1)]);
        assert!(matches!(batch, Err(SqlErrorKind::Constraint(_))), "{batch:?}");
        ok(s.begin())?;
        ok(s.execute("INSERT INTO t VALUES (9)", &[]))?;
        assert!(matches!(s.reset(), Ok(true)), "the open transaction is reported");
        let rows = ok(s.query("SELECT count(*) FROM t", &[]))?;
        assert!(matches!(rows.rows[0][..], [Value::Integer(0)]));
        Ok(())
    }
}

//! A SQLite connection behind the adapter's [`Sql`] seam, configured like the
//! host's (WAL, `BEGIN IMMEDIATE` for `begin`, a busy timeout, an optional cap
//! on result bytes).

use std::path::Path;
use std::time::Duration;

use rusqlite::types::{Value as Lite, ValueRef};
use rusqlite::{Connection, ErrorCode, params_from_iter};

use crate::db::{Dialect, Sql};
use crate::stowage::store::sql::{Error as SqlError, Statement, Value};

pub struct Sqlite {
    conn: Connection,
    /// Results larger than this many bytes of text and blobs are `too-large`.
    pub cap: Option<usize>,
}

fn map_error(err: rusqlite::Error) -> SqlError {
    match &err {
        rusqlite::Error::SqliteFailure(e, _) => match e.code {
            ErrorCode::ConstraintViolation => SqlError::Constraint(err.to_string()),
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => SqlError::Busy,
            ErrorCode::Unknown => SqlError::InvalidStatement(err.to_string()),
            _ => SqlError::Io(err.to_string()),
        },
        _ => SqlError::InvalidStatement(err.to_string()),
    }
}

fn to_lite(value: &Value) -> Lite {
    match value {
        Value::Null => Lite::Null,
        Value::Integer(i) => Lite::Integer(*i),
        Value::Real(r) => Lite::Real(*r),
        Value::Text(s) => Lite::Text(s.clone()),
        Value::Blob(b) => Lite::Blob(b.clone()),
    }
}

fn from_lite(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

impl Sqlite {
    pub fn open(path: &Path) -> Self {
        let conn = Connection::open(path).expect("open the test database");
        conn.busy_timeout(Duration::from_secs(20)).expect("set the busy timeout");
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).expect("WAL");
        Sqlite { conn, cap: None }
    }

    /// Runs raw SQL, for setting up fixtures.
    pub fn raw(&self, sql: &str) {
        self.conn.execute_batch(sql).expect("fixture SQL runs");
    }

    fn run_all(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        statements.iter().map(|s| self.execute(&s.sql, &s.params)).collect()
    }
}

impl Sql for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&self, statement: &str, params: &[Value]) -> Result<u64, SqlError> {
        let mut stmt = self.conn.prepare_cached(statement).map_err(map_error)?;
        let changed = stmt.execute(params_from_iter(params.iter().map(to_lite))).map_err(map_error)?;
        Ok(changed as u64)
    }

    fn query(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, SqlError> {
        let mut stmt = self.conn.prepare_cached(statement).map_err(map_error)?;
        let columns = stmt.column_count();
        let mut rows = stmt.query(params_from_iter(params.iter().map(to_lite))).map_err(map_error)?;
        let (mut out, mut bytes) = (Vec::new(), 0usize);
        while let Some(row) = rows.next().map_err(map_error)? {
            let values: Vec<Value> =
                (0..columns).map(|i| row.get_ref(i).map(from_lite)).collect::<Result<_, _>>().map_err(map_error)?;
            bytes += values
                .iter()
                .map(|v| match v {
                    Value::Text(s) => s.len(),
                    Value::Blob(b) => b.len(),
                    _ => 8,
                })
                .sum::<usize>();
            if self.cap.is_some_and(|cap| bytes > cap) {
                return Err(SqlError::TooLarge(format!("more than {bytes} bytes")));
            }
            out.push(values);
        }
        Ok(out)
    }

    fn execute_batch(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        let (open, commit, undo) = if self.conn.is_autocommit() {
            ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
        } else {
            ("SAVEPOINT batch", "RELEASE batch", "ROLLBACK TO batch; RELEASE batch")
        };
        self.conn.execute_batch(open).map_err(map_error)?;
        match self.run_all(statements) {
            Ok(counts) => {
                self.conn.execute_batch(commit).map_err(map_error)?;
                Ok(counts)
            }
            Err(e) => {
                let _ = self.conn.execute_batch(undo);
                Err(e)
            }
        }
    }

    fn begin(&self) -> Result<(), SqlError> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(map_error)
    }

    fn commit(&self) -> Result<(), SqlError> {
        self.conn.execute_batch("COMMIT").map_err(map_error)
    }

    fn rollback(&self) -> Result<(), SqlError> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.conn.execute_batch("ROLLBACK").map_err(map_error)
    }
}

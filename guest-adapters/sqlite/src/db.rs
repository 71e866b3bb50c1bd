//! The seam between the adapter's logic and the database, plus the helpers every
//! operation uses: typed rows, error mapping and the write-transaction loop.
//!
//! The logic talks to a [`Sql`] trait object, never to the `sql` import directly:
//! in the component it is the host's import ([`HostSql`]); in native unit tests it
//! is a real SQLite or PostgreSQL connection, so the SQL text of both dialects is
//! exercised without wasm.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::heads::Heads;
use crate::stowage::store::sql::{self, Error as SqlError, Statement, Value};

/// The dialect type of the `sql` import. Every module names it through here, so a
/// rename in the WIT touches this line only.
pub use crate::stowage::store::sql::Dialect;
use crate::stowage::store::types::{Error, Scope};

/// What the adapter needs from a SQL database: the `sql` interface of the contract.
pub trait Sql {
    fn dialect(&self) -> Dialect;
    fn execute(&self, statement: &str, params: &[Value]) -> Result<u64, SqlError>;
    /// The rows of `statement`, each as its values in column order.
    fn query(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, SqlError>;
    fn execute_batch(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError>;
    fn begin(&self) -> Result<(), SqlError>;
    fn commit(&self) -> Result<(), SqlError>;
    fn rollback(&self) -> Result<(), SqlError>;
}

/// The database the host lends through the `sql` import.
pub struct HostSql;

impl Sql for HostSql {
    fn dialect(&self) -> Dialect {
        // `get-dialect` in the WIT: a function cannot share the `dialect` enum's
        // name within one interface.
        sql::get_dialect()
    }

    fn execute(&self, statement: &str, params: &[Value]) -> Result<u64, SqlError> {
        sql::execute(statement, params)
    }

    fn query(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, SqlError> {
        let result = sql::query(statement, params)?;
        Ok(result.rows.into_iter().map(|row| row.values).collect())
    }

    fn execute_batch(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        sql::execute_batch(statements)
    }

    fn begin(&self) -> Result<(), SqlError> {
        sql::begin()
    }

    fn commit(&self) -> Result<(), SqlError> {
        sql::commit()
    }

    fn rollback(&self) -> Result<(), SqlError> {
        sql::rollback()
    }
}

/// Why an operation stopped before it could answer.
#[derive(Debug)]
pub enum Failure {
    /// An answer for the caller (`not-found`, `conflict`, `storage`, …).
    Contract(Error),
    /// Another writer got in the way: a constraint failed (e.g. a concurrent
    /// writer's row at the same (conversation, seq) on PostgreSQL), a
    /// compare-and-swap on the conversation's version missed, or PostgreSQL
    /// reported a serialization failure. The transaction is rolled back and the
    /// whole operation re-run on fresh state, which turns a lost race into the
    /// contract's answer for it (`out-of-sequence`, `already-stored`, …).
    Contended(String),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Contract(error)
    }
}

/// The result of a step of an operation.
pub type Res<T> = Result<T, Failure>;

/// A `storage` failure with `reason`.
pub fn storage(reason: impl Into<String>) -> Failure {
    Failure::Contract(Error::Storage(reason.into()))
}

/// How many times a write is attempted when other writers keep getting in the way.
const WRITE_ATTEMPTS: u32 = 4;

/// Describes a SQL error for a `storage` reason (never includes stored content).
fn describe(err: &SqlError) -> String {
    match err {
        SqlError::AccessDenied(m) => format!("database access denied: {m}"),
        SqlError::Constraint(m) => format!("database constraint failed: {m}"),
        SqlError::Busy => "database busy: another writer held it too long".to_owned(),
        SqlError::TooLarge(m) => format!("query result too large: {m}"),
        SqlError::InvalidStatement(m) => format!("invalid statement: {m}"),
        SqlError::Transaction(m) => format!("transaction error: {m}"),
        SqlError::Io(m) => format!("database I/O error: {m}"),
    }
}

/// A database handle for one contract call.
#[derive(Clone, Copy)]
pub struct Db<'a> {
    sql: &'a dyn Sql,
    dialect: Dialect,
    heads: Option<&'a Heads>,
    /// Set once the display tables were seen ([`crate::display_tables`]).
    display_tables: Option<&'a AtomicBool>,
}

impl<'a> Db<'a> {
    /// A handle that knows no heads (every append goes the long way).
    #[cfg(not(test))]
    pub fn new(sql: &'a dyn Sql) -> Self {
        Db { sql, dialect: sql.dialect(), heads: None, display_tables: None }
    }

    /// In tests every handle remembers heads (one set per handle, as one
    /// instance), so each test that appends twice takes the one-crossing path.
    #[cfg(test)]
    pub fn new(sql: &'a dyn Sql) -> Self {
        Db { sql, dialect: sql.dialect(), heads: Some(Box::leak(Box::new(Heads::new()))), display_tables: None }
    }

    /// The same handle, remembering conversations' heads in `heads` ([`crate::fast_append`]).
    pub fn with_heads(self, heads: &'a Heads) -> Self {
        Db { heads: Some(heads), ..self }
    }

    pub fn heads(&self) -> Option<&'a Heads> {
        self.heads
    }

    /// The same handle, remembering in `seen` that the display tables exist.
    pub fn with_display_tables(self, seen: &'a AtomicBool) -> Self {
        Db { display_tables: Some(seen), ..self }
    }

    /// Whether this handle's instance has seen the display tables.
    pub fn display_tables_seen(&self) -> bool {
        self.display_tables.is_some_and(|seen| seen.load(Ordering::Acquire))
    }

    pub fn remember_display_tables(&self) {
        if let Some(seen) = self.display_tables {
            seen.store(true, Ordering::Release);
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Maps a SQL error of step `what`. A constraint failure is contention on both
    /// engines; `busy` is contention only on PostgreSQL (a serialization failure or
    /// deadlock, worth an immediate retry), while SQLite's `busy` already waited out
    /// the host's busy timeout and is reported.
    fn fail(&self, what: &str, err: SqlError) -> Failure {
        match (&err, self.dialect) {
            (SqlError::Constraint(_), _) | (SqlError::Busy, Dialect::Postgres) => {
                Failure::Contended(format!("{what}: {}", describe(&err)))
            }
            _ => storage(format!("{what}: {}", describe(&err))),
        }
    }

    pub fn query(&self, what: &str, statement: &str, params: &[Value]) -> Res<Vec<Row>> {
        let rows = self.sql.query(statement, params).map_err(|e| self.fail(what, e))?;
        Ok(rows.into_iter().map(|values| Row { values }).collect())
    }

    /// Like [`Db::query`], but `None` when the result exceeds the host's size cap,
    /// so the caller can ask for fewer rows.
    pub fn query_capped(&self, what: &str, statement: &str, params: &[Value]) -> Res<Option<Vec<Row>>> {
        match self.sql.query(statement, params) {
            Ok(rows) => Ok(Some(rows.into_iter().map(|values| Row { values }).collect())),
            Err(SqlError::TooLarge(_)) => Ok(None),
            Err(e) => Err(self.fail(what, e)),
        }
    }

    /// The first row of the result, if any.
    pub fn query_row(&self, what: &str, statement: &str, params: &[Value]) -> Res<Option<Row>> {
        Ok(self.query(what, statement, params)?.into_iter().next())
    }

    pub fn execute(&self, what: &str, statement: &str, params: &[Value]) -> Res<u64> {
        self.sql.execute(statement, params).map_err(|e| self.fail(what, e))
    }

    /// Runs `statements` in one crossing of the wasm boundary; rows changed per
    /// statement.
    pub fn execute_batch(&self, what: &str, statements: &[Statement]) -> Res<Vec<u64>> {
        let counts = self.sql.execute_batch(statements).map_err(|e| self.fail(what, e))?;
        if counts.len() != statements.len() {
            return Err(storage(format!(
                "{what}: the database answered {} counts for {} statements",
                counts.len(),
                statements.len()
            )));
        }
        Ok(counts)
    }

    /// Runs `body` in a write transaction (SQLite: the database's write lock;
    /// PostgreSQL: one pinned connection), committed when it returns `Ok` and
    /// rolled back otherwise, so a failed call changes nothing. On contention the
    /// whole body runs again in a new transaction (on PostgreSQL a failed
    /// statement aborts the transaction, so re-reading needs a new one).
    pub fn write<T>(&self, what: &str, mut body: impl FnMut() -> Res<T>) -> Result<T, Error> {
        let mut last = String::new();
        for _ in 0..WRITE_ATTEMPTS {
            let attempt = self
                .sql
                .begin()
                .map_err(|e| self.fail(&format!("{what}: starting a transaction"), e))
                .and_then(|()| body())
                .and_then(|value| {
                    self.sql.commit().map(|()| value).map_err(|e| self.fail(&format!("{what}: committing"), e))
                });
            match attempt {
                Ok(value) => return Ok(value),
                Err(failure) => {
                    // Best effort: the host also rolls back a transaction left open.
                    let _ = self.sql.rollback();
                    match failure {
                        Failure::Contract(error) => return Err(error),
                        Failure::Contended(reason) => last = reason,
                    }
                }
            }
        }
        Err(Error::Storage(format!(
            "{what}: gave up after {WRITE_ATTEMPTS} attempts, other writers kept interfering: {last}"
        )))
    }

    /// Runs read-only `body` outside a transaction (each statement sees committed
    /// data).
    pub fn read<T>(&self, body: impl FnOnce() -> Res<T>) -> Result<T, Error> {
        body().map_err(|failure| match failure {
            Failure::Contract(error) => error,
            Failure::Contended(reason) => Error::Storage(reason),
        })
    }
}

/// A statement for [`Db::execute_batch`].
pub fn statement(sql: &str, params: Vec<Value>) -> Statement {
    Statement { sql: sql.to_owned(), params }
}

/// Sets the first parameter of every statement, the conversation's or stream's
/// key, which is only known inside the transaction. The statements are built once,
/// so a retried write never copies message bodies again.
pub fn set_key(statements: &mut [Statement], key: i64) {
    for statement in statements {
        if let Some(first) = statement.params.first_mut() {
            *first = Value::Integer(key);
        }
    }
}

/// The parameters (tenant, user, conversation id) that key a conversation and a
/// display stream.
pub fn key_params(scope: &Scope, conversation_id: &str) -> [Value; 3] {
    [text(&scope.tenant), text(&scope.user), text(conversation_id)]
}

pub fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

pub fn opt_text(s: Option<&str>) -> Value {
    s.map_or(Value::Null, text)
}

pub fn int(i: i64) -> Value {
    Value::Integer(i)
}

/// An unsigned count, seq or version as a SQL integer; `storage` past `i64::MAX`
/// (the database could not hold it).
pub fn uint(what: &str, u: u64) -> Res<Value> {
    i64::try_from(u).map(Value::Integer).map_err(|_| storage(format!("{what}: {u} does not fit a SQL integer")))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    }
}

/// One result row. Getters name the column that did not hold what was expected
/// (never its content); `text` and `blob` move the value out.
pub struct Row {
    values: Vec<Value>,
}

impl Row {
    fn get(&mut self, index: usize) -> Res<&mut Value> {
        let len = self.values.len();
        self.values
            .get_mut(index)
            .ok_or_else(|| storage(format!("the result row has {len} columns, expected at least {}", index + 1)))
    }

    fn mismatch(index: usize, expected: &str, found: &Value) -> Failure {
        storage(format!("column {index}: expected {expected}, found {}", kind(found)))
    }

    pub fn int(&mut self, index: usize) -> Res<i64> {
        match self.get(index)? {
            Value::Integer(i) => Ok(*i),
            other => Err(Self::mismatch(index, "an integer", other)),
        }
    }

    pub fn opt_int(&mut self, index: usize) -> Res<Option<i64>> {
        match self.get(index)? {
            Value::Null => Ok(None),
            Value::Integer(i) => Ok(Some(*i)),
            other => Err(Self::mismatch(index, "an integer or null", other)),
        }
    }

    pub fn uint(&mut self, index: usize) -> Res<u64> {
        let i = self.int(index)?;
        u64::try_from(i).map_err(|_| storage(format!("column {index}: negative value {i}")))
    }

    pub fn text(&mut self, index: usize) -> Res<String> {
        match std::mem::replace(self.get(index)?, Value::Null) {
            Value::Text(s) => Ok(s),
            other => Err(Self::mismatch(index, "text", &other)),
        }
    }

    pub fn opt_text(&mut self, index: usize) -> Res<Option<String>> {
        match std::mem::replace(self.get(index)?, Value::Null) {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s)),
            other => Err(Self::mismatch(index, "text or null", &other)),
        }
    }

    /// Text or a blob, as bytes: 0.1.0 wrote JSON records as either.
    pub fn bytes(&mut self, index: usize) -> Res<Vec<u8>> {
        match std::mem::replace(self.get(index)?, Value::Null) {
            Value::Text(s) => Ok(s.into_bytes()),
            Value::Blob(b) => Ok(b),
            other => Err(Self::mismatch(index, "text or a blob", &other)),
        }
    }

    pub fn blob(&mut self, index: usize) -> Res<Vec<u8>> {
        match std::mem::replace(self.get(index)?, Value::Null) {
            Value::Blob(b) => Ok(b),
            other => Err(Self::mismatch(index, "a blob", &other)),
        }
    }
}

/// Adds what was being read to a row-decoding failure.
pub fn context<T>(result: Res<T>, what: impl FnOnce() -> String) -> Res<T> {
    result.map_err(|failure| match failure {
        Failure::Contract(Error::Storage(reason)) => storage(format!("{}: {reason}", what())),
        other => other,
    })
}

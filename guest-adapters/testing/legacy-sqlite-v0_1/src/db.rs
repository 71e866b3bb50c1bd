//! Thin helpers over the host's `sql` capability.

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::stowage::store::sql::Value;
use crate::stowage::store::sql::{self, Error as SqlError};
use crate::stowage::store::types::Error;

fn storage(err: SqlError) -> Error {
    Error::Storage(match err {
        SqlError::AccessDenied(m) => format!("database access denied: {m}"),
        SqlError::Constraint(m) => format!("database constraint failed: {m}"),
        SqlError::Busy => "database busy: another writer held the lock too long".to_owned(),
        SqlError::TooLarge(m) => format!("query result too large: {m}"),
        SqlError::InvalidStatement(m) => format!("invalid statement: {m}"),
        SqlError::Transaction(m) => format!("transaction error: {m}"),
        SqlError::Io(m) => format!("database I/O error: {m}"),
    })
}

pub fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

pub fn int(i: i64) -> Value {
    Value::Integer(i)
}

pub fn json<T: Serialize>(value: &T) -> Result<Value, Error> {
    serde_json::to_string(value).map(Value::Text).map_err(|e| Error::Storage(format!("encoding a record: {e}")))
}

/// JSON stored as a blob (display bodies may be large; no text affinity needed).
pub fn blob_json<T: Serialize>(value: &T) -> Result<Value, Error> {
    serde_json::to_vec(value).map(Value::Blob).map_err(|e| Error::Storage(format!("encoding a record: {e}")))
}

pub struct Row(Vec<Value>);

impl Row {
    fn get(&self, index: usize) -> Result<&Value, Error> {
        self.0.get(index).ok_or_else(|| Error::Storage(format!("result row has no column {index}")))
    }

    pub fn int(&self, index: usize) -> Result<i64, Error> {
        match self.get(index)? {
            Value::Integer(i) => Ok(*i),
            other => Err(Error::Storage(format!("column {index}: expected an integer, found {other:?}"))),
        }
    }

    pub fn uint(&self, index: usize) -> Result<u64, Error> {
        let i = self.int(index)?;
        u64::try_from(i).map_err(|_| Error::Storage(format!("column {index}: negative value {i}")))
    }

    pub fn text(&self, index: usize) -> Result<String, Error> {
        match self.get(index)? {
            Value::Text(s) => Ok(s.clone()),
            _ => Err(Error::Storage(format!("column {index}: expected text"))),
        }
    }

    /// A JSON-encoded record, stored as text or blob.
    pub fn json<T: DeserializeOwned>(&self, index: usize) -> Result<T, Error> {
        let decoded = match self.get(index)? {
            Value::Text(s) => serde_json::from_str(s),
            Value::Blob(b) => serde_json::from_slice(b),
            _ => return Err(Error::Storage(format!("column {index}: expected a JSON record"))),
        };
        decoded.map_err(|e| Error::Storage(format!("stored record cannot be decoded: {e}")))
    }
}

pub fn query(statement: &str, params: &[Value]) -> Result<Vec<Row>, Error> {
    let result = sql::query(statement, params).map_err(storage)?;
    Ok(result.rows.into_iter().map(|row| Row(row.values)).collect())
}

pub fn execute(statement: &str, params: &[Value]) -> Result<u64, Error> {
    sql::execute(statement, params).map_err(storage)
}

/// Runs `body` in a write transaction: committed when it returns `Ok`, rolled back
/// otherwise.
pub fn transaction<T>(body: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    sql::begin().map_err(storage)?;
    match body() {
        Ok(value) => {
            sql::commit().map_err(storage)?;
            Ok(value)
        }
        Err(e) => {
            let _ = sql::rollback();
            Err(e)
        }
    }
}

//! Values and rows as the host handles them, whatever the contract version.

/// The SQL dialect of a database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A value: the five SQLite kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    /// Bytes this value counts for against a result cap.
    pub fn size(&self) -> u64 {
        match self {
            Value::Null => 1,
            Value::Integer(_) | Value::Real(_) => 8,
            Value::Text(t) => t.len() as u64,
            Value::Blob(b) => b.len() as u64,
        }
    }
}

/// The rows of a query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

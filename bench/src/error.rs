//! The benchmark's error type: every failure names what went wrong; nothing panics
//! on input, store or file-system errors.

use std::path::PathBuf;

/// Why a benchmark step failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A PostgreSQL row's server or connection pool failed (with the error's causes).
    #[error("postgres: {0}")]
    Postgres(String),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// A read-back check found different messages than were appended.
    #[error("check failed: {0}")]
    Mismatch(String),
    /// A bad argument, setting or environment (for example a tmpfs temp directory).
    #[error("{0}")]
    Config(String),
    /// The store under test failed a call.
    #[error("store: {0}")]
    Store(String),
    /// A spawned task panicked or was cancelled.
    #[error("task: {0}")]
    Task(String),
}

impl BenchError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { path: path.into(), source }
    }
}

impl From<tokio_postgres::Error> for BenchError {
    fn from(error: tokio_postgres::Error) -> Self {
        // tokio-postgres' Display leaves the cause (the server's message) out.
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        Self::Postgres(text)
    }
}

impl From<deadpool_postgres::PoolError> for BenchError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        match error {
            deadpool_postgres::PoolError::Backend(e) => e.into(),
            other => Self::Postgres(format!("connection pool: {other}")),
        }
    }
}

pub type Result<T, E = BenchError> = std::result::Result<T, E>;

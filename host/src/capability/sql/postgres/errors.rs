//! PostgreSQL failures as the contract's `sql` errors, and what each means for
//! the connection it happened on.
//!
//! | SQLSTATE | contract error |
//! |---|---|
//! | class 23 (unique, foreign key, check, not null, exclusion), `P0001` (a trigger's `RAISE`) | `constraint` |
//! | `40001` serialization failure, `40P01` deadlock, other class 40, `55P03` lock not available (`lock_timeout`) | `busy` |
//! | class 42 (syntax, undefined table/column/function, …) but `42501`; class 22 (a value does not fit); `0A000`; class 3F, 26, 34 | `invalid-statement` |
//! | `42501` insufficient privilege | `access-denied` |
//! | class 25 (e.g. `25P02`: the transaction is aborted), class 2D, 3B, 0B | `transaction` |
//! | class 54 (program limit exceeded, e.g. an index row too large) | `too-large` |
//! | `57014` query canceled (`statement_timeout`, or an administrator) | `io` — a statement that outlived the call's deadline is not contention, and retrying it at once would only repeat it |
//! | class 08, `57P01`–`57P04`, 53 (out of memory/disk, too many connections), 58, XX, anything else | `io` |
//! | no answer from the server, a lost or closed connection | `io` |
//!
//! Messages carry the server's primary message only: its `DETAIL` may quote row
//! values (stored content), which must not end up in logs.

use tokio_postgres::error::SqlState;

use crate::wit::SqlErrorKind;

/// A failed round trip and what it did to its connection.
#[derive(Debug)]
pub struct OpError {
    pub kind: SqlErrorKind,
    /// The connection is unusable (lost, closed, out of step): discard it.
    pub broken: bool,
    /// The server reported the error, which aborts an open transaction.
    pub from_server: bool,
}

impl OpError {
    /// A failure the host found before anything reached the server.
    pub fn host(kind: SqlErrorKind) -> Self {
        Self { kind, broken: false, from_server: false }
    }

    /// The connection is gone or out of step.
    pub fn lost(reason: String) -> Self {
        Self { kind: SqlErrorKind::Io(reason), broken: true, from_server: false }
    }
}

impl From<SqlErrorKind> for OpError {
    fn from(kind: SqlErrorKind) -> Self {
        Self::host(kind)
    }
}

/// Whether the server reported that a cached statement's plan went stale (its
/// tables changed shape since it was prepared).
pub fn is_stale_plan(err: &tokio_postgres::Error) -> bool {
    err.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::FEATURE_NOT_SUPPORTED
            && db.message().contains("cached plan must not change result type")
    })
}

const CANCELLED: &str = "the statement ran past the host's statement_timeout (the call's deadline), or an \
    administrator cancelled it";

/// The contract error for a failure of the server or of the connection.
pub fn classify(err: &tokio_postgres::Error) -> OpError {
    let Some(db) = err.as_db_error() else {
        let reason = if err.is_closed() {
            "the connection to the database server was lost".to_owned()
        } else {
            format!("the connection to the database server failed: {}", chain(err))
        };
        return OpError::lost(reason);
    };
    let code = db.code().code();
    let message = db.message().to_owned();
    let class = &code[..2.min(code.len())];
    let (kind, broken) = match (class, code) {
        (_, "57014") => (SqlErrorKind::Io(format!("{message}: {CANCELLED}")), false),
        ("57" | "08", _) => (SqlErrorKind::Io(format!("the database server closed the connection: {message}")), true),
        ("23", _) | (_, "P0001") => (SqlErrorKind::Constraint(message), false),
        ("40", _) | (_, "55P03") => (SqlErrorKind::Busy, false),
        (_, "42501") => (SqlErrorKind::AccessDenied(message), false),
        ("42" | "22" | "3F" | "26" | "34", _) | (_, "0A000") => (SqlErrorKind::InvalidStatement(message), false),
        ("25" | "2D" | "3B" | "0B", _) => (SqlErrorKind::Transaction(message), false),
        ("54", _) => (SqlErrorKind::TooLarge(message), false),
        _ => (SqlErrorKind::Io(format!("database error {code}: {message}")), false),
    };
    OpError { kind, broken, from_server: true }
}

/// `err` and its causes, `: `-separated (tokio-postgres keeps the interesting
/// part, e.g. why a TLS handshake failed, in the causes).
fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut cause = err.source();
    while let Some(e) = cause {
        let text = e.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = e.source();
    }
    out
}

/// The contract error for failing to connect: always `io`, naming the server
/// (`where_` never holds a password).
pub fn connect_failed(where_: &str, err: &tokio_postgres::Error) -> SqlErrorKind {
    match err.as_db_error() {
        Some(db) => SqlErrorKind::Io(format!("cannot connect to the database server {where_}: {}", db.message())),
        None => SqlErrorKind::Io(format!("cannot connect to the database server {where_}: {}", chain(err))),
    }
}

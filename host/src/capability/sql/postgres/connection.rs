//! [`PgConnection`]: one adapter instance's view of the store's PostgreSQL pool.
//!
//! Outside a transaction every statement borrows a pooled connection for its own
//! round trips and gives it back. `begin` takes one and pins it to the instance
//! until `commit` or `rollback`; the session rolls back what a call leaves open.
//! A pinned connection never goes back to the pool inside a transaction:
//!
//! - `commit`/`rollback` end the transaction first; if that fails the connection
//!   is discarded (closed, so the server rolls back);
//! - dropping the connection (the instance trapped or timed out) discards a
//!   pinned connection the same way;
//! - a connection lost mid-transaction is discarded at once, and the transaction
//!   stays "open but lost": its statements and `commit` fail with `io` (never run
//!   on another connection outside the transaction) until `rollback`.
//!
//! PostgreSQL aborts a transaction at its first failed statement, where SQLite
//! carries on. A `commit` after such a failure would silently roll back, so it
//! rolls back explicitly and reports `transaction` instead (a savepoint rolled
//! back to, as `execute-batch` does inside a transaction, clears the failure).
//!
//! `BEGIN` travels with the transaction's first statement (tokio-postgres
//! pipelines requests polled together), saving a round trip per transaction.

use std::sync::Arc;

use deadpool_postgres::{ClientWrapper, Object};

use super::errors::OpError;
use super::{Server, guard, ops};
use crate::capability::sql::{Connection, Rows, Statement, Value};
use crate::wit::SqlErrorKind;

/// The instance's transaction.
enum Tx {
    Idle,
    Open {
        conn: Box<Object>,
        /// A statement failed on the server: the transaction is aborted.
        failed: bool,
        /// `BEGIN` was sent. It is deferred to the transaction's first
        /// statement and pipelined with it (one round trip, not two); a
        /// transaction without statements never reaches the server.
        begun: bool,
    },
    /// The pinned connection was lost; nothing of the transaction survives.
    Lost(String),
}

pub struct PgConnection {
    server: Arc<Server>,
    tx: Tx,
}

/// Takes a connection out of the pool for good and closes it.
fn discard(conn: impl Into<Box<Object>>) {
    drop(Object::take(*conn.into()));
}

impl PgConnection {
    pub fn new(server: Arc<Server>) -> Self {
        Self { server, tx: Tx::Idle }
    }

    /// Runs `op` on the pinned connection, or on a pooled one outside a
    /// transaction (then `op` may retry on its own), and applies what its failure
    /// means to the connection and the transaction.
    fn with_connection<T>(
        &mut self,
        op: impl AsyncFn(&ClientWrapper, bool) -> Result<T, OpError>,
    ) -> Result<T, SqlErrorKind> {
        let server = Arc::clone(&self.server);
        if let Tx::Open { begun: false, .. } = &self.tx {
            return self.begin_with(&op);
        }
        match &mut self.tx {
            Tx::Lost(why) => Err(SqlErrorKind::Io(format!(
                "the transaction's connection was lost ({why}); roll back and start again"
            ))),
            Tx::Open { conn, failed, .. } => {
                let result = server.block_on(op(conn, false));
                if let Err(e) = &result
                    && e.from_server
                {
                    *failed = true;
                }
                match result {
                    Err(e) if e.broken => {
                        self.lose(&e.kind);
                        Err(e.kind)
                    }
                    other => other.map_err(|e| e.kind),
                }
            }
            Tx::Idle => {
                let conn = server.checkout()?;
                let result = server.block_on(op(&conn, true));
                if let Err(e) = &result
                    && e.broken
                {
                    discard(conn);
                }
                result.map_err(|e| e.kind)
            }
        }
    }

    /// Sends the deferred `BEGIN` pipelined with the transaction's first
    /// statement. A pooled connection may have died since it was last used (a
    /// server restart): if `BEGIN` finds it broken, nothing of the transaction
    /// happened, so both go once more on a fresh connection.
    fn begin_with<T>(
        &mut self,
        op: &impl AsyncFn(&ClientWrapper, bool) -> Result<T, OpError>,
    ) -> Result<T, SqlErrorKind> {
        let server = Arc::clone(&self.server);
        for attempt in 0..2 {
            let Tx::Open { conn, .. } = &self.tx else { break };
            let (begun, result) = server
                .block_on(async {
                    let (begun, result) = tokio::join!(ops::plain(conn, "BEGIN"), op(conn, false));
                    Ok((begun, result))
                })
                .map_err(|e| e.kind)?;
            match begun {
                Ok(()) => {
                    if let Tx::Open { failed, begun, .. } = &mut self.tx {
                        *begun = true;
                        *failed = result.as_ref().is_err_and(|e| e.from_server);
                    }
                    return match result {
                        Err(e) if e.broken => {
                            self.lose(&e.kind);
                            Err(e.kind)
                        }
                        other => other.map_err(|e| e.kind),
                    };
                }
                Err(e) if e.broken && attempt == 0 => {
                    let fresh = server.checkout()?;
                    if let Tx::Open { conn, .. } =
                        std::mem::replace(&mut self.tx, Tx::Open { conn: Box::new(fresh), failed: false, begun: false })
                    {
                        discard(conn);
                    }
                }
                // `BEGIN` on a live, idle connection fails only with the
                // connection; the server refusing it otherwise would leave the
                // statement run on its own, which no server here does.
                Err(e) => {
                    if let Tx::Open { conn, .. } = std::mem::replace(&mut self.tx, Tx::Idle) {
                        discard(conn);
                    }
                    return Err(e.kind);
                }
            }
        }
        Err(SqlErrorKind::Io("no connection could start a transaction".into()))
    }

    /// The pinned connection broke: discard it, remember the transaction as lost.
    fn lose(&mut self, why: &SqlErrorKind) {
        let reason = match why {
            SqlErrorKind::Io(m) => m.clone(),
            other => format!("{other:?}"),
        };
        if let Tx::Open { conn, .. } = std::mem::replace(&mut self.tx, Tx::Lost(reason)) {
            discard(conn);
        }
    }

    /// Ends the pinned connection's transaction with `ROLLBACK`; discards the
    /// connection if that fails.
    fn roll_back(&self, conn: Box<Object>) {
        if let Err(e) = self.server.block_on(ops::plain(&conn, "ROLLBACK")) {
            tracing::warn!(server = %self.server.location(), error = ?e.kind, "rolling back failed; closing the connection");
            discard(conn);
        }
    }
}

impl Connection for PgConnection {
    fn execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlErrorKind> {
        guard::check(statement)?;
        self.with_connection(async |conn, retry| ops::execute(conn, statement, params, retry).await)
    }

    fn query(&mut self, statement: &str, params: &[Value], max_bytes: u64) -> Result<Rows, SqlErrorKind> {
        guard::check(statement)?;
        self.with_connection(async |conn, retry| ops::query(conn, statement, params, max_bytes, retry).await)
    }

    fn in_transaction(&self) -> bool {
        !matches!(self.tx, Tx::Idle)
    }

    fn begin(&mut self) -> Result<(), SqlErrorKind> {
        if self.in_transaction() {
            return Err(SqlErrorKind::Transaction("a transaction is already open".into()));
        }
        // `BEGIN` itself goes with the first statement (`begin_with`).
        let conn = self.server.checkout()?;
        self.tx = Tx::Open { conn: Box::new(conn), failed: false, begun: false };
        Ok(())
    }

    fn commit(&mut self) -> Result<(), SqlErrorKind> {
        match std::mem::replace(&mut self.tx, Tx::Idle) {
            Tx::Idle => Err(SqlErrorKind::Transaction("no transaction is open".into())),
            Tx::Lost(why) => Err(SqlErrorKind::Io(format!(
                "the transaction's connection was lost ({why}); nothing of it was committed"
            ))),
            // Nothing reached the server: nothing to commit.
            Tx::Open { begun: false, .. } => Ok(()),
            Tx::Open { conn, failed: true, .. } => {
                self.roll_back(conn);
                Err(SqlErrorKind::Transaction(
                    "a statement of this transaction failed, which aborts a PostgreSQL transaction: it was rolled \
                     back and nothing was committed"
                        .into(),
                ))
            }
            Tx::Open { conn, failed: false, .. } => match self.server.block_on(ops::plain(&conn, "COMMIT")) {
                Ok(()) => Ok(()),
                Err(e) if e.broken => {
                    discard(conn);
                    Err(SqlErrorKind::Io(format!(
                        "the connection was lost while committing, so the transaction may or may not have \
                         committed: {:?}",
                        e.kind
                    )))
                }
                // The server refused the commit (a deferred constraint, a
                // serialization failure): the transaction is over, rolled back.
                Err(e) => Err(e.kind),
            },
        }
    }

    fn rollback(&mut self) -> Result<(), SqlErrorKind> {
        if let Tx::Open { conn, begun: true, .. } = std::mem::replace(&mut self.tx, Tx::Idle) {
            self.roll_back(conn);
        }
        Ok(())
    }

    fn execute_atomic(&mut self, statements: &[Statement]) -> Result<Vec<u64>, SqlErrorKind> {
        for statement in statements {
            guard::check(&statement.sql)?;
        }
        // A failed statement comes back as `Ok(Err(..))`, rolled back to the
        // savepoint: the transaction is not marked failed.
        self.with_connection(async |conn, _| ops::atomic(conn, statements).await)?
    }

    fn execute_plain(&mut self, statements: &str) -> Result<(), SqlErrorKind> {
        let restores = statements.trim_start().to_ascii_uppercase().starts_with("ROLLBACK TO");
        self.with_connection(async |conn, _| ops::plain(conn, statements).await)?;
        if restores && let Tx::Open { failed, .. } = &mut self.tx {
            *failed = false;
        }
        Ok(())
    }
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        // The instance is being discarded mid-transaction (a trap, a timeout):
        // closing the connection is the one rollback that needs no answer.
        // (A transaction that never began goes back to the pool clean.)
        if let Tx::Open { conn, begun: true, .. } = std::mem::replace(&mut self.tx, Tx::Idle) {
            discard(conn);
        }
    }
}

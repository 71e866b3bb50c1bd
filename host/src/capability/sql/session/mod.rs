//! One adapter instance's use of the database: its connection (opened on first
//! use) and the transaction rules of the contract. Dropping a session (its
//! instance was discarded after a trap or timeout) closes the connection, which
//! rolls back any open transaction.
//!
//! A session can also run a *commit group* ([`group`]): the transactions of
//! several adapter calls become savepoints of one SQLite transaction, committed
//! (and flushed) once for all of them.

mod group;

use std::sync::Arc;

use self::group::Group;
use super::deadline::CallDeadline;
use super::durability::{Durability, Reservation};
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
    /// The commit group this session runs calls in, if any.
    group: Option<Group>,
    /// The deadline of the adapter call it serves ([`super::deadline`]).
    deadline: Arc<CallDeadline>,
}

impl SqlSession {
    pub fn new(db: Arc<SqlDatabase>) -> Self {
        Self { db: Some(db), conn: None, turn: None, ticket: None, group: None, deadline: Arc::default() }
    }

    /// A session of an instance whose store does not grant `sql`.
    pub fn ungranted() -> Self {
        Self { db: None, conn: None, turn: None, ticket: None, group: None, deadline: Arc::default() }
    }

    pub fn database(&self) -> Option<&Arc<SqlDatabase>> {
        self.db.as_ref()
    }

    /// Sets the deadline of the adapter call this session serves from now on,
    /// or clears it (`None`) once the call has returned.
    pub fn set_deadline(&self, at: Option<std::time::Instant>) {
        self.deadline.set(at);
    }

    /// Whether the current call's deadline has passed: a statement that failed
    /// then was (most likely) interrupted by it.
    pub fn deadline_passed(&self) -> bool {
        self.deadline.passed()
    }

    fn conn(&mut self) -> Result<&mut Box<dyn Connection>, SqlErrorKind> {
        if self.conn.is_none() {
            let db = self.db.as_ref().ok_or_else(|| SqlErrorKind::AccessDenied("sql is not granted".into()))?;
            let mut conn = db.connect()?;
            conn.interrupt_after(Arc::clone(&self.deadline))?;
            self.conn = Some(conn);
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

    /// Runs `commit`, which may make this connection's writes visible to the
    /// others, under a ticket reserved first: a call that reads waits for it
    /// from then on. If the commit wrote, this call waits for its ticket.
    /// PostgreSQL orders its commits itself: no ticket.
    fn commit_with<T>(&mut self, commit: impl FnOnce(&mut Self) -> T) -> T {
        let mut pending = self
            .db
            .as_ref()
            .filter(|db| db.server.is_none())
            .map(|db| Pending { reserved: Some(db.durability().reserve()), durability: Arc::clone(db.durability()) });
        let outcome = commit(self);
        if let Some(ticket) = pending.as_mut().and_then(Pending::committed) {
            self.ticket = Some(ticket);
        }
        outcome
    }

    /// The database and the ticket this call must wait for before its answer is
    /// acknowledged (taken once per adapter call): the newer of its own
    /// commit's and the one that covers every commit it may have read
    /// (`Durability::unflushed`; none when all are durable). In a commit group
    /// that has begun, answers wait for the group's ticket, which covers both.
    pub fn take_ticket(&mut self) -> Option<(Arc<SqlDatabase>, u64)> {
        let db = self.db.as_ref()?;
        let read = if self.group_pending() { None } else { db.durability().unflushed() };
        let ticket = self.ticket.take().max(read)?;
        Some((Arc::clone(db), ticket))
    }

    pub fn execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlErrorKind> {
        if self.group.is_some() {
            return self.group_execute(statement, params);
        }
        let autocommit = !self.conn()?.in_transaction();
        if autocommit {
            // A statement on its own is a write transaction of its own.
            self.take_turn()?;
        }
        let changed = if autocommit {
            self.commit_with(|s| s.conn().and_then(|c| c.execute(statement, params)))
        } else {
            self.conn()?.execute(statement, params)
        };
        self.settle();
        changed
    }

    /// A statement that writes (`INSERT … RETURNING`, a pragma that sets)
    /// outside a transaction is a write transaction of its own, as in `execute`.
    /// Runs `statement` for the host, on the adapter's behalf, only if the
    /// database confirms it writes nothing; `None`, run nothing, otherwise.
    pub fn query_read_only(&mut self, statement: &str, params: &[Value]) -> Result<Option<Rows>, SqlErrorKind> {
        let max = self.db.as_ref().map_or(0, |db| db.max_result_bytes);
        self.conn()?.query_read_only(statement, params, max)
    }

    pub fn query(&mut self, statement: &str, params: &[Value]) -> Result<Rows, SqlErrorKind> {
        let max = self.db.as_ref().map_or(0, |db| db.max_result_bytes);
        let conn = self.conn()?;
        if conn.in_transaction() {
            return conn.query(statement, params, max);
        }
        if let Some(rows) = conn.query_unless_writes(statement, params, max)? {
            return Ok(rows);
        }
        self.take_turn()?;
        let rows = self.commit_with(|s| s.conn().and_then(|c| c.query(statement, params, max)));
        self.settle();
        rows
    }

    /// Runs every statement in one transaction (a savepoint inside an open one):
    /// all take effect or none does.
    pub fn execute_batch(&mut self, statements: &[Statement]) -> Result<Vec<u64>, SqlErrorKind> {
        if self.group.is_some() {
            return self.group_execute_batch(statements);
        }
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
        self.commit_with(|s| s.conn()?.commit())?;
        Ok(changes)
    }

    pub fn begin(&mut self) -> Result<(), SqlErrorKind> {
        if self.group.is_some() {
            return self.group_begin();
        }
        if self.conn()?.in_transaction() {
            return Err(SqlErrorKind::Transaction("a transaction is already open".into()));
        }
        self.take_turn()?;
        let begun = self.conn()?.begin();
        self.settle();
        begun
    }

    pub fn commit(&mut self) -> Result<(), SqlErrorKind> {
        if self.group.is_some() {
            return self.group_commit();
        }
        if !self.conn()?.in_transaction() {
            return Err(SqlErrorKind::Transaction("no transaction is open".into()));
        }
        let committed = self.commit_with(|s| s.conn()?.commit());
        self.settle();
        committed
    }

    pub fn rollback(&mut self) -> Result<(), SqlErrorKind> {
        if self.group.is_some() {
            return self.group_rollback();
        }
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
        if let Some(group) = &self.group {
            let open = group.call_open;
            self.group_rollback()?;
            return Ok(open);
        }
        let open = self.conn.as_ref().is_some_and(|c| c.in_transaction());
        if open {
            self.rollback()?;
        }
        Ok(open)
    }
}

/// A reserved ticket not yet counted committed: counted when the commit
/// returns, or when this is dropped (the commit panicked), so that no read
/// waits for it forever.
struct Pending {
    durability: Arc<Durability>,
    reserved: Option<Reservation>,
}

impl Pending {
    fn committed(&mut self) -> Option<u64> {
        self.reserved.take().and_then(|reserved| self.durability.committed(reserved))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.committed();
    }
}

#[cfg(test)]
mod tests;

//! Commit groups: the write transactions of several adapter calls, run back to
//! back on one connection, share one SQLite transaction and one commit.
//!
//! A SQLite commit writes every page the transaction dirtied to the WAL, one
//! frame per page; concurrent appends to different conversations dirty many of
//! the same pages (the conversations table, the index's inner pages), and each
//! commit costs two `pwrite`s per frame. A drainer running queued calls
//! ([`crate::adapter::pool`]) opens a group on its instance's session; within
//! it:
//!
//! - the group's transaction (`BEGIN IMMEDIATE`, holding this host's write turn)
//!   starts at the first write of any call;
//! - an adapter's `begin`/`commit`/`rollback` become `SAVEPOINT`/`RELEASE`/
//!   `ROLLBACK TO` of a savepoint of its own, so a call that rolls back, fails
//!   or traps undoes only its own writes;
//! - a statement outside an adapter transaction runs inside the group's (a
//!   failing statement is undone by SQLite on its own);
//! - [`close_group`](SqlSession::close_group) commits once for every call and
//!   hands out one group-commit ticket. The pool holds every call's answer
//!   until then: a call must never be acknowledged, nor another call's
//!   uncommitted write be seen by a caller, before that commit.
//!
//! If SQLite rolls the whole transaction back by itself (an I/O error, a full
//! disk), nothing more is written in the group and closing it fails: every call
//! in it gets the error.

use std::sync::Arc;

use super::super::value::Value;
use super::super::{SqlDatabase, SqlErrorKind};
use super::{SqlSession, Statement};

/// The savepoint an adapter's own transaction runs in.
const CALL_SAVEPOINT: &str = "SAVEPOINT stowage_call";
const CALL_RELEASE: &str = "RELEASE stowage_call";
const CALL_UNDO: &str = "ROLLBACK TO stowage_call; RELEASE stowage_call";

/// A session's open commit group.
#[derive(Default)]
pub struct Group {
    /// The group's transaction has begun (some call wrote).
    begun: bool,
    /// The current call's own transaction (a savepoint) is open.
    pub call_open: bool,
}

fn lost() -> SqlErrorKind {
    SqlErrorKind::Io("the database rolled the commit group back (an earlier statement failed badly)".into())
}

impl SqlSession {
    /// Runs the calls from now on in one commit group, if this session's
    /// database is a SQLite file (PostgreSQL stores commit per call). No-op
    /// when one is open already. `false`: no group.
    pub fn open_group(&mut self) -> bool {
        if self.group.is_some() {
            return true;
        }
        let sqlite = self.db.as_ref().is_some_and(|db| db.writers.is_some());
        let idle = !self.conn.as_ref().is_some_and(|c| c.in_transaction());
        if sqlite && idle {
            self.group = Some(Group::default());
        }
        self.group.is_some()
    }

    /// Whether the open group holds uncommitted writes: answers of calls run in
    /// it must wait for [`close_group`](Self::close_group).
    pub fn group_pending(&self) -> bool {
        self.group.as_ref().is_some_and(|g| g.begun)
    }

    /// Ends the group: undoes the current call's open transaction, if any, and
    /// commits the group's. The database and the ticket to wait for before any
    /// call of the group is acknowledged (`None`: nothing was written, or no
    /// flush is needed).
    pub fn close_group(&mut self) -> Result<Option<(Arc<SqlDatabase>, u64)>, SqlErrorKind> {
        let Some(group) = self.group.take() else { return Ok(None) };
        if !group.begun {
            return Ok(None);
        }
        let outcome = self.commit_with(|s| {
            let conn = s.conn()?;
            if !conn.in_transaction() {
                return Err(lost());
            }
            let undone = if group.call_open { conn.execute_plain(CALL_UNDO) } else { Ok(()) };
            let committed = undone.and_then(|()| conn.commit());
            if committed.is_err()
                && conn.in_transaction()
                && let Err(undo) = conn.rollback()
            {
                tracing::warn!(error = ?undo, "rolling back a commit group that failed to commit failed");
            }
            committed
        });
        self.settle();
        outcome?;
        Ok(self.take_ticket())
    }

    /// Starts the group's transaction at its first write; refuses writes once
    /// SQLite has rolled it back.
    fn group_write(&mut self) -> Result<(), SqlErrorKind> {
        let begun = self.group.as_ref().is_some_and(|g| g.begun);
        if begun {
            return if self.conn()?.in_transaction() { Ok(()) } else { Err(lost()) };
        }
        self.take_turn()?;
        let started = self.conn()?.begin();
        self.settle();
        started?;
        if let Some(group) = self.group.as_mut() {
            group.begun = true;
        }
        Ok(())
    }

    pub(super) fn group_execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlErrorKind> {
        self.group_write()?;
        self.conn()?.execute(statement, params)
    }

    pub(super) fn group_execute_batch(&mut self, statements: &[Statement]) -> Result<Vec<u64>, SqlErrorKind> {
        self.group_write()?;
        self.conn()?.execute_atomic(statements)
    }

    pub(super) fn group_begin(&mut self) -> Result<(), SqlErrorKind> {
        if self.group.as_ref().is_some_and(|g| g.call_open) {
            return Err(SqlErrorKind::Transaction("a transaction is already open".into()));
        }
        self.group_write()?;
        self.conn()?.execute_plain(CALL_SAVEPOINT)?;
        if let Some(group) = self.group.as_mut() {
            group.call_open = true;
        }
        Ok(())
    }

    pub(super) fn group_commit(&mut self) -> Result<(), SqlErrorKind> {
        if !self.group.as_ref().is_some_and(|g| g.call_open) {
            return Err(SqlErrorKind::Transaction("no transaction is open".into()));
        }
        self.call_closed();
        if !self.conn()?.in_transaction() {
            return Err(lost());
        }
        self.conn()?.execute_plain(CALL_RELEASE)
    }

    pub(super) fn group_rollback(&mut self) -> Result<(), SqlErrorKind> {
        if !self.group.as_ref().is_some_and(|g| g.call_open) {
            return Ok(());
        }
        // The call's transaction stays open until it is undone: should that
        // fail, closing the group undoes it again (or fails the group), never
        // commits it.
        match self.conn.as_mut() {
            Some(conn) if conn.in_transaction() => conn.execute_plain(CALL_UNDO)?,
            _ => {}
        }
        self.call_closed();
        Ok(())
    }

    fn call_closed(&mut self) {
        if let Some(group) = self.group.as_mut() {
            group.call_open = false;
        }
    }
}

#[cfg(test)]
mod tests;

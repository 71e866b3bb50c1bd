//! The deadline of the adapter call a session serves, where SQLite can see it.
//!
//! An adapter's code is interrupted at its call's deadline by wasmtime's epoch,
//! but a statement it sends runs in the host, where no epoch reaches: one that
//! never ends (a recursive CTE without a bound, a cross join of large tables)
//! held the call, its instance and its thread past `call_timeout`, for ever.
//! SQLite's progress handler, which a session's connection gets
//! ([`super::Connection::interrupt_after`]), asks [`CallDeadline::passed`]
//! every few thousand virtual-machine steps and interrupts the statement once
//! it is; the session then fails the adapter's call as the epoch would, with a
//! timeout that discards the instance (its connection, and any transaction it
//! held open, close with it). Statements the host runs on the session outside
//! a call (a commit group's commit, the rollback of a transaction an adapter
//! left open) run with no deadline. PostgreSQL connections are not interrupted
//! (the server's own `statement_timeout` is the operator's to set).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// No deadline.
const NONE: u64 = u64::MAX;

/// When the current call's time is up, in nanoseconds since [`base`].
#[derive(Debug)]
pub struct CallDeadline {
    at: AtomicU64,
}

impl Default for CallDeadline {
    fn default() -> Self {
        Self { at: AtomicU64::new(NONE) }
    }
}

/// The instant deadlines count from (the first one asked for).
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn since_base(at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(base()).as_nanos()).unwrap_or(NONE - 1).min(NONE - 1)
}

impl CallDeadline {
    /// Sets the deadline to `at`, or clears it (`None`).
    pub fn set(&self, at: Option<Instant>) {
        self.at.store(at.map_or(NONE, since_base), Ordering::Relaxed);
    }

    /// Whether a deadline is set and has passed.
    pub fn passed(&self) -> bool {
        let at = self.at.load(Ordering::Relaxed);
        at != NONE && since_base(Instant::now()) > at
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::{SqlDatabase, SqlSession, SqlSync};
    use super::*;
    use crate::wit::{SqlFailure, v0_2};

    /// Counts for ever: only an interrupt ends it.
    const ENDLESS: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n";

    /// Runs `f` on a thread, so that a statement SQLite failed to interrupt fails
    /// the test instead of hanging it.
    fn aside<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, &'static str> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(120)).map_err(|_| "the statement was never interrupted")
    }

    #[test]
    fn an_adapter_statement_that_never_ends_times_its_call_out_and_the_session_goes_on()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
        let mut session = SqlSession::new(Arc::new(db));
        let (session, failure) = aside(move || {
            session.set_deadline(Some(Instant::now() + Duration::from_millis(100)));
            // As the adapter's `query` import runs it.
            let failure = v0_2::sql::Host::query(&mut session, ENDLESS.into(), Vec::new()).err();
            (session, failure)
        })?;
        match failure {
            Some(SqlFailure::Trap(trap)) => {
                assert_eq!(trap.downcast_ref::<wasmtime::Trap>(), Some(&wasmtime::Trap::Interrupt))
            }
            other => panic!("expected the interrupt that times the call out, got {other:?}"),
        }
        // After the call (the deadline cleared), the host's own statements run.
        let mut session = session;
        session.set_deadline(None);
        let rows = session.query("SELECT 1", &[]).map_err(|e| format!("{e:?}"))?;
        assert_eq!(rows.rows.len(), 1);
        // A statement that fails for its own reasons before the deadline keeps its error.
        session.set_deadline(Some(Instant::now() + Duration::from_secs(600)));
        match v0_2::sql::Host::query(&mut session, "SELECT * FROM missing".into(), Vec::new()) {
            Err(SqlFailure::Report(_)) => {}
            other => panic!("expected the statement's own error, got {other:?}"),
        }
        Ok(())
    }

    #[test]
    fn a_deadline_passes_only_once_set_and_reached() {
        let deadline = CallDeadline::default();
        assert!(!deadline.passed(), "none set");
        deadline.set(Some(Instant::now() + Duration::from_secs(600)));
        assert!(!deadline.passed(), "not reached");
        deadline.set(Some(Instant::now() - Duration::from_millis(1)));
        assert!(deadline.passed());
        deadline.set(None);
        assert!(!deadline.passed(), "cleared");
    }
}

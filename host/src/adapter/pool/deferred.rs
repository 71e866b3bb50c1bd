//! Leaving a call's flush to a later call of the same task.
//!
//! An append to a conversation it creates on the way (`append_creating`) makes
//! up to three commits: a fresh database's schema (its first call migrates it),
//! the conversation, then the messages. All go to the same WAL, and the flush
//! that makes the last durable makes the others durable too. So inside
//! [`deferring`] a call that committed does not wait for a flush of its own: its
//! ticket is handed back to the task instead, which makes sure it is durable
//! ([`Deferred::durable`]) before it answers anyone. That costs nothing once a
//! later call's flush is done.

use std::cell::RefCell;
use std::future::Future;

use super::PendingSync;
use crate::error::Error;

tokio::task_local! {
    static DEFERRED: RefCell<PendingSync>;
}

/// A commit whose flush was left for later: wait for it with [`Deferred::durable`].
#[must_use = "a deferred commit must be made durable before its caller is answered"]
pub struct Deferred(PendingSync);

/// Runs `calls` (adapter calls made on this task) without waiting for their
/// commits to be durable. Returns the newest commit's ticket; a flush that covers
/// it covers every earlier commit to the same database.
pub async fn deferring<T>(calls: impl Future<Output = T>) -> (T, Deferred) {
    DEFERRED
        .scope(RefCell::new(None), async move {
            let out = calls.await;
            let pending = DEFERRED.with(|slot| slot.borrow_mut().take());
            (out, Deferred(pending))
        })
        .await
}

/// Whether this task defers its flushes (inside [`deferring`]).
pub(super) fn deferring_here() -> bool {
    DEFERRED.try_with(|_| ()).is_ok()
}

/// Inside [`deferring`], keeps `commit` for later and answers `true`: the call
/// must not wait for it. `false` elsewhere.
pub(super) fn defer(commit: &PendingSync) -> bool {
    DEFERRED
        .try_with(|slot| {
            if commit.is_some() {
                *slot.borrow_mut() = commit.clone();
            }
        })
        .is_ok()
}

impl Deferred {
    /// Returns once the deferred commit is durable, leading the flush if no one is.
    pub async fn durable(self) -> Result<(), Error> {
        let Some((db, ticket)) = self.0 else { return Ok(()) };
        db.durability().durable(ticket, false).await.map_err(|e| {
            Error::Storage(format!(
                "making the call's commit, or one it read, durable failed (it may or may not survive a power \
                 loss; retrying is safe): {e:?}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::capability::sql::{SqlDatabase, SqlSession, SqlSync};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deferred_commit_is_handed_back_to_the_task_and_made_durable_there()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Full));
        let mut session = SqlSession::new(Arc::clone(&db));
        let mut commit = |statement: &str| -> Result<(Arc<SqlDatabase>, u64), String> {
            session.begin().map_err(|e| format!("{e:?}"))?;
            session.execute(statement, &[]).map_err(|e| format!("{e:?}"))?;
            session.commit().map_err(|e| format!("{e:?}"))?;
            session.take_ticket().ok_or_else(|| "a full-sync commit has a ticket".to_owned())
        };
        let first = commit("CREATE TABLE t (x)")?;
        let second = commit("INSERT INTO t VALUES (1)")?;
        assert!(second.1 > first.1);

        assert!(!deferring_here() && !defer(&Some(first.clone())), "outside `deferring` a call waits itself");
        let (inside, deferred) = deferring(async {
            let kept = deferring_here() && defer(&Some(first.clone())) && defer(&Some(second.clone()));
            // A later call that committed nothing leaves the newest ticket in place.
            kept && defer(&None)
        })
        .await;
        assert!(inside, "inside `deferring` every call leaves its flush to the task");
        assert!(matches!(&deferred.0, Some((_, ticket)) if *ticket == second.1), "the newest ticket is kept");
        deferred.durable().await?;
        Deferred(None).durable().await?;
        Ok(())
    }
}

//! Group commit and background checkpoints for a SQLite database in WAL mode.
//!
//! Adapter connections commit with `synchronous=NORMAL`: a commit writes its
//! frames to the WAL but does not flush it. With `sql_sync = "full"` an adapter
//! call that committed is acknowledged only once an fsync of the WAL *started
//! after its commit* has finished: the first waiter becomes the leader and
//! flushes for everyone whose commit came before, the others wait for it. Many
//! concurrent appends (different conversations) thus share one flush, and each
//! caller still returns only when its batch is durable — as durable as
//! `synchronous=FULL`, which flushes the WAL at every commit.
//!
//! Checkpoints (copying the WAL into the database) would otherwise run inside a
//! commit once the WAL passes 1,000 pages, making that one append slow; adapter
//! connections turn automatic checkpoints off and a passive checkpoint runs on a
//! blocking task whenever the WAL has grown past [`CHECKPOINT_BYTES`]. SQLite
//! flushes the WAL before a checkpoint and the database after it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::wit::SqlErrorKind;

/// WAL size that triggers a background checkpoint (about 1,000 pages, SQLite's
/// own default threshold).
pub const CHECKPOINT_BYTES: u64 = 4 << 20;

#[derive(Default)]
struct State {
    /// Commits handed out a ticket so far.
    committed: u64,
    /// A flush is running.
    syncing: bool,
    /// The open WAL file (opened by the first flush; the directory is flushed then).
    wal: Option<File>,
}

/// The leader's turn: dropping it (a failed flush, or a leader dropped while
/// it waited for one) clears `syncing` and wakes the waiters so one of them
/// leads next.
struct Leading<'a>(&'a Durability);

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.0.state().syncing = false;
        self.0.durable.send_modify(|_| {});
    }
}

/// The group-commit and checkpoint coordinator of one database file.
pub struct Durability {
    db: PathBuf,
    wal: PathBuf,
    /// Wait for a flush before acknowledging (`sql_sync = "full"`).
    flush: bool,
    state: Mutex<State>,
    /// The highest ticket known durable.
    durable: watch::Sender<u64>,
    checkpointing: Arc<AtomicBool>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> SqlErrorKind {
    SqlErrorKind::Io(format!("{what} {}: {e}", path.display()))
}

impl Durability {
    pub fn new(db: &Path, flush: bool) -> Self {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        Self {
            db: db.to_path_buf(),
            wal: PathBuf::from(wal),
            flush,
            state: Mutex::new(State::default()),
            durable: watch::channel(0).0,
            checkpointing: Arc::new(AtomicBool::new(false)),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Called right after a commit returned: the commit's ticket, or `None` when
    /// commits need no flush.
    pub fn committed(&self) -> Option<u64> {
        let mut state = self.state();
        state.committed += 1;
        self.flush.then_some(state.committed)
    }

    /// Flushes the WAL (and, the first time, its directory entry).
    fn flush_wal(&self) -> Result<(), SqlErrorKind> {
        let file = {
            let mut state = self.state();
            match state.wal.as_ref() {
                Some(file) => file.try_clone().map_err(|e| io("reopening", &self.wal, e))?,
                None => {
                    let file = File::open(&self.wal).map_err(|e| io("opening", &self.wal, e))?;
                    if let Some(dir) = self.wal.parent() {
                        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("flushing", dir, e))?;
                    }
                    let clone = file.try_clone().map_err(|e| io("reopening", &self.wal, e))?;
                    state.wal = Some(file);
                    clone
                }
            }
        };
        file.sync_data().map_err(|e| io("flushing", &self.wal, e))
    }

    /// Returns once the commit with `ticket` is durable. The leader flushes on
    /// this thread when `inline`, else on the blocking pool.
    pub async fn durable(self: &Arc<Self>, ticket: u64, inline: bool) -> Result<(), SqlErrorKind> {
        let mut seen = self.durable.subscribe();
        loop {
            if *seen.borrow_and_update() >= ticket {
                return Ok(());
            }
            let lead = {
                let mut state = self.state();
                (!state.syncing).then(|| {
                    state.syncing = true;
                    state.committed
                })
            };
            let Some(target) = lead else {
                // Someone flushes; wait for them (a failed flush also notifies).
                if seen.changed().await.is_err() {
                    return Err(SqlErrorKind::Io("the database was closed before the commit was flushed".into()));
                }
                continue;
            };
            // Hands the lead back even if this future is dropped mid-flush.
            let leading = Leading(self);
            let flushed = if inline {
                tokio::task::block_in_place(|| self.flush_wal())
            } else {
                let me = Arc::clone(self);
                tokio::task::spawn_blocking(move || me.flush_wal())
                    .await
                    .map_err(|e| SqlErrorKind::Io(format!("the flush task failed: {e}")))
                    .and_then(|r| r)
            };
            match flushed {
                Ok(()) => {
                    self.state().syncing = false;
                    std::mem::forget(leading);
                    self.durable.send_modify(|durable| *durable = (*durable).max(target));
                    self.maybe_checkpoint();
                }
                Err(e) => {
                    // Wake the waiters so one of them tries again; this caller's
                    // commit is not known durable.
                    drop(leading);
                    return Err(e);
                }
            }
        }
    }

    /// Starts a passive checkpoint on a blocking task if the WAL is large and
    /// none is running.
    pub fn maybe_checkpoint(&self) {
        let large = std::fs::metadata(&self.wal).map(|m| m.len() >= CHECKPOINT_BYTES).unwrap_or(false);
        if !large || self.checkpointing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (db, running) = (self.db.clone(), Arc::clone(&self.checkpointing));
        let work = move || {
            if let Err(error) = checkpoint(&db) {
                tracing::warn!(db = %db.display(), %error, "background checkpoint failed; it will be retried");
            }
            running.store(false, Ordering::Release);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(work)),
            Err(_) => work(),
        }
    }
}

/// One passive checkpoint through a short-lived connection of the host's own.
fn checkpoint(db: &Path) -> rusqlite::Result<()> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = rusqlite::Connection::open_with_flags(db, flags)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_commits_share_flushes_and_all_become_durable() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("t.db");
        let conn = rusqlite::Connection::open(&db)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.execute_batch("CREATE TABLE t (x)")?;
        let durability = Arc::new(Durability::new(&db, true));
        let mut waiters = Vec::new();
        for _ in 0..32 {
            let ticket = durability.committed().ok_or("full sync hands out tickets")?;
            let d = Arc::clone(&durability);
            waiters.push(tokio::spawn(async move { d.durable(ticket, ticket % 2 == 0).await }));
        }
        for waiter in waiters {
            waiter.await?.map_err(|e| format!("{e:?}"))?;
        }
        assert_eq!(*durability.durable.borrow(), 32, "every ticket is durable");
        assert!(Durability::new(&db, false).committed().is_none(), "normal sync waits for nothing");
        Ok(())
    }
}

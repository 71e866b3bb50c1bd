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
//! connections turn automatic checkpoints off, report the WAL's length after
//! each commit (their WAL hook), and a checkpoint runs on a blocking task
//! whenever the WAL holds [`CHECKPOINT_FRAMES`] or more. SQLite flushes the WAL
//! before a checkpoint and the database after it.
//!
//! The checkpoint must let SQLite start the WAL over: the next writer rewinds it
//! to its beginning only if every frame was copied and no commit came since. A
//! passive checkpoint alone never gets there while writes keep coming (the next
//! commit always starts before it ends), so the WAL would grow forever, and
//! every flush of a growing file also commits its new size to the file system's
//! journal, several times dearer than flushing a file overwritten in place. So
//! the bulk copy runs passive, beside the writers, and a short catch-up copy of
//! what they committed meanwhile runs holding this host's write gate (see
//! `checkpoint`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::checkpoint::{self, CHECKPOINT_FRAMES, ClearOnDrop};
use super::gate::WriteGate;
use super::identity::{self, Identity};
use super::prefill::Prefiller;
use crate::wit::SqlErrorKind;

#[derive(Default)]
struct State {
    /// Commits handed out a ticket so far.
    committed: u64,
    /// A flush is running.
    syncing: bool,
    /// The open WAL file and its (device, inode), opened by the first flush (the
    /// directory is flushed then); shared, so a flush needs no descriptor of its own.
    wal: Option<(Arc<File>, Identity)>,
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
    /// Writes the WAL ahead of the commits (`prefill`).
    prefiller: Arc<Prefiller>,
    /// Frames in the WAL as of the latest commit (set by the connections' WAL hook).
    wal_frames: Arc<AtomicU64>,
    /// This host's writers, held off while a checkpoint catches up (`None`: none to hold).
    writers: Option<Arc<WriteGate>>,
    busy_timeout: Duration,
    /// Set by [`Self::refuse_flushes`].
    refused: AtomicBool,
    /// Makes the next flush of the WAL's data fail (tests).
    #[cfg(test)]
    fail_next_flush: AtomicBool,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> SqlErrorKind {
    SqlErrorKind::Io(format!("{what} {}: {e}", path.display()))
}

impl Durability {
    pub fn new(db: &Path, flush: bool, writers: Option<Arc<WriteGate>>, busy_timeout: Duration) -> Self {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        Self {
            db: db.to_path_buf(),
            prefiller: Arc::new(Prefiller::new(db, &wal, flush, writers.clone(), busy_timeout)),
            wal,
            flush,
            state: Mutex::new(State::default()),
            durable: watch::channel(0).0,
            checkpointing: Arc::new(AtomicBool::new(false)),
            wal_frames: Arc::new(AtomicU64::new(0)),
            writers,
            busy_timeout,
            refused: AtomicBool::new(false),
            #[cfg(test)]
            fail_next_flush: AtomicBool::new(false),
        }
    }

    /// Where connections report the WAL's length after each commit.
    pub fn wal_frames(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.wal_frames)
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
        let (ticket, wal) = {
            let mut state = self.state();
            state.committed += 1;
            (state.committed, state.wal.as_ref().map(|(_, identity)| *identity))
        };
        if self.flush {
            self.prefiller.after_commit(self.wal_frames.load(Ordering::Acquire), wal);
        } else {
            self.prefiller.after_unflushed_commit(self.wal_frames.load(Ordering::Acquire));
            // No flush follows to start the checkpoint: start it here.
            self.maybe_checkpoint();
        }
        self.flush.then_some(ticket)
    }

    /// The WAL's path.
    pub fn wal_path(&self) -> &Path {
        &self.wal
    }

    /// After a commit outside group commit started an empty WAL (while a store
    /// opens): at `sql_sync = "full"` the WAL is flushed now, its directory
    /// entry with it, so the first commit's flush is of its data alone. No
    /// ticket becomes durable by it.
    pub fn started(&self) -> Result<(), SqlErrorKind> {
        if self.flush { self.flush_wal() } else { Ok(()) }
    }

    /// After a failed write or flush that may have left the WAL's first frame
    /// off the disk while later flushes could report success (a failed flush's
    /// pages are marked clean all the same): every later flush fails, so no
    /// commit is acknowledged as durable on top of it.
    pub fn refuse_flushes(&self) {
        self.refused.store(true, Ordering::Release);
    }

    /// Flushes the WAL's data. A failure refuses every later flush: the kernel
    /// may have marked the pages it could not write clean, so a later flush
    /// would not write them again and could succeed, acknowledging commits that
    /// hang on frames off the disk. The store reports every later commit as not
    /// durable. Opening it again in the same boot does not recover what the
    /// failed flush lost (its pages are read from the page cache).
    fn flush_data(&self, file: &File) -> Result<(), SqlErrorKind> {
        #[cfg(test)]
        let injected = self.fail_next_flush.swap(false, Ordering::AcqRel);
        #[cfg(not(test))]
        let injected = false;
        let flushed = if injected { Err(std::io::Error::other("injected flush failure")) } else { file.sync_data() };
        flushed.map_err(|e| {
            tracing::error!(wal = %self.wal.display(), error = %e, "flushing the WAL failed; no later commit will be acknowledged as durable");
            self.refuse_flushes();
            io("flushing", &self.wal, e)
        })
    }

    /// Flushes the WAL (and, the first time, its directory entry).
    fn flush_wal(&self) -> Result<(), SqlErrorKind> {
        if self.refused.load(Ordering::Acquire) {
            return Err(SqlErrorKind::Io(format!(
                "flushing {}: an earlier write or flush of this WAL failed, so its frames may not all be on disk",
                self.wal.display()
            )));
        }
        let (file, opened) = {
            let mut state = self.state();
            // The WAL on disk now: when every connection closed, SQLite checkpointed
            // it into the (synced) database and deleted it, and the next connection
            // made a new file; the handle held from before would flush a deleted one.
            let current = match identity::of_path(&self.wal) {
                Ok(current) => current,
                // No WAL: everything committed was checkpointed and synced on close.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    state.wal = None;
                    return Ok(());
                }
                Err(e) => return Err(io("inspecting", &self.wal, e)),
            };
            match state.wal.as_ref() {
                Some((file, held)) if *held == current => (Arc::clone(file), None),
                _ => {
                    let file = File::open(&self.wal).map_err(|e| io("opening", &self.wal, e))?;
                    // The identity of what was opened, should the file have changed since.
                    let opened = identity::of_file(&file).map_err(|e| io("inspecting", &self.wal, e))?;
                    (Arc::new(file), Some(opened))
                }
            }
        };
        let Some(opened) = opened else {
            return self.flush_data(&file);
        };
        // A WAL this flush is the first to see: its directory entry is flushed
        // too, beside its data (two flushes at once, not one after the other),
        // and the file is kept only once both are done, so a failed flush of
        // either is tried again whole.
        let dir = self.wal.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let flush_dir = || File::open(dir).and_then(|d| d.sync_all());
        let (data, entry) = std::thread::scope(|scope| {
            match std::thread::Builder::new().spawn_scoped(scope, flush_dir) {
                Ok(entry) => {
                    let data = self.flush_data(&file);
                    (data, entry.join().unwrap_or_else(|_| Err(std::io::Error::other("the flush panicked"))))
                }
                // No thread to spare: one after the other.
                Err(_) => (self.flush_data(&file), flush_dir()),
            }
        });
        data?;
        // A directory entry that failed to flush is flushed again, whole, by the
        // next flush (the file is not kept as flushed).
        entry.map_err(|e| io("flushing", dir, e))?;
        let mut state = self.state();
        if state.wal.as_ref().is_none_or(|(_, held)| *held != opened) {
            state.wal = Some((file, opened));
        }
        Ok(())
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
            // On failure, wake the waiters so one of them tries again; this
            // caller's commit is not known durable.
            self.led(leading, target, flushed)?;
        }
    }

    /// On a blocking thread right after the commit: `Some` once the commit with
    /// `ticket` is durable (already, or by a flush led here, for every commit so
    /// far) or that flush failed; `None` when another caller is flushing (then
    /// wait for it with [`durable`](Self::durable)). Saves the hop to another
    /// thread that `durable` would take to flush.
    pub fn durable_here(&self, ticket: u64) -> Option<Result<(), SqlErrorKind>> {
        if *self.durable.borrow() >= ticket {
            return Some(Ok(()));
        }
        let target = {
            let mut state = self.state();
            if state.syncing {
                return None;
            }
            state.syncing = true;
            state.committed
        };
        let leading = Leading(self);
        let flushed = self.flush_wal();
        Some(self.led(leading, target, flushed))
    }

    /// Ends a lead: publishes `target` as durable if the flush worked.
    fn led(&self, leading: Leading<'_>, target: u64, flushed: Result<(), SqlErrorKind>) -> Result<(), SqlErrorKind> {
        match flushed {
            Ok(()) => {
                self.state().syncing = false;
                std::mem::forget(leading);
                self.durable.send_modify(|durable| *durable = (*durable).max(target));
                self.maybe_checkpoint();
                Ok(())
            }
            Err(e) => {
                drop(leading);
                Err(e)
            }
        }
    }

    /// Waits (at most twice `busy_timeout` and a few seconds: a task may wait
    /// that long for the write turn, then for SQLite's lock) for the prefill or
    /// checkpoint under way, whose connection would otherwise outlive the store's:
    /// when the store's last connection closes, SQLite checkpoints the WAL and
    /// deletes it only if no such connection is left. Then lets go of the WAL
    /// file held for flushes (the next flush opens it again).
    pub async fn settle(&self) {
        let deadline = std::time::Instant::now() + 2 * self.busy_timeout + Duration::from_secs(5);
        while (self.prefiller.running() || self.checkpointing.load(Ordering::Acquire))
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.state().wal = None;
    }

    /// Starts a checkpoint on a blocking task if the WAL is long and none is
    /// running.
    pub fn maybe_checkpoint(&self) {
        let long = self.wal_frames.load(Ordering::Acquire) >= CHECKPOINT_FRAMES;
        if !long || self.checkpointing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (db, running) = (self.db.clone(), ClearOnDrop(Arc::clone(&self.checkpointing)));
        let (writers, busy_timeout) = (self.writers.clone(), self.busy_timeout);
        let work = move || {
            let _running = running;
            if let Err(error) = checkpoint::checkpoint(&db, writers.as_ref(), busy_timeout) {
                tracing::warn!(db = %db.display(), %error, "background checkpoint failed; it will be retried");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(work)),
            Err(_) => work(),
        }
    }
}

#[cfg(test)]
mod tests;

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
//! before a checkpoint and the database after one that reached the WAL's end;
//! the host flushes what copies that stopped short left before the checkpoint
//! returns (see `checkpoint`).
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
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use self::flush::Leading;
use self::handoff::Handoff;
use super::checkpoint::{self, CHECKPOINT_FRAMES, ClearOnDrop};
use super::gate::WriteGate;
use super::identity::{Identity, Named};
use super::prefill::Prefiller;
use crate::wit::SqlErrorKind;

#[derive(Default)]
struct State {
    /// Tickets reserved so far: a commit takes one before its rows become
    /// visible to other connections.
    reserved: u64,
    /// Tickets whose commit has returned (worked or not).
    committed: u64,
    /// A waiter's ticket is reserved but its commit has not returned: the
    /// commit's return wakes the waiters.
    wake_on_commit: bool,
    /// A flush is running.
    syncing: bool,
    /// The open WAL file and its (device, inode), opened by the first flush (the
    /// directory is flushed then); shared, so a flush needs no descriptor of its own.
    wal: Option<(Arc<File>, Identity)>,
}

/// A commit's ticket, taken before it ran ([`Durability::reserve`]).
#[must_use = "a reserved ticket must be handed to `Durability::committed`, or reads that saw it wait forever"]
pub struct Reservation {
    ticket: u64,
    /// The WAL's commit count then: a commit that wrote moved it on.
    wal_commits: u64,
}

/// The group-commit and checkpoint coordinator of one database file.
pub struct Durability {
    db: PathBuf,
    wal: PathBuf,
    /// The WAL, looked up by name in its directory before each flush.
    wal_name: Named,
    /// Wait for a flush before acknowledging (`sql_sync = "full"`).
    flush: bool,
    /// The database file was put in place without flushing it or its directory
    /// ([`Self::placed_unflushed`]): the next flush flushes both, WAL or not.
    placed_unflushed: AtomicBool,
    state: Mutex<State>,
    /// The highest ticket known durable.
    durable: watch::Sender<u64>,
    checkpointing: Arc<AtomicBool>,
    /// Writes the WAL ahead of the commits (`prefill`).
    prefiller: Arc<Prefiller>,
    /// Frames in the WAL as of the latest commit (set by the connections' WAL hook).
    wal_frames: Arc<AtomicU64>,
    /// Commits that wrote to the WAL (counted by the same hook).
    wal_commits: Arc<AtomicU64>,
    /// This host's writers, held off while a checkpoint catches up (`None`: none to hold).
    writers: Option<Arc<WriteGate>>,
    busy_timeout: Duration,
    /// A lone writer's flush on a flusher thread, waited for by spinning (off
    /// until [`Self::set_flush_spin`]).
    handoff: Handoff,
    /// Set by [`Self::refuse_flushes`], and by a failed flush of the database
    /// after a checkpoint or of the WAL after a prefill; shared with the
    /// connections, which then close without checkpointing.
    refused: Arc<AtomicBool>,
    /// Makes the next flush of the WAL's data fail (tests).
    #[cfg(test)]
    fail_next_flush: AtomicBool,
    /// Holds every flush of the WAL's data until the test lets it go (tests).
    #[cfg(test)]
    hold_flushes: Mutex<Option<tests::Hold>>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> SqlErrorKind {
    SqlErrorKind::Io(format!("{what} {}: {e}", path.display()))
}

impl Durability {
    pub fn new(db: &Path, flush: bool, writers: Option<Arc<WriteGate>>, busy_timeout: Duration) -> Self {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let refused = Arc::new(AtomicBool::new(false));
        let prefiller = Arc::new(Prefiller::new(db, &wal, flush, writers.clone(), busy_timeout, Arc::clone(&refused)));
        let checkpointing = Arc::new(AtomicBool::new(false));
        Self {
            db: db.to_path_buf(),
            handoff: Handoff::new(Duration::ZERO, [prefiller.running_flag(), Arc::clone(&checkpointing)]),
            prefiller,
            wal_name: Named::new(&wal),
            wal,
            flush,
            placed_unflushed: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            durable: watch::channel(0).0,
            checkpointing,
            wal_frames: Arc::new(AtomicU64::new(0)),
            wal_commits: Arc::new(AtomicU64::new(0)),
            writers,
            busy_timeout,
            refused,
            #[cfg(test)]
            fail_next_flush: AtomicBool::new(false),
            #[cfg(test)]
            hold_flushes: Mutex::new(None),
        }
    }

    /// How long a lone writer spins for its flush on the flusher thread, and the
    /// flusher for the next one (`Limits::flush_spin_us`; zero: the writer
    /// flushes on its own thread). See `handoff`.
    pub fn set_flush_spin(&self, spin: Duration) {
        self.handoff.set_spin(spin);
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

    /// Where connections count the commits that wrote to the WAL.
    pub fn wal_commits(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.wal_commits)
    }

    /// Called under this host's write turn right before a commit: from then on
    /// its rows may be visible to other connections, so a call that reads waits
    /// for its ticket ([`Self::unflushed`]). [`Self::committed`] must follow,
    /// whatever the commit's outcome.
    pub fn reserve(&self) -> Reservation {
        let mut state = self.state();
        state.reserved += 1;
        Reservation { ticket: state.reserved, wal_commits: self.wal_commits.load(Ordering::Acquire) }
    }

    /// Called once the commit `reserved` for returned, worked or not: its ticket
    /// if it wrote to the WAL, or `None` when it did not or commits need no
    /// flush. A commit that wrote nothing is durable as soon as the one before it.
    pub fn committed(&self, reserved: Reservation) -> Option<u64> {
        let ticket = reserved.ticket;
        let wrote = self.wal_commits.load(Ordering::Acquire) != reserved.wal_commits;
        let (wake, wal) = {
            let mut state = self.state();
            state.committed = state.committed.max(ticket);
            (std::mem::take(&mut state.wake_on_commit), state.wal.as_ref().map(|(_, identity)| *identity))
        };
        if !wrote {
            self.durable.send_if_modified(|durable| {
                let nothing_to_flush = *durable + 1 >= ticket;
                if nothing_to_flush {
                    *durable = (*durable).max(ticket);
                }
                nothing_to_flush || wake
            });
            return None;
        }
        if wake {
            self.durable.send_modify(|_| {});
        }
        if self.flush {
            self.prefiller.after_commit(self.wal_frames.load(Ordering::Acquire), wal);
        } else {
            self.prefiller.after_unflushed_commit(self.wal_frames.load(Ordering::Acquire));
            // No flush follows to start the checkpoint: start it here.
            self.maybe_checkpoint();
        }
        self.flush.then_some(ticket)
    }

    /// Set once flushes are refused: a connection that closes then must not
    /// checkpoint (see [`Self::refuse_flushes`]).
    pub fn refusal(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.refused)
    }

    /// At `sql_sync = "full"`, when some commit is not yet known durable: the
    /// ticket that covers every commit so far, one under way included (its rows
    /// may be visible before it returns). A call that committed nothing
    /// waits for it before it answers, since what it read may hang on such a
    /// commit (another caller's under way, or one whose flush failed: a retried
    /// create then finds what a crash could take back).
    pub fn unflushed(&self) -> Option<u64> {
        if !self.flush {
            return None;
        }
        let reserved = self.state().reserved;
        (reserved > *self.durable.borrow()).then_some(reserved)
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
        if self.flush { self.flush_wal(false) } else { Ok(()) }
    }

    /// After a failed write or flush that may have left the WAL's first frame
    /// off the disk while later flushes could report success (a failed flush's
    /// pages are marked clean all the same): every later flush fails, so no
    /// commit is acknowledged as durable on top of it. Checkpoints stop too, and
    /// the store's connections close without one: a checkpoint that reached the
    /// WAL's end would let the next writer start it over, and the WAL may hold
    /// the only copy on disk of what the failed flush lost.
    pub fn refuse_flushes(&self) {
        self.refused.store(true, Ordering::Release);
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
                if state.committed < ticket {
                    // The commit is under way (a read saw it): its return wakes us.
                    state.wake_on_commit = true;
                    None
                } else {
                    (!state.syncing).then(|| {
                        state.syncing = true;
                        state.committed
                    })
                }
            };
            let Some(target) = lead else {
                // Someone flushes, or commits; wait for them (a failed flush also notifies).
                if seen.changed().await.is_err() {
                    return Err(SqlErrorKind::Io("the database was closed before the commit was flushed".into()));
                }
                continue;
            };
            // On failure the waiters are woken so one of them tries again; this
            // caller's commit is not known durable.
            if inline {
                let leading = Leading::new(&**self);
                tokio::task::block_in_place(|| self.led(leading, target, self.flush_wal(false)))?;
            } else {
                // The flush owns the lead: should this future be dropped, the
                // lead passes on only once the flush is over (a second flush
                // beside it could succeed before this one's failure refuses).
                let (leading, me) = (Leading::new(Arc::clone(self)), Arc::clone(self));
                tokio::task::spawn_blocking(move || me.led(leading, target, me.flush_wal(false)))
                    .await
                    .map_err(|e| SqlErrorKind::Io(format!("the flush task failed: {e}")))??;
            }
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
        let (target, alone) = {
            let mut state = self.state();
            if state.syncing || state.committed < ticket {
                return None;
            }
            state.syncing = true;
            // No commit came after this one's: a writer alone, whose flush may
            // be handed off unless a checkpoint or prefill needs a core (see
            // `handoff`).
            (state.committed, state.reserved == state.committed && !self.handoff.background())
        };
        let leading = Leading::new(self);
        Some(self.led(leading, target, self.flush_wal(alone)))
    }

    /// Ends a lead: publishes `target` as durable if the flush worked.
    fn led<D: Deref<Target = Durability>>(
        &self,
        leading: Leading<D>,
        target: u64,
        flushed: Result<(), SqlErrorKind>,
    ) -> Result<(), SqlErrorKind> {
        match flushed {
            Ok(()) => {
                self.state().syncing = false;
                leading.disarm();
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
        if !long || self.refused.load(Ordering::Acquire) || self.checkpointing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (db, running) = (self.db.clone(), ClearOnDrop(Arc::clone(&self.checkpointing)));
        let (writers, busy_timeout, refused) = (self.writers.clone(), self.busy_timeout, Arc::clone(&self.refused));
        let work = move || {
            let _running = running;
            match checkpoint::checkpoint(&db, writers.as_ref(), busy_timeout, &refused) {
                Ok(()) => {}
                Err(error @ checkpoint::CheckpointError::Flush(_)) => tracing::error!(
                    db = %db.display(), %error,
                    "flushing the database after a checkpoint failed; no later commit will be acknowledged as durable"
                ),
                Err(error) if refused.load(Ordering::Acquire) => tracing::error!(
                    db = %db.display(), %error,
                    "a checkpoint's write or flush failed; no later commit will be acknowledged as durable"
                ),
                Err(error) => {
                    tracing::warn!(db = %db.display(), %error, "background checkpoint failed; it will be retried")
                }
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(work)),
            Err(_) => work(),
        }
    }
}

mod cpus;
mod flush;
mod handoff;
#[cfg(test)]
mod tests;

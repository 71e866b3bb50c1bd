//! A lone writer's flush, handed to a flusher thread and waited for by spinning.
//!
//! A caller that flushes the WAL itself (`fdatasync`) sleeps in the kernel for
//! the disk, and its core runs the file system's and the block layer's flush
//! path meanwhile, then idles. The next call then finds that core's caches
//! cold: on the bench machine (2 vCPUs) a sequential append's user-space time
//! was ~3× its time at `sql_sync = "normal"`, where no flush runs between
//! calls, and the host's path (adapter boundary, allocator, SQLite) is larger
//! than a native program's. Here the flush runs on a thread of the store's own,
//! which takes the next flush while it spins for a short while after the last
//! one, and the caller spins until the flush is done: both stay on their cores,
//! hot, and neither waits to be woken. Each side spins at most
//! `Limits::flush_spin_us`, then sleeps (a slow disk, an idle store). Off by
//! default (0): measured, it helped single appends (1.16× → 1.10× native) but
//! not 4-message turns, and it fattened both tails (BENCHMARKS.md, thirteenth
//! sitting); with it off, it costs a flush a few atomic loads.
//!
//! Only for a writer alone: a flush that other commits wait on, or while others
//! queue, is led on the caller's thread as before, since spinning would take a
//! core from the callers that have work (group commit, phase E). Nor while a
//! checkpoint or a WAL prefill runs: their threads need a core too (with both
//! sides spinning beside them on a 2-core machine, phase B's p99 rose from
//! ~0.35 to 0.7–1.1 ms), so the flusher stops spinning and sleeps.
//!
//! This is InnoDB's redo-log design in small (dedicated flusher threads; user
//! threads spin for a flush below a time bound, then sleep).

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::cpus::{self, Placement};

/// What the caller and the flusher share. Neither takes the lock on its way
/// through a flush unless the other sleeps: a thread that found the lock held
/// would sleep on it, the very wait the handoff is there to avoid.
struct Shared {
    /// Flushes asked for so far; the flusher runs the newest (at most one is
    /// ever outstanding: one leader flushes at a time).
    asked: AtomicU64,
    /// Flushes finished so far (their outcome is in the slot first).
    done: AtomicU64,
    /// The flusher sleeps on `wake` (checked after `asked` moves on).
    flusher_asleep: AtomicBool,
    /// The caller sleeps on `wake` (checked after `done` moves on).
    caller_asleep: AtomicBool,
    /// Times a caller woke the flusher to spin for the next flush.
    primed: AtomicU64,
    /// The CPUs the flusher and the latest caller last ran on (`usize::MAX`:
    /// not known). A caller on the flusher's CPU flushes itself, and the
    /// flusher moves off that CPU (see `cpus`).
    flusher_cpu: AtomicUsize,
    caller_cpu: AtomicUsize,
    slot: Mutex<Slot>,
    wake: Condvar,
    /// How long each side spins, in nanoseconds (0: no handoff).
    spin_ns: AtomicU64,
    /// Set while background work (a checkpoint, a prefill) runs.
    background: [Arc<AtomicBool>; 2],
}

#[derive(Default)]
struct Slot {
    /// The file of the flush asked for, taken by the flusher.
    file: Option<Arc<File>>,
    /// The outcome of the flush numbered `done`.
    outcome: Option<io::Result<()>>,
    /// The handoff is dropped: the flusher ends.
    closed: bool,
}

impl Shared {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn background(&self) -> bool {
        self.background.iter().any(|flag| flag.load(Ordering::Acquire))
    }

    fn spin(&self) -> Duration {
        Duration::from_nanos(self.spin_ns.load(Ordering::Relaxed))
    }

    /// Spins until `ready` or `spin` has passed: whether it became ready.
    fn spin_until(&self, ready: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        loop {
            for _ in 0..64 {
                if ready() {
                    return true;
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= self.spin() {
                return ready();
            }
        }
    }
}

fn nanos(spin: Duration) -> u64 {
    u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX)
}

/// A store's flusher thread, started on first use; it ends when this drops.
pub(super) struct Handoff {
    shared: Arc<Shared>,
    started: std::sync::OnceLock<bool>,
}

impl Handoff {
    /// Spinning at most `spin` on each side (`Duration::ZERO` turns it off),
    /// and not while either `background` flag is set.
    pub(super) fn new(spin: Duration, background: [Arc<AtomicBool>; 2]) -> Self {
        let shared = Shared {
            asked: AtomicU64::new(0),
            done: AtomicU64::new(0),
            flusher_asleep: AtomicBool::new(false),
            caller_asleep: AtomicBool::new(false),
            primed: AtomicU64::new(0),
            flusher_cpu: AtomicUsize::new(usize::MAX),
            caller_cpu: AtomicUsize::new(usize::MAX),
            slot: Mutex::new(Slot::default()),
            wake: Condvar::new(),
            spin_ns: AtomicU64::new(nanos(spin)),
            background,
        };
        Self { shared: Arc::new(shared), started: std::sync::OnceLock::new() }
    }

    /// Sets how long each side spins (`Duration::ZERO`: no handoff).
    pub(super) fn set_spin(&self, spin: Duration) {
        self.shared.spin_ns.store(nanos(spin), Ordering::Relaxed);
    }

    /// Background work runs: flush on the caller's thread.
    pub(super) fn background(&self) -> bool {
        self.shared.background()
    }

    /// Whether flushes are handed off (starts the flusher the first time).
    pub(super) fn enabled(&self) -> bool {
        !self.shared.spin().is_zero() && *self.started.get_or_init(|| self.start())
    }

    /// Whether this flush goes to the flusher: it is enabled, spinning for one
    /// (asleep, waking it would cost what the handoff saves), and on another
    /// CPU than this thread's.
    pub(super) fn ready(&self) -> bool {
        let shared = &*self.shared;
        if !self.enabled() || shared.flusher_asleep.load(Ordering::SeqCst) {
            return false;
        }
        let cpu = cpus::current();
        shared.caller_cpu.store(cpu, Ordering::Relaxed);
        cpu == usize::MAX || cpu != shared.flusher_cpu.load(Ordering::Relaxed)
    }

    /// After a flush on the caller's thread: wakes the flusher, if it sleeps,
    /// to spin for the next one.
    pub(super) fn prime(&self) {
        let shared = &*self.shared;
        if self.enabled() && shared.flusher_asleep.load(Ordering::SeqCst) {
            shared.primed.fetch_add(1, Ordering::SeqCst);
            let _slot = shared.slot();
            shared.wake.notify_all();
        }
    }

    fn start(&self) -> bool {
        let placement = Placement::of_this_thread();
        if !placement.spread() {
            return false;
        }
        let shared = Arc::clone(&self.shared);
        let started =
            std::thread::Builder::new().name("stowage-flush".into()).spawn(move || flusher(&shared, &placement));
        if let Err(error) = &started {
            tracing::warn!(%error, "no flusher thread; lone writers flush on their own thread");
        }
        started.is_ok()
    }

    /// Flushes `file`'s data on the flusher thread and waits for it (see the
    /// module). Call only when [`enabled`](Self::enabled) (as [`ready`](Self::ready)
    /// is), one at a time.
    pub(super) fn sync_data(&self, file: &Arc<File>) -> io::Result<()> {
        let shared = &*self.shared;
        shared.slot().file = Some(Arc::clone(file));
        let ticket = shared.asked.fetch_add(1, Ordering::SeqCst) + 1;
        if shared.flusher_asleep.load(Ordering::SeqCst) {
            let _slot = shared.slot();
            shared.wake.notify_all();
        }
        let finished = || shared.done.load(Ordering::SeqCst) >= ticket;
        if !shared.spin_until(finished) {
            let mut slot = shared.slot();
            shared.caller_asleep.store(true, Ordering::SeqCst);
            // The flusher finishes a flush asked for before it looks at `closed`.
            while !finished() {
                slot = shared.wake.wait(slot).unwrap_or_else(PoisonError::into_inner);
            }
            shared.caller_asleep.store(false, Ordering::SeqCst);
        }
        let outcome = shared.slot().outcome.take();
        outcome.unwrap_or_else(|| Err(io::Error::other("the flusher left no outcome for the flush")))
    }
}

#[cfg(test)]
impl Handoff {
    /// Flushes the flusher thread ran.
    pub(super) fn flushes(&self) -> u64 {
        self.shared.done.load(Ordering::Acquire)
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        self.shared.slot().closed = true;
        self.shared.wake.notify_all();
    }
}

/// The flusher thread: flushes what is asked, spinning for the next request
/// after each, then sleeping.
fn flusher(shared: &Shared, placement: &Placement) {
    let mut served = 0;
    loop {
        let asked = || shared.asked.load(Ordering::SeqCst) > served;
        let cpu = cpus::current();
        shared.flusher_cpu.store(cpu, Ordering::Relaxed);
        let crowded = || cpu != usize::MAX && shared.caller_cpu.load(Ordering::Relaxed) == cpu;
        shared.spin_until(|| asked() || shared.background() || crowded());
        // A caller on this CPU: spin on from another one.
        if !asked() && crowded() && !shared.background() && placement.avoid(cpu) {
            continue;
        }
        if !asked() {
            let mut slot = shared.slot();
            let primed = shared.primed.load(Ordering::SeqCst);
            shared.flusher_asleep.store(true, Ordering::SeqCst);
            while !asked() && !slot.closed && shared.primed.load(Ordering::SeqCst) == primed {
                slot = shared.wake.wait(slot).unwrap_or_else(PoisonError::into_inner);
            }
            shared.flusher_asleep.store(false, Ordering::SeqCst);
            if slot.closed && !asked() {
                return;
            }
            if !asked() {
                continue;
            }
        }
        let ticket = shared.asked.load(Ordering::SeqCst);
        let file = shared.slot().file.take();
        let outcome = match file {
            Some(file) => file.sync_data(),
            None => Err(io::Error::other("a flush was asked for without a file")),
        };
        served = ticket;
        shared.slot().outcome = Some(outcome);
        shared.done.store(ticket, Ordering::SeqCst);
        if shared.caller_asleep.load(Ordering::SeqCst) {
            let _slot = shared.slot();
            shared.wake.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> [Arc<AtomicBool>; 2] {
        [Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false))]
    }

    #[test]
    fn flushes_run_on_the_flusher_and_report_their_outcome() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = Arc::new(File::create(dir.path().join("wal"))?);
        // Spinning long enough to catch each flush, and not at all (sleeps at once).
        for spin in [Duration::from_millis(50), Duration::from_nanos(1)] {
            let handoff = Handoff::new(spin, flags());
            assert!(handoff.enabled());
            for _ in 0..20 {
                handoff.sync_data(&file)?;
            }
            // Waiting past the spin: the flusher sleeps, and is woken.
            std::thread::sleep(spin.max(Duration::from_millis(2)) * 2);
            handoff.sync_data(&file)?;
        }
        let off = Handoff::new(Duration::ZERO, flags());
        assert!(!off.enabled(), "zero spin turns the handoff off");
        off.set_spin(Duration::from_micros(1));
        assert!(off.enabled());
        off.sync_data(&file)?;
        Ok(())
    }

    #[test]
    fn a_failed_flush_is_the_callers_error() -> Result<(), Box<dyn std::error::Error>> {
        // A pipe cannot be flushed (EINVAL): the flusher's error reaches the caller.
        let (reader, _writer) = std::io::pipe()?;
        let pipe = Arc::new(File::from(std::os::fd::OwnedFd::from(reader)));
        let handoff = Handoff::new(Duration::from_micros(100), flags());
        assert!(handoff.enabled());
        assert!(handoff.sync_data(&pipe).is_err());
        let dir = tempfile::tempdir()?;
        handoff.sync_data(&Arc::new(File::create(dir.path().join("wal"))?))?;
        Ok(())
    }

    #[test]
    fn a_dropped_handoff_ends_its_thread() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = Arc::new(File::create(dir.path().join("wal"))?);
        let handoff = Handoff::new(Duration::from_micros(10), flags());
        assert!(handoff.enabled());
        handoff.sync_data(&file)?;
        let shared = Arc::downgrade(&handoff.shared);
        drop(handoff);
        let deadline = Instant::now() + Duration::from_secs(10);
        while shared.strong_count() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(shared.strong_count(), 0, "the flusher thread let go of its state");
        Ok(())
    }
}

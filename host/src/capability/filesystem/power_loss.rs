//! Power loss, simulated at the WASI boundary (cargo feature `fault-injection`;
//! tests only, never in the shipped binary). The LazyFS idea, done where the
//! host owns the boundary.
//!
//! A [`PowerLoss`] handle given to a store ([`StoreConfig::power_loss`]) becomes
//! a simulated disk under the adapter's `/data` preopen:
//! - the adapter's `sync` and `sync-data` calls do not reach the real disk; they
//!   record what they would have made durable ([`disk`] states the model: strict
//!   POSIX, a name is durable only once its directory is synced);
//! - every mutating filesystem call (`open-at`, `rename-at`, `unlink-file-at`,
//!   `create-directory-at`, `remove-directory-at`, `set-size`, `write`,
//!   `write-via-stream`, `append-via-stream`, `sync`, `sync-data`) is a crash
//!   point: after [`PowerLoss::crash_after`]`(n)` the call after the next `n`
//!   traps, and so does every later one, until the cut
//!   ([`PowerLoss::crash_after_syncs`] counts only syncs: the richest points,
//!   where everything written since the last sync is in flight). A call that
//!   traps never returns, so nothing it was doing is acknowledged;
//! - [`PowerLoss::cut`] then rewrites the directory to what the disk would hold
//!   after the power came back ([`image`]: lost, kept, torn or zero-filled
//!   data, reverted or committed directory changes), and the next store opened
//!   on it finds exactly that.
//!
//! The guest's random seed and wall clock are made deterministic per instance,
//! so a seed replays the same calls, names and failures.
//!
//! [`StoreConfig::power_loss`]: crate::StoreConfig::power_loss

mod disk;
mod image;
mod shadow;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use wasmtime_wasi::{HostWallClock, WasiCtxBuilder};

use self::disk::{Disk, Ino, Tree};
use self::image::{Crash, Rng};
pub use self::shadow::add_to_linker;

/// What happens to directory changes that were never fsynced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metadata {
    /// All are lost (strict POSIX: only a directory's fsync makes its entries durable).
    #[default]
    Strict,
    /// Each directory independently keeps either its durable entries or its
    /// current ones (a file system may commit pending changes at any time).
    Any,
}

/// What a cut did, for test diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CutReport {
    /// A call trapped at the crash point (else the cut came between calls).
    pub crashed: bool,
    /// Crash points passed since the previous cut.
    pub calls: u64,
    pub files_lost: u32,
    pub files_kept: u32,
    pub files_torn: u32,
    pub dirs_reverted: u32,
    pub dirs_rolled_forward: u32,
}

impl fmt::Display for CutReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} after {} calls: files lost {}, kept {}, torn {}; directories reverted {}, rolled forward {}",
            if self.crashed { "crash" } else { "cut between calls" },
            self.calls,
            self.files_lost,
            self.files_kept,
            self.files_torn,
            self.dirs_reverted,
            self.dirs_rolled_forward
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PowerLossError {
    #[error("no store has used this power-loss handle yet: there is no disk to cut")]
    Unbound,
    #[error("a power-loss handle simulates one adapter directory ({bound}); it cannot also serve {other}")]
    OtherDirectory { bound: PathBuf, other: PathBuf },
    #[error("power-loss simulation: {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("power-loss simulation failed during an adapter call: {0}")]
    Model(String),
}

/// The trap a crash point raises.
#[derive(Debug, thiserror::Error)]
#[error("simulated power cut (fault injection) at filesystem call {call}")]
pub struct PowerCut {
    pub call: u64,
}

/// Crash points (of a kind) still allowed to pass before the crash.
#[derive(Clone, Copy)]
enum Countdown {
    Calls(u64),
    Syncs(u64),
}

struct State {
    disk: Option<Disk>,
    metadata: Metadata,
    countdown: Option<Countdown>,
    crashed: bool,
    calls: u64,
    cuts: u64,
    instances: u64,
    /// A failure of the model during a call, reported by the next cut.
    failure: Option<String>,
}

/// A simulated disk under one store's adapter directory. Cheap to clone.
#[derive(Clone)]
pub struct PowerLoss {
    seed: u64,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for PowerLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PowerLoss").field("seed", &self.seed).finish_non_exhaustive()
    }
}

impl PowerLoss {
    /// A disk whose failures (and guests' randomness) derive from `seed`.
    pub fn new(seed: u64) -> Self {
        let state = State {
            disk: None,
            metadata: Metadata::Strict,
            countdown: None,
            crashed: false,
            calls: 0,
            cuts: 0,
            instances: 0,
            failure: None,
        };
        Self { seed, state: Arc::new(Mutex::new(state)) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How the next cut treats directory changes that were never synced.
    pub fn set_metadata(&self, metadata: Metadata) {
        self.state().metadata = metadata;
    }

    /// The next `calls` crash points pass; the one after traps, and every one
    /// after it until [`cut`](Self::cut).
    pub fn crash_after(&self, calls: u64) {
        self.state().countdown = Some(Countdown::Calls(calls));
    }

    /// The next `syncs` calls of `sync`/`sync-data` pass; the one after traps
    /// (and then every crash point, until [`cut`](Self::cut)).
    pub fn crash_after_syncs(&self, syncs: u64) {
        self.state().countdown = Some(Countdown::Syncs(syncs));
    }

    /// No crash unless armed again (a crash that happened stays until the cut).
    pub fn disarm(&self) {
        self.state().countdown = None;
    }

    /// Whether the crash point was reached.
    pub fn crashed(&self) -> bool {
        self.state().crashed
    }

    /// Crash points passed since the last cut.
    pub fn calls(&self) -> u64 {
        self.state().calls
    }

    /// Cuts the power: rewrites the adapter directory to what survives. Close
    /// every store using it first; after the cut, everything on disk is durable.
    pub fn cut(&self) -> Result<CutReport, PowerLossError> {
        let mut state = self.state();
        if let Some(failure) = state.failure.take() {
            return Err(PowerLossError::Model(failure));
        }
        let root = match &state.disk {
            Some(disk) => disk.root.clone(),
            None => return Err(PowerLossError::Unbound),
        };
        let io = |what: &str| {
            let what = format!("{what} {}", root.display());
            move |source| PowerLossError::Io { what, source }
        };
        let (_, tree) = Tree::walk(&root).map_err(io("reading"))?;
        let report = CutReport { crashed: state.crashed, calls: state.calls, ..CutReport::default() };
        let rng = Rng::new(mix(self.seed, state.cuts));
        let metadata = state.metadata;
        let Some(disk) = state.disk.as_mut() else { return Err(PowerLossError::Unbound) };
        disk.observe(&tree).map_err(io("pinning the files of"))?;
        let mut crash = Crash::new(disk, &tree, rng, metadata, report);
        let survivors = crash.root().map_err(io("reading the files of"))?;
        let report = crash.report;
        image::write(&root, &survivors).map_err(io("rewriting"))?;
        state.disk = Some(Disk::baseline(&root).map_err(io("reading"))?);
        state.cuts += 1;
        state.calls = 0;
        state.crashed = false;
        state.countdown = None;
        Ok(report)
    }

    /// A crash point (`sync`: a `sync` or `sync-data` call): traps if the crash
    /// is due (or past).
    fn crash_point(&self, sync: bool) -> wasmtime::Result<()> {
        let mut state = self.state();
        state.calls += 1;
        let call = state.calls;
        let (due, next) = match state.countdown {
            Some(Countdown::Calls(0)) => (true, None),
            Some(Countdown::Syncs(0)) if sync => (true, None),
            Some(Countdown::Calls(n)) => (false, Some(Countdown::Calls(n - 1))),
            Some(Countdown::Syncs(n)) if sync => (false, Some(Countdown::Syncs(n - 1))),
            other => (false, other),
        };
        state.countdown = next;
        if due {
            state.crashed = true;
        }
        if state.crashed {
            return Err(wasmtime::Error::new(PowerCut { call }));
        }
        Ok(())
    }

    /// Records a sync of `ino` instead of making it.
    fn synced(&self, ino: Ino) -> wasmtime::Result<()> {
        let mut state = self.state();
        let result = match state.disk.as_mut() {
            Some(disk) => disk.sync(ino).map_err(|e| format!("recording a sync under {}: {e}", disk.root.display())),
            None => Err("a sync before the disk was attached".to_owned()),
        };
        result.map_err(|message| {
            state.failure.get_or_insert_with(|| message.clone());
            wasmtime::Error::new(PowerLossError::Model(message))
        })
    }
}

fn mix(seed: u64, n: u64) -> u64 {
    Rng::new(seed ^ n.wrapping_mul(0xa076_1d64_78bd_642f)).next()
}

/// A wall clock that starts at a fixed time and ticks one microsecond per reading.
struct StepClock {
    start: Duration,
    ticks: AtomicU64,
}

impl HostWallClock for StepClock {
    fn resolution(&self) -> Duration {
        Duration::from_micros(1)
    }

    fn now(&self) -> Duration {
        self.start + Duration::from_micros(self.ticks.fetch_add(1, Ordering::Relaxed))
    }
}

/// Attaches `handle` (if any) to a new instance whose preopen is `dir`: binds
/// the disk on first use (everything already there is durable) and makes the
/// guest's randomness and wall clock deterministic.
pub fn attach(
    handle: Option<&PowerLoss>,
    wasi: &mut WasiCtxBuilder,
    dir: &Path,
) -> Result<Option<PowerLoss>, PowerLossError> {
    let Some(handle) = handle else { return Ok(None) };
    let mut state = handle.state();
    match &state.disk {
        Some(disk) if disk.root != dir => {
            return Err(PowerLossError::OtherDirectory { bound: disk.root.clone(), other: dir.to_path_buf() });
        }
        Some(_) => {}
        None => {
            let disk = Disk::baseline(dir)
                .map_err(|source| PowerLossError::Io { what: format!("reading {}", dir.display()), source })?;
            state.disk = Some(disk);
        }
    }
    state.instances += 1;
    let instance = mix(handle.seed, state.instances | 1 << 63);
    wasi.insecure_random_seed(u128::from(instance) << 64 | u128::from(state.instances));
    // 2025-01-01T00:00:00Z plus a second per instance.
    let start = Duration::from_secs(1_735_689_600 + state.instances);
    wasi.wall_clock(StepClock { start, ticks: AtomicU64::new(0) });
    Ok(Some(handle.clone()))
}

//! The phases of `WORKLOAD.md` §2, generic over any [`StoreKind`]: A and C on one store,
//! B and D on a second, fresh one, then E (concurrent agents) on fresh stores per point of
//! the concurrency curve. Each store gets its own fresh directory inside one temporary
//! directory per run, on the normal file system.

mod concurrent;
mod sequential;

use std::path::Path;

use crate::error::{BenchError, Result};
use crate::machine::fsync_probe;
use crate::report::{RunResult, SCHEMA, key};
use crate::runner::StoreKind;

pub use concurrent::phase_e;
pub use sequential::{Checks, phase_a_c, phase_b_d};

/// Flushes timed by each fsync probe.
const FSYNC_PROBES: usize = 32;

/// The sizes of one replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// `full` or `quick`.
    pub name: &'static str,
    /// Phase A: messages of `conv-0000`, one per call.
    pub a_messages: u32,
    /// Phase A buckets of consecutive calls (latency against history length).
    pub a_bucket: usize,
    /// Phase C: the newest `c_newest` messages, `c_newest_loads` times; all, `c_all_loads` times.
    pub c_newest: usize,
    pub c_newest_loads: usize,
    pub c_all_loads: usize,
    /// Phase B: conversations × turns of 4 messages.
    pub b_conversations: u32,
    pub b_turns: u32,
    /// Phase E on B's conversations: concurrent agents per point (the last is all of them).
    pub e_agents: Vec<usize>,
    /// Phase E's large point: conversations × turns, one agent each.
    pub e_large_conversations: u32,
    pub e_large_turns: u32,
}

impl Scale {
    /// The pinned workload.
    pub fn full() -> Self {
        Self {
            name: "full",
            a_messages: 2000,
            a_bucket: 100,
            c_newest: 100,
            c_newest_loads: 200,
            c_all_loads: 20,
            b_conversations: 100,
            b_turns: 25,
            e_agents: vec![1, 2, 4, 8, 16, 32, 64, 100],
            e_large_conversations: 1000,
            e_large_turns: 10,
        }
    }

    /// A smoke-sized replay for CI: same code paths, no figures worth comparing.
    pub fn quick() -> Self {
        Self {
            name: "quick",
            a_messages: 200,
            a_bucket: 20,
            c_newest: 20,
            c_newest_loads: 10,
            c_all_loads: 2,
            b_conversations: 10,
            b_turns: 5,
            e_agents: vec![1, 4, 10],
            e_large_conversations: 40,
            e_large_turns: 2,
        }
    }
}

/// Which phases to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phases {
    /// Phase C after A (off only for profiling A alone).
    pub c: bool,
    /// Phases B and D (off only for profiling A and C alone).
    pub b: bool,
    /// Phase E's single main and large points (needed for the table).
    pub e: bool,
    /// Phase E's whole concurrency curve (every point of `Scale::e_agents`).
    pub e_curve: bool,
}

/// Runs every phase for one row in fresh directories under `base`.
pub async fn run_row<K: StoreKind>(
    kind: &K,
    base: &Path,
    scale: &Scale,
    round: u32,
    phases: Phases,
) -> Result<RunResult> {
    let run_dir =
        tempfile::Builder::new().prefix("stowage-bench-").tempdir_in(base).map_err(|e| BenchError::io(base, e))?;
    let mut result = RunResult {
        schema: SCHEMA,
        description: kind.describe(),
        run: round,
        scale: scale.name.to_string(),
        metrics: Default::default(),
        a_buckets: Vec::new(),
        e_curve: Vec::new(),
        checks: Vec::new(),
    };
    result.metrics.insert(key::ENV_FSYNC_BEFORE.into(), fsync_probe(run_dir.path(), FSYNC_PROBES)?);
    let ac_dir = fresh_dir(run_dir.path(), "a-c")?;
    phase_a_c(kind, &ac_dir, scale, phases.c, &mut result).await?;
    remove(&ac_dir)?;
    if phases.b {
        let bd_dir = fresh_dir(run_dir.path(), "b-d")?;
        phase_b_d(kind, &bd_dir, scale, &mut result).await?;
        remove(&bd_dir)?;
    }
    if phases.e || phases.e_curve {
        phase_e(kind, run_dir.path(), scale, phases.e_curve, &mut result).await?;
    }
    result.metrics.insert(key::ENV_FSYNC_AFTER.into(), fsync_probe(run_dir.path(), FSYNC_PROBES)?);
    run_dir.close().map_err(|e| BenchError::io(base, e))?;
    Ok(result)
}

/// Creates the empty directory `parent/name`.
pub(crate) fn fresh_dir(parent: &Path, name: &str) -> Result<std::path::PathBuf> {
    let dir = parent.join(name);
    std::fs::create_dir(&dir).map_err(|e| BenchError::io(&dir, e))?;
    Ok(dir)
}

pub(crate) fn remove(dir: &Path) -> Result<()> {
    std::fs::remove_dir_all(dir).map_err(|e| BenchError::io(dir, e))
}

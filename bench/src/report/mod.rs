//! The result model: one [`RunResult`] per row and run (what a fresh process prints,
//! Rust or Python), merged into a [`Suite`] whose [`RowSummary`]s hold the median of the
//! per-run values and the per-run ratios against the native row of the same run.
//!
//! Figures are a flat map of metric keys ([`key`]) to numbers, so the Python harness can
//! emit the same JSON and rows without a phase (peers skip E) simply lack its keys.

mod merge;
mod table;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::runner::RowDescription;
use crate::stats::Bucket;

pub use merge::{Spread, merge, vs_sequential_b};
pub use table::{render_markdown, render_notes};

/// Version of the JSON layout; bump on incompatible changes.
pub const SCHEMA: u32 = 1;

/// Metric keys. Latencies are in microseconds, rates per second, sizes in bytes.
pub mod key {
    pub const A_MEDIAN: &str = "a.median_us";
    pub const A_P99: &str = "a.p99_us";
    pub const A_RATE: &str = "a.appends_per_s";
    /// Median over the first and the last bucket of calls (history-length growth).
    pub const A_FIRST_BUCKET_MEDIAN: &str = "a.first_bucket_median_us";
    pub const A_LAST_BUCKET_MEDIAN: &str = "a.last_bucket_median_us";
    pub const A_CHECKPOINTS: &str = "a.checkpoints";
    pub const C_NEWEST_MEDIAN: &str = "c.newest.median_us";
    pub const C_NEWEST_P99: &str = "c.newest.p99_us";
    pub const C_ALL_MEDIAN: &str = "c.all.median_us";
    pub const B_RATE: &str = "b.msgs_per_s";
    pub const B_MEDIAN: &str = "b.median_us";
    pub const B_P99: &str = "b.p99_us";
    pub const B_CHECKPOINTS: &str = "b.checkpoints";
    pub const B_SLOW: &str = "b.calls_over_5ms";
    pub const B_SLOW_ON_CHECKPOINT: &str = "b.calls_over_5ms_on_checkpoint";
    pub const D_BYTES: &str = "d.bytes";
    pub const D_BYTES_OPEN: &str = "d.bytes_before_close";
    /// Phase E on B's conversations, all of them at once (100 at full scale).
    pub const E_MAIN_RATE: &str = "e.main.msgs_per_s";
    pub const E_MAIN_MEDIAN: &str = "e.main.median_us";
    pub const E_MAIN_P99: &str = "e.main.p99_us";
    /// Phase E on the large set (1,000 conversations × 10 turns at full scale).
    pub const E_LARGE_RATE: &str = "e.large.msgs_per_s";
    pub const E_LARGE_MEDIAN: &str = "e.large.median_us";
    pub const E_LARGE_P99: &str = "e.large.p99_us";
    /// Device flush latency (median µs of 4 KiB write + fdatasync) before phase A and after
    /// the last phase of the run: which regime of a noisy disk the run saw.
    pub const ENV_FSYNC_BEFORE: &str = "env.fsync_probe_before_us";
    pub const ENV_FSYNC_AFTER: &str = "env.fsync_probe_after_us";
    /// Probes, each measured by a fresh process (`crate::probes`). First append: from
    /// `Runtime::new` (native: `Connection::open`) to the first append's return, with the
    /// compiled cache warm or cold (empty), and its parts; peak RSS (`VmHWM`) right after.
    pub const P_WARM: &str = "probe.first_append_warm_us";
    pub const P_WARM_RUNTIME: &str = "probe.first_append_warm.runtime_us";
    pub const P_WARM_OPEN: &str = "probe.first_append_warm.open_us";
    pub const P_WARM_APPEND: &str = "probe.first_append_warm.append_us";
    pub const P_COLD: &str = "probe.first_append_cold_us";
    pub const P_COLD_RUNTIME: &str = "probe.first_append_cold.runtime_us";
    pub const P_COLD_OPEN: &str = "probe.first_append_cold.open_us";
    pub const P_COLD_APPEND: &str = "probe.first_append_cold.append_us";
    pub const P_RSS_WARM: &str = "probe.peak_rss_warm_bytes";
    pub const P_RSS_COLD: &str = "probe.peak_rss_cold_bytes";
    /// `VmHWM` when the probe started, before any store code ran (the process's floor).
    pub const P_RSS_START: &str = "probe.peak_rss_at_start_bytes";
    /// Fixed per-call cost: one tiny message per append, and `info`, on a warm store.
    pub const P_TINY_MEDIAN: &str = "probe.tiny_append.median_us";
    pub const P_TINY_P99: &str = "probe.tiny_append.p99_us";
    pub const P_INFO_MEDIAN: &str = "probe.info.median_us";
    /// The component's size, and what compiling it left in the compiled cache.
    pub const P_ADAPTER_BYTES: &str = "probe.adapter_bytes";
    pub const P_COMPILED_BYTES: &str = "probe.compiled_bytes";
    /// Ratio keys: phase E rates against the native row's sequential B rate.
    pub const E_MAIN_VS_NATIVE_B: &str = "e.main.msgs_per_s/native_b";
    pub const E_LARGE_VS_NATIVE_B: &str = "e.large.msgs_per_s/native_b";
}

/// One point of phase E's throughput-against-concurrency curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Concurrent agent tasks.
    pub agents: usize,
    /// Conversations replayed (each by one agent, turn after turn).
    pub conversations: usize,
    /// Messages / wall time of the point.
    pub msgs_per_s: f64,
    pub median_us: f64,
    pub p99_us: f64,
}

/// One row measured by one fresh process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: u32,
    pub description: RowDescription,
    /// Round of the suite (0-based); ratios pair rows of the same round.
    pub run: u32,
    /// `full` (the pinned workload) or `quick` (a smoke-sized replay).
    pub scale: String,
    pub metrics: BTreeMap<String, f64>,
    /// Phase A latency by consecutive calls (100 calls per bucket at full scale).
    #[serde(default)]
    pub a_buckets: Vec<Bucket>,
    #[serde(default)]
    pub e_curve: Vec<CurvePoint>,
    /// The read-back checks that passed.
    #[serde(default)]
    pub checks: Vec<String>,
}

/// A row across runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowSummary {
    pub description: RowDescription,
    pub runs: usize,
    /// Median, min and max of the per-run values.
    pub metrics: BTreeMap<String, Spread>,
    /// Median of the per-run ratios value / native value (native row of the same sync
    /// setting and round; FULL when the row's setting has no native row).
    pub ratios: BTreeMap<String, f64>,
    /// Bucket-wise median of phase A's buckets.
    pub a_buckets: Vec<Bucket>,
    /// Point-wise median of phase E's curve.
    pub e_curve: Vec<CurvePoint>,
}

/// Everything one suite produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Suite {
    pub schema: u32,
    pub machine: Machine,
    /// The command that produced it.
    pub command: String,
    pub runs: Vec<RunResult>,
    pub rows: Vec<RowSummary>,
}

//! Probes of issue 10's fixed costs, each run by a fresh process and merged into its
//! row's run by the suite:
//!
//! - [`ProbeKind::FirstAppendCold`] / [`ProbeKind::FirstAppendWarm`]: the time from
//!   `Runtime::new` to the first append's return (`append_creating` of message (0, 0) on
//!   a fresh data directory), with the compiled cache directory empty (cold: an adapter
//!   that is not shipped is compiled; a shipped one runs from the artifact precompiled
//!   into the binary, so cold and warm differ only by the page cache) or filled by the
//!   cold probe and stamped by a start after it (warm: see `suite::run_probes`); split
//!   into `Runtime::new`,
//!   `open_store` and the append. Native rows: `Connection::open` with its pragmas and
//!   schema, then the first committed insert (no compile cache: both probes measure the
//!   same thing in two processes). Then the peak RSS (`VmHWM`) of the process.
//! - [`ProbeKind::CallCost`]: the fixed per-call cost on a warm store: the median of
//!   2,000 appends of one tiny message (after 100 untimed ones), and of 2,000 `info`
//!   calls on another conversation (the null adapter answers `not found`, which still
//!   crosses every layer).
//!
//! The message is built before the clock starts; nothing else is.

use std::path::{Path, PathBuf};
use std::time::Instant;

use stowage::{ConversationMeta, NewMessage, Role, Runtime};

use crate::error::{BenchError, Result};
use crate::machine::bytes_under;
use crate::native::{DB_FILE, NativeRunner};
use crate::report::{RunResult, SCHEMA, key};
use crate::rows::RowSpec;
use crate::runner::{RowDescription, StoreRunner};
use crate::stats::{Latency, ns_to_us};
use crate::stowage_store::{StowageRow, bench_scope, convert, runtime_config, store_error};
use crate::workload::{Message, conv_id};

/// Timed calls of the call-cost probe, and untimed ones before them.
const CALLS: usize = 2000;
const WARMUP: usize = 100;

/// Which probe a process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    FirstAppendCold,
    FirstAppendWarm,
    CallCost,
}

impl ProbeKind {
    pub const ALL: [ProbeKind; 3] = [Self::FirstAppendCold, Self::FirstAppendWarm, Self::CallCost];

    pub fn name(self) -> &'static str {
        match self {
            Self::FirstAppendCold => "first-append-cold",
            Self::FirstAppendWarm => "first-append-warm",
            Self::CallCost => "call-cost",
        }
    }

    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
            BenchError::Config(format!("unknown probe `{name}`; probes: {}", names.join(", ")))
        })
    }
}

/// The probes a row gets, in the order they must run (cold fills the cache warm uses).
/// Python rows and the PostgreSQL rows (whose stores live on a server) get none.
pub fn probes_for(row: &str) -> Result<Vec<ProbeKind>> {
    if row.starts_with("py:") || crate::rows::POSTGRES_ROWS.contains(&row) {
        return Ok(Vec::new());
    }
    let mut kinds = vec![ProbeKind::FirstAppendCold, ProbeKind::FirstAppendWarm];
    if let RowSpec::Stowage(stowage) = RowSpec::parse(row)?
        && stowage.probes_call_cost()
    {
        kinds.push(ProbeKind::CallCost);
    }
    Ok(kinds)
}

/// The process's peak resident set so far (`VmHWM` of `/proc/self/status`), in bytes.
pub fn peak_rss_bytes() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| BenchError::io("/proc/self/status", e))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| BenchError::Config("no VmHWM in /proc/self/status".into()))
}

/// Runs one probe of `row` in this process. `cache_dir` is the compiled cache (empty for
/// the cold probe); data goes to a fresh directory under `base`.
pub async fn run_probe(row: &str, kind: ProbeKind, base: &Path, cache_dir: &Path, round: u32) -> Result<RunResult> {
    let start_rss = peak_rss_bytes()?;
    let spec = RowSpec::parse(row)?;
    let no_probes = || BenchError::Config(format!("row {row} has no probes (its store lives on a server)"));
    if matches!(&spec, RowSpec::NativePg | RowSpec::Stowage(StowageRow { postgres: true, .. })) {
        return Err(no_probes());
    }
    let dir =
        tempfile::Builder::new().prefix("stowage-probe-").tempdir_in(base).map_err(|e| BenchError::io(base, e))?;
    let mut result = RunResult {
        schema: SCHEMA,
        description: RowDescription {
            row: row.to_string(),
            label: format!("probe {}", kind.name()),
            sync: String::new(),
            baseline: matches!(spec, RowSpec::Native(_)),
            input: String::new(),
            output: String::new(),
            notes: Vec::new(),
        },
        run: round,
        scale: "probe".into(),
        metrics: Default::default(),
        a_buckets: Vec::new(),
        e_curve: Vec::new(),
        checks: Vec::new(),
    };
    result.metrics.insert(key::P_RSS_START.into(), start_rss as f64);
    match (&spec, kind) {
        (_, ProbeKind::FirstAppendCold | ProbeKind::FirstAppendWarm) => {
            let cold = kind == ProbeKind::FirstAppendCold;
            if cold && !is_empty_dir(cache_dir)? {
                return Err(BenchError::Config(format!("cold probe: {} is not empty", cache_dir.display())));
            }
            let parts = match &spec {
                RowSpec::Native(durability) => native_first_append(dir.path(), *durability).await?,
                RowSpec::NativePg => return Err(no_probes()),
                RowSpec::Stowage(stowage) => {
                    result.metrics.insert(key::P_ADAPTER_BYTES.into(), stowage.adapter_bytes()? as f64);
                    stowage_first_append(stowage, dir.path(), cache_dir).await?
                }
            };
            let rss = peak_rss_bytes()? as f64;
            let [total, runtime, open, append] = if cold {
                [key::P_COLD, key::P_COLD_RUNTIME, key::P_COLD_OPEN, key::P_COLD_APPEND]
            } else {
                [key::P_WARM, key::P_WARM_RUNTIME, key::P_WARM_OPEN, key::P_WARM_APPEND]
            };
            for (name, value) in
                [(total, parts.total()), (runtime, parts.runtime), (open, parts.open), (append, parts.append)]
            {
                result.metrics.insert(name.into(), ns_to_us(value));
            }
            result.metrics.insert(if cold { key::P_RSS_COLD } else { key::P_RSS_WARM }.into(), rss);
            if cold && matches!(spec, RowSpec::Stowage(_)) {
                result.metrics.insert(key::P_COMPILED_BYTES.into(), compiled_bytes(cache_dir)? as f64);
            }
        }
        (RowSpec::Stowage(stowage), ProbeKind::CallCost) => {
            call_cost(stowage, dir.path(), cache_dir, &mut result).await?
        }
        (RowSpec::Native(_) | RowSpec::NativePg, ProbeKind::CallCost) => {
            return Err(BenchError::Config("the call-cost probe is for Stowage rows".into()));
        }
    }
    dir.close().map_err(|e| BenchError::io(base, e))?;
    Ok(result)
}

/// The parts of a first append, in nanoseconds.
struct FirstAppend {
    runtime: u64,
    open: u64,
    append: u64,
}

impl FirstAppend {
    fn total(&self) -> u64 {
        self.runtime + self.open + self.append
    }
}

fn ns_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

async fn native_first_append(dir: &Path, durability: crate::native::Durability) -> Result<FirstAppend> {
    let value = Message::new(0, 0).value()?;
    let start = Instant::now();
    let store = NativeRunner::open(&dir.join(DB_FILE), durability, 1)?;
    let open = ns_since(start);
    let start = Instant::now();
    store.append(&conv_id(0), vec![value]).await?;
    let append = ns_since(start);
    store.close().await?;
    Ok(FirstAppend { runtime: 0, open, append })
}

async fn stowage_first_append(row: &StowageRow, dir: &Path, cache_dir: &Path) -> Result<FirstAppend> {
    let config = runtime_config(Some(cache_dir.to_path_buf()), 1);
    let message = convert::new_message(&Message::new(0, 0))?;
    let grants = explicit_grants(row)?;
    let start = Instant::now();
    let runtime = Runtime::new(config).map_err(store_error)?;
    let runtime_ns = ns_since(start);
    let start = Instant::now();
    let mut store_config = stowage::StoreConfig::new(row.id.clone(), row.source(), dir).with_grants(grants);
    store_config.sql_sync = row.sync;
    store_config.integrity = row.integrity;
    let store = runtime.open_store(store_config).await.map_err(store_error)?;
    let open = ns_since(start);
    let start = Instant::now();
    store
        .append_creating(&bench_scope(), &conv_id(0), ConversationMeta::default(), vec![message])
        .await
        .map_err(store_error)?;
    let append = ns_since(start);
    store.close().await;
    Ok(FirstAppend { runtime: runtime_ns, open, append })
}

/// The row's grants without compiling anything (the suite resolves them beforehand).
fn explicit_grants(row: &StowageRow) -> Result<stowage::Grants> {
    match &row.adapter {
        crate::stowage_store::AdapterChoice::Builtin(builtin) => Ok(builtin.grants()),
        crate::stowage_store::AdapterChoice::File { grants: Some(listed), .. } => Ok(stowage::Grants::of(listed)),
        crate::stowage_store::AdapterChoice::File { grants: None, .. } => Err(BenchError::Config(format!(
            "probe of `{}`: give the grants (`adapter:PATH:GRANT,…`); resolving them would compile the adapter first",
            row.id
        ))),
    }
}

async fn call_cost(row: &StowageRow, dir: &Path, cache_dir: &Path, out: &mut RunResult) -> Result<()> {
    let runtime = Runtime::new(runtime_config(Some(cache_dir.to_path_buf()), 1)).map_err(store_error)?;
    let mut config = stowage::StoreConfig::new(row.id.clone(), row.source(), dir).with_grants(explicit_grants(row)?);
    config.sql_sync = row.sync;
    config.integrity = row.integrity;
    let store = runtime.open_store(config).await.map_err(store_error)?;
    let (scope, conv, other) = (bench_scope(), conv_id(0), conv_id(1));
    let tiny = || vec![NewMessage::text(Role::User, "x")];
    store.append_creating(&scope, &conv, ConversationMeta::default(), tiny()).await.map_err(store_error)?;
    for _ in 0..WARMUP {
        store.append(&scope, &conv, tiny(), None).await.map_err(store_error)?;
    }
    let batches: Vec<Vec<NewMessage>> = (0..CALLS).map(|_| tiny()).collect();
    let mut times = Vec::with_capacity(CALLS);
    for batch in batches {
        let start = Instant::now();
        store.append(&scope, &conv, batch, None).await.map_err(store_error)?;
        times.push(ns_since(start));
    }
    let tiny_latency = Latency::of_ns(&times);
    store.open(&scope, &other, ConversationMeta::default()).await.map_err(store_error)?;
    times.clear();
    for _ in 0..CALLS {
        let start = Instant::now();
        let info = store.info(&scope, &other).await;
        times.push(ns_since(start));
        match info {
            Ok(_) => {}
            Err(stowage::Error::NotFound) if !row.keeps_messages() => {}
            Err(e) => return Err(store_error(e)),
        }
    }
    store.close().await;
    out.metrics.insert(key::P_TINY_MEDIAN.into(), tiny_latency.median_us);
    out.metrics.insert(key::P_TINY_P99.into(), tiny_latency.p99_us);
    out.metrics.insert(key::P_INFO_MEDIAN.into(), Latency::of_ns(&times).median_us);
    out.metrics.insert(key::P_ADAPTER_BYTES.into(), row.adapter_bytes()? as f64);
    Ok(())
}

/// Bytes of adapters the run compiled into `dir`: everything but the copies of
/// shipped artifacts (`shipped-*.cwasm`), which the host maps instead of
/// copying out of its binary and never compiles.
fn compiled_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| BenchError::io(dir, e))? {
        let entry = entry.map_err(|e| BenchError::io(dir, e))?;
        if !entry.file_name().to_string_lossy().starts_with("shipped-") {
            let meta = entry.metadata().map_err(|e| BenchError::io(entry.path(), e))?;
            total += if meta.is_dir() { bytes_under(&entry.path())? } else { meta.len() };
        }
    }
    Ok(total)
}

fn is_empty_dir(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(BenchError::io(dir, e)),
    }
}

/// A fresh, empty compiled-cache directory for one row and round under `base`.
pub fn fresh_cache_dir(base: &Path, stem: &str, round: u32) -> Result<PathBuf> {
    let dir = base.join(format!("stowage-bench-cache-{stem}-{round}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| BenchError::io(&dir, e))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_peak_rss() {
        assert!(peak_rss_bytes().unwrap() > 1 << 20);
    }

    #[test]
    fn picks_probes_per_row() {
        assert_eq!(probes_for("py:sqlite3").unwrap(), []);
        assert_eq!(probes_for("native-full").unwrap().len(), 2);
        assert_eq!(probes_for("stowage-sqlite-full").unwrap().len(), 2);
        assert_eq!(probes_for("stowage-null").unwrap().last(), Some(&ProbeKind::CallCost));
        assert_eq!(ProbeKind::parse("call-cost").unwrap(), ProbeKind::CallCost);
        assert!(ProbeKind::parse("x").is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn native_and_null_probes_report_their_figures() {
        let base = tempfile::tempdir().unwrap();
        let cache = base.path().join("cache");
        let native = run_probe("native-normal", ProbeKind::FirstAppendWarm, base.path(), &cache, 0).await.unwrap();
        assert!(native.metrics[key::P_WARM] > 0.0 && native.metrics[key::P_RSS_WARM] > 0.0);
        let cold = run_probe("stowage-null", ProbeKind::FirstAppendCold, base.path(), &cache, 0).await.unwrap();
        assert!(cold.metrics[key::P_COLD_OPEN] > 0.0);
        // A shipped adapter runs from the artifact precompiled into the binary: the
        // compiled cache holds nothing compiled, only that artifact's copy to map.
        assert_eq!(cold.metrics[key::P_COMPILED_BYTES], 0.0);
        let names: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.len() == 1 && names[0].starts_with("shipped-"), "{names:?}");
        let cost = run_probe("stowage-null", ProbeKind::CallCost, base.path(), &cache, 0).await.unwrap();
        assert!(cost.metrics[key::P_TINY_MEDIAN] > 0.0 && cost.metrics[key::P_INFO_MEDIAN] > 0.0);
        std::fs::write(cache.join("stale"), b"x").unwrap();
        assert!(run_probe("stowage-null", ProbeKind::FirstAppendCold, base.path(), &cache, 0).await.is_err());
    }
}

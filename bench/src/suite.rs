//! Runs a suite as `WORKLOAD.md` §2 asks: every row in a fresh process, `runs` rounds that
//! go round-robin over the rows with the order rotated by one each round, then merges the
//! per-run JSON files into one [`Suite`] (medians of the per-run values).
//!
//! Rust rows run as `ROW_COMMAND ID` (e.g. `stowage-bench row ID` or `stowage bench row
//! ID`); rows named `py:PEER` run the Python harness (`bench/peers/run.py --peer PEER`).
//! Both write one [`RunResult`] JSON file. After a Rust row's run, its probes
//! ([`crate::probes`]) run as `PROBE_COMMAND ID KIND`, each in a fresh process, and
//! their figures join that run's metrics (so ratios pair them with native's, per round).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::probes::{ProbeKind, fresh_cache_dir, probes_for};
use crate::report::{RunResult, SCHEMA, Suite, merge};

/// How to run a suite.
#[derive(Clone, Debug)]
pub struct SuiteConfig {
    pub rows: Vec<String>,
    pub runs: u32,
    /// The command prefix that measures one Rust row (the row id and options follow),
    /// e.g. `[stowage-bench, row]` or `[stowage, bench, row]`.
    pub row_command: Vec<OsString>,
    /// The command prefix that runs one probe (`ID KIND` and options follow); `None`:
    /// no probes.
    pub probe_command: Option<Vec<OsString>>,
    /// Extra arguments for every Rust row's command (e.g. `--e-instances 16`).
    pub row_args: Vec<OsString>,
    /// Python interpreter and harness script (rows `py:*`).
    pub python: PathBuf,
    pub peers_script: PathBuf,
    pub quick: bool,
    /// Whether Rust rows run phase E's whole concurrency curve.
    pub e_curve: bool,
    pub tmp_dir: PathBuf,
    /// Where per-run JSON files go (`runs/`), and `suite.json`.
    pub out_dir: PathBuf,
    /// A lock file (e.g. the machine's build lock) held exclusively through each round
    /// (its rows and their probes), so that no build taking the same lock runs beside
    /// them; released between rounds.
    pub lock: Option<PathBuf>,
}

/// Holds `path` locked exclusively (`flock`) until dropped.
fn hold(path: &Path) -> Result<std::fs::File> {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| BenchError::io(path, e))?;
    if file.try_lock().is_err() {
        eprintln!("[suite] waiting for {}", path.display());
        file.lock().map_err(|e| BenchError::io(path, e))?;
    }
    Ok(file)
}

/// The rows of round `round`: the configured order rotated left by `round`.
pub fn round_order(rows: &[String], round: u32) -> Vec<String> {
    let mut order = rows.to_vec();
    if !order.is_empty() {
        let by = round as usize % order.len();
        order.rotate_left(by);
    }
    order
}

/// The command line that measures `row` in round `round`, writing to `out`.
pub fn command_for(config: &SuiteConfig, row: &str, round: u32, out: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = match row.strip_prefix("py:") {
        Some(peer) => {
            vec![config.python.clone().into(), config.peers_script.clone().into(), "--peer".into(), peer.into()]
        }
        None => {
            let mut args = config.row_command.clone();
            args.push(row.into());
            if config.e_curve {
                args.push("--e-curve".into());
            }
            args.extend(config.row_args.iter().cloned());
            args
        }
    };
    args.extend(["--run".into(), round.to_string().into(), "--out".into(), out.as_os_str().to_owned()]);
    args.extend(["--tmp-dir".into(), config.tmp_dir.as_os_str().to_owned()]);
    if config.quick {
        args.push("--quick".into());
    }
    args
}

/// The command line that runs probe `kind` of `row`, writing to `out`.
pub fn probe_command_for(
    prefix: &[OsString],
    config: &SuiteConfig,
    row: &str,
    kind: ProbeKind,
    cache_dir: &Path,
    round: u32,
    out: &Path,
) -> Vec<OsString> {
    let mut args = prefix.to_vec();
    args.extend([row.into(), kind.name().into(), "--cache-dir".into(), cache_dir.as_os_str().to_owned()]);
    args.extend(["--run".into(), round.to_string().into(), "--out".into(), out.as_os_str().to_owned()]);
    args.extend(["--tmp-dir".into(), config.tmp_dir.as_os_str().to_owned()]);
    args
}

/// A file-name-safe form of a row id (adapter rows carry a path).
pub fn file_stem(row: &str) -> String {
    let stem: String = row.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    // Long adapter paths: keep the end, which names the file.
    match stem.len() {
        n if n > 80 => stem[n - 80..].to_string(),
        _ => stem,
    }
}

/// Runs `args`; true when it exited successfully.
fn spawn(args: &[OsString]) -> Result<bool> {
    let Some((program, rest)) = args.split_first() else { return Ok(false) };
    let status = Command::new(program).args(rest).status().map_err(|e| BenchError::io(program, e))?;
    Ok(status.success())
}

/// How long after the cold probe the settling start runs: past the time a
/// cache's copy of a shipped artifact must rest before a check stamps it
/// (20 ms on a filesystem with fine file times; see `stowage`'s
/// `adapter::cache::shipped`).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs the probes of `row` for one round, each in a fresh process, and adds their
/// figures to `run`. A failing probe is reported and leaves its figures out.
///
/// The timed warm probe is the second start on the cache the cold probe filled:
/// the first, untimed (its figures are not read), is a host's start after the
/// fill, which checks the new copy in full and stamps it; the timed one is any
/// later start, which finds the stamp. Native rows get the same extra start.
fn run_probes(config: &SuiteConfig, prefix: &[OsString], row: &str, round: u32, run: &mut RunResult) -> Result<()> {
    let kinds = probes_for(row)?;
    if kinds.is_empty() {
        return Ok(());
    }
    let stem = file_stem(row);
    let cache_dir = fresh_cache_dir(&config.tmp_dir, &stem, round)?;
    for kind in kinds {
        let out = config.out_dir.join("runs").join(format!("{stem}-run{round}-{}.json", kind.name()));
        if kind == ProbeKind::FirstAppendWarm {
            std::thread::sleep(SETTLE);
            let settling = config.out_dir.join("runs").join(format!("{stem}-run{round}-settling-start.json"));
            eprintln!("[suite] round {round}: {row} settling start");
            if !spawn(&probe_command_for(prefix, config, row, kind, &cache_dir, round, &settling))? {
                eprintln!("[suite] {row} settling start failed in round {round}");
            }
        }
        eprintln!("[suite] round {round}: {row} probe {}", kind.name());
        if !spawn(&probe_command_for(prefix, config, row, kind, &cache_dir, round, &out))? {
            eprintln!("[suite] {row} probe {} failed in round {round}", kind.name());
            continue;
        }
        let probe = read_run(&out)?;
        run.metrics.extend(probe.metrics);
        run.checks.extend(probe.checks);
    }
    if cache_dir.exists() {
        std::fs::remove_dir_all(&cache_dir).map_err(|e| BenchError::io(&cache_dir, e))?;
    }
    Ok(())
}

/// Runs every round; returns the merged suite. A row whose process fails is reported on
/// stderr and left out of that round (the suite's `runs` per row say how many counted).
pub fn run_suite(config: &SuiteConfig, machine: Machine, command: String) -> Result<Suite> {
    let runs_dir = config.out_dir.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| BenchError::io(&runs_dir, e))?;
    let mut runs = Vec::new();
    let mut failures = Vec::new();
    for round in 0..config.runs {
        let held = config.lock.as_deref().map(hold).transpose()?;
        for row in round_order(&config.rows, round) {
            let out = runs_dir.join(format!("{}-run{round}.json", file_stem(&row)));
            eprintln!("[suite] round {round}: {row}");
            if !spawn(&command_for(config, &row, round, &out))? {
                eprintln!("[suite] {row} failed in round {round}");
                failures.push(format!("{row} round {round}"));
                continue;
            }
            let mut run = read_run(&out)?;
            if let Some(prefix) = &config.probe_command {
                run_probes(config, prefix, &row, round, &mut run)?;
                write_json(&out, &run)?;
            }
            runs.push(run);
        }
        drop(held);
    }
    if runs.is_empty() {
        return Err(BenchError::Store(format!("every row failed: {}", failures.join("; "))));
    }
    let rows = merge(&runs);
    Ok(Suite { schema: SCHEMA, machine, command, runs, rows })
}

/// Reads one per-run result file.
pub fn read_run(path: &Path) -> Result<RunResult> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))?;
    let run: RunResult = serde_json::from_str(&text)?;
    if run.schema != SCHEMA {
        return Err(BenchError::Config(format!("{}: schema {} (expected {SCHEMA})", path.display(), run.schema)));
    }
    Ok(run)
}

/// Writes `value` as pretty JSON.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").map_err(|e| BenchError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SuiteConfig {
        SuiteConfig {
            rows: vec!["native-full".into(), "py:sqlitesession".into(), "native-normal".into()],
            runs: 3,
            row_command: vec!["bench".into(), "row".into()],
            probe_command: Some(vec!["bench".into(), "probe".into()]),
            row_args: vec!["--e-instances".into(), "8".into()],
            python: "python".into(),
            peers_script: "run.py".into(),
            quick: true,
            e_curve: true,
            tmp_dir: "/t".into(),
            out_dir: "/o".into(),
            lock: None,
        }
    }

    #[test]
    fn rounds_rotate_the_order() {
        let rows = config().rows;
        assert_eq!(round_order(&rows, 0), rows);
        assert_eq!(round_order(&rows, 1), ["py:sqlitesession", "native-normal", "native-full"]);
        assert_eq!(round_order(&rows, 3), rows);
    }

    #[test]
    fn commands_pick_the_harness() {
        let config = config();
        let py = command_for(&config, "py:sqlitesession", 2, Path::new("/o/x.json"));
        let py: Vec<String> = py.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(py[..4], ["python", "run.py", "--peer", "sqlitesession"]);
        assert!(py.ends_with(&["--tmp-dir".into(), "/t".into(), "--quick".into()]));
        let rust = command_for(&config, "native-full", 0, Path::new("/o/y.json"));
        assert_eq!(rust[..3], ["bench", "row", "native-full"]);
        assert!(rust.contains(&OsString::from("--e-curve")) && rust.contains(&OsString::from("--e-instances")));
        let prefix = config.probe_command.clone().unwrap();
        let probe = probe_command_for(
            &prefix,
            &config,
            "stowage-null",
            ProbeKind::CallCost,
            Path::new("/c"),
            1,
            Path::new("/o/p"),
        );
        assert_eq!(probe[..6], ["bench", "probe", "stowage-null", "call-cost", "--cache-dir", "/c"]);
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(file_stem("py:sqlite3"), "py-sqlite3");
        assert_eq!(file_stem("adapter:/x/c.wasm:sql"), "adapter--x-c-wasm-sql");
        assert!(file_stem(&format!("adapter:/{}", "a".repeat(200))).len() <= 80);
    }
}

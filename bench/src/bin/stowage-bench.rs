//! `stowage-bench`: replays the pinned workload (`shared/bench/WORKLOAD.md`).
//!
//! - `row ID`: one row, one run, in this (fresh) process; writes a per-run JSON file.
//! - `probe ID KIND`: one probe of a row (cold/warm first append, call cost) in this process.
//! - `suite`: every row × `--runs` rounds in fresh processes, round-robin with the order
//!   rotated each round; writes `suite.json` and `table.md` and prints the table.
//! - `merge FILE…`: merges per-run files (e.g. from another machine's runner) into a suite.
//! - `table SUITE.json`: prints a suite's table.

/// mimalloc: adapter calls run on other threads than their callers, and glibc's
/// malloc makes a free of another thread's memory wait for that thread's arena.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use stowage_bench::error::{BenchError, Result};
use stowage_bench::machine::{Machine, run_base};
use stowage_bench::phases::{Phases, Scale};
use stowage_bench::probes::{ProbeKind, run_probe};
use stowage_bench::report::{RunResult, SCHEMA, Suite, merge, render_markdown, render_notes};
use stowage_bench::rows::{RowOptions, default_rows, measure_row, resolve_adapter_grants};
use stowage_bench::suite::{SuiteConfig, read_run, run_suite, write_json};

/// The Python peers of the default suite.
const PEER_ROWS: [&str; 3] = ["py:sqlitesession", "py:sqlite3", "py:langgraph"];
const DEFAULT_PYTHON: &str = "/work/toolchains/bench-venv/bin/python";

#[derive(Parser)]
#[command(about = "Replays the pinned Stowage workload next to a native SQLite baseline")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Measures one row once (a fresh process per run, as the workload requires).
    Row {
        /// `native-full`, `native-normal`, `stowage-…` or `adapter:PATH[:GRANT,…]`.
        row: String,
        /// Round of the suite this run belongs to.
        #[arg(long, default_value_t = 0)]
        run: u32,
        /// Smoke-sized replay (CI): same code paths, figures not comparable.
        #[arg(long)]
        quick: bool,
        /// Base directory for the run's fresh temporary directory (never tmpfs).
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
        /// Where to write the per-run JSON (default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Skip phase C (profiling A alone).
        #[arg(long)]
        no_c: bool,
        /// Skip phases B and D (profiling A and C alone).
        #[arg(long)]
        no_b: bool,
        /// Skip phase E.
        #[arg(long)]
        no_e: bool,
        /// Run phase E's whole concurrency curve, not only its main and large points.
        #[arg(long)]
        e_curve: bool,
        /// Native SQLite rows: connections in phase E's pool.
        #[arg(long, default_value_t = 1)]
        e_pool: usize,
        /// Stowage rows: cap on adapter instances in phase E (`native-pg`: on its pool).
        /// Default: 1 for stores on a SQLite file or files, 8 on PostgreSQL.
        #[arg(long)]
        e_instances: Option<u32>,
    },
    /// Runs one probe of a row in this (fresh) process.
    Probe {
        row: String,
        /// `first-append-cold`, `first-append-warm` or `call-cost`.
        kind: String,
        /// The compiled cache directory (must be empty for `first-append-cold`).
        #[arg(long)]
        cache_dir: PathBuf,
        #[arg(long, default_value_t = 0)]
        run: u32,
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Runs every row `--runs` times, round-robin, each in a fresh process; merges and prints.
    Suite {
        #[arg(long, default_value_t = 3)]
        runs: u32,
        /// Comma-separated rows; `py:PEER` rows run the Python harness [default: native,
        /// every Stowage row on the shipped adapters, the Python peers]; the opt-in
        /// `native-pg`, `stowage-sqlite-pg` need the server of STOWAGE_BENCH_POSTGRES_URL.
        #[arg(long)]
        rows: Option<String>,
        /// Python interpreter with bench/peers/requirements.txt installed.
        #[arg(long, env = "STOWAGE_BENCH_PYTHON", default_value = DEFAULT_PYTHON)]
        python: PathBuf,
        #[arg(long)]
        quick: bool,
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
        /// Output directory for runs/, suite.json and table.md.
        #[arg(long, default_value = "bench/results")]
        out_dir: PathBuf,
        /// Skip phase E's curve (the main and large points still run).
        #[arg(long)]
        no_curve: bool,
        /// Skip the probes (cold start, RSS, per-call cost).
        #[arg(long)]
        no_probes: bool,
        /// Hold this lock file while each row runs (e.g. the machine's build lock).
        #[arg(long)]
        lock: Option<PathBuf>,
    },
    /// Merges per-run JSON files into a suite.
    Merge {
        files: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
    },
    /// Prints the table of a suite.
    Table { suite: PathBuf },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("stowage-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Row { row, run, quick, tmp_dir, out, no_c, no_b, no_e, e_curve, e_pool, e_instances } => {
            let (base, _) = run_base(tmp_dir.as_deref())?;
            let scale = if quick { Scale::quick() } else { Scale::full() };
            let phases = Phases { c: !no_c, b: !no_b, e: !no_e, e_curve: e_curve && !no_e };
            let options = RowOptions { e_pool, e_instances, ..RowOptions::new(scale, run, phases) };
            let result = block_on(measure_row(&row, &base, &options))?;
            emit(out.as_deref(), &result)
        }
        Cmd::Probe { row, kind, cache_dir, run, tmp_dir, out } => {
            let (base, _) = run_base(tmp_dir.as_deref())?;
            let kind = ProbeKind::parse(&kind)?;
            let result = block_on(run_probe(&row, kind, &base, &cache_dir, run))?;
            emit(out.as_deref(), &result)
        }
        Cmd::Suite { runs, rows, python, quick, tmp_dir, out_dir, no_curve, no_probes, lock } => {
            let (base, filesystem) = run_base(tmp_dir.as_deref())?;
            let bench_exe = std::env::current_exe().map_err(|e| BenchError::io("current_exe", e))?;
            let rows: Vec<String> = match rows {
                Some(list) => list.split(',').map(str::trim).filter(|r| !r.is_empty()).map(String::from).collect(),
                None => default_rows().into_iter().chain(PEER_ROWS.map(String::from)).collect(),
            };
            let config = SuiteConfig {
                rows: block_on(resolve_adapter_grants(&rows))?,
                runs,
                row_command: vec![bench_exe.clone().into(), "row".into()],
                probe_command: (!no_probes).then(|| vec![bench_exe.into(), "probe".into()]),
                row_args: Vec::new(),
                python,
                peers_script: Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/run.py"),
                quick,
                e_curve: !no_curve,
                tmp_dir: base.clone(),
                out_dir: out_dir.clone(),
                lock: lock.clone(),
            };
            let command = std::env::args().collect::<Vec<_>>().join(" ");
            let suite = run_suite(&config, Machine::describe(&base, &filesystem), command)?;
            finish(&suite, &out_dir)
        }
        Cmd::Merge { files, out, tmp_dir } => {
            let (base, filesystem) = run_base(tmp_dir.as_deref())?;
            let runs: Vec<RunResult> = files.iter().map(|f| read_run(f)).collect::<Result<_>>()?;
            let rows = merge(&runs);
            let command = std::env::args().collect::<Vec<_>>().join(" ");
            let suite = Suite { schema: SCHEMA, machine: Machine::describe(&base, &filesystem), command, runs, rows };
            write_json(&out, &suite)?;
            print!("{}\n{}", render_markdown(&suite), render_notes(&suite));
            Ok(())
        }
        Cmd::Table { suite } => {
            let text = std::fs::read_to_string(&suite).map_err(|e| BenchError::io(&suite, e))?;
            let suite: Suite = serde_json::from_str(&text)?;
            print!("{}\n{}", render_markdown(&suite), render_notes(&suite));
            Ok(())
        }
    }
}

/// Runs `future` on a multi-threaded tokio runtime (as an agent platform would).
fn block_on<T>(future: impl Future<Output = Result<T>>) -> Result<T> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::io("tokio runtime", e))?;
    runtime.block_on(future)
}

/// Writes a run to `out`, or prints it.
fn emit(out: Option<&Path>, result: &RunResult) -> Result<()> {
    match out {
        Some(path) => write_json(path, result),
        None => {
            println!("{}", serde_json::to_string_pretty(result)?);
            Ok(())
        }
    }
}

fn finish(suite: &Suite, out_dir: &Path) -> Result<()> {
    write_json(&out_dir.join("suite.json"), suite)?;
    let table = format!("{}\n{}", render_markdown(suite), render_notes(suite));
    let table_path = out_dir.join("table.md");
    std::fs::write(&table_path, &table).map_err(|e| BenchError::io(&table_path, e))?;
    print!("{table}");
    Ok(())
}

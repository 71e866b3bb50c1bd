//! `stowage bench`: replays the pinned benchmark workload (`shared/bench/WORKLOAD.md`)
//! on the shipped adapters, or on any adapter component given with `--adapter`, next
//! to a native rusqlite baseline, and prints the table (with the probes: cold start,
//! peak RSS, fixed per-call cost).
//!
//! Every row and every probe runs in a fresh process: this binary again, through the
//! hidden `stowage bench row ID …` and `stowage bench probe ID KIND …`. Rounds go
//! round-robin over the rows with the order rotated each round; every figure is the
//! median of the rounds' values, every ratio the median of the per-round ratios.
//! Writes `runs/*.json`, `suite.json` and `table.md` under `--out-dir`. The Python
//! peers (OpenAI Agents `SQLiteSession`, raw `sqlite3`, LangGraph) join with `--peers`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use stowage_bench::machine::{Machine, run_base};
use stowage_bench::phases::{Phases, Scale};
use stowage_bench::probes::{ProbeKind, run_probe};
use stowage_bench::report::{RunResult, render_markdown, render_notes};
use stowage_bench::rows::{NATIVE_ROWS, RowOptions, default_rows, measure_row, resolve_adapter_grants};
use stowage_bench::stowage_store::ADAPTER_PREFIX;
use stowage_bench::suite::{SuiteConfig, run_suite, write_json};

/// The Python peers `--peers` adds.
const PEER_ROWS: [&str; 3] = ["py:sqlitesession", "py:sqlite3", "py:langgraph"];

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    process: Option<Process>,
    /// A third-party adapter component to measure (repeatable); its grants are the
    /// capabilities its imports ask for. Without `--rows`, only the native rows run
    /// beside it.
    #[arg(long, value_name = "FILE.wasm")]
    adapter: Vec<PathBuf>,
    /// Smoke-sized replay (what CI runs): same code paths, figures not comparable.
    #[arg(long)]
    quick: bool,
    /// Rounds over the rows; every figure is the median over them.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Comma-separated rows [default: native-full, native-normal and every Stowage row
    /// on the shipped adapters: stowage-sqlite-full, -normal, -full-untagged,
    /// -full-sealed, stowage-filesystem, stowage-null]; `adapter:PATH[:GRANT,…]` adds
    /// any component; the opt-in `native-pg,stowage-sqlite-pg` run on the PostgreSQL
    /// server of STOWAGE_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test).
    #[arg(long, value_delimiter = ',')]
    rows: Option<Vec<String>>,
    /// Where runs/, suite.json and table.md go.
    #[arg(long, default_value = "bench-results")]
    out_dir: PathBuf,
    /// Base directory for the runs' fresh directories (never tmpfs) [default: the
    /// system temp dir].
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// Skip phase E's concurrency curve (its main and large points still run).
    #[arg(long)]
    no_curve: bool,
    /// Skip the probes (cold start, peak RSS, per-call cost).
    #[arg(long)]
    no_probes: bool,
    /// Hold this lock file through each round (released between rounds), so that
    /// builds taking the same lock (e.g. `flock FILE cargo …`) never run beside a
    /// measurement.
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// Phase E: at most this many adapter instances per store (default: 1 for stores on
    /// a SQLite file or files, 8 on PostgreSQL).
    #[arg(long)]
    e_instances: Option<u32>,
    /// Add the Python peers (needs `--python` with bench/peers/requirements.txt installed).
    #[arg(long, requires = "python")]
    peers: bool,
    /// Python interpreter for the peers.
    #[arg(long, env = "STOWAGE_BENCH_PYTHON")]
    python: Option<PathBuf>,
    /// The peers' harness [default: bench/peers/run.py of the source tree this was built from].
    #[arg(long)]
    peers_script: Option<PathBuf>,
}

/// The processes a suite spawns (hidden: `stowage bench` runs them itself).
#[derive(Subcommand, Debug)]
enum Process {
    /// Measures one row once in this process.
    #[command(hide = true)]
    Row {
        row: String,
        #[arg(long, default_value_t = 0)]
        run: u32,
        #[arg(long)]
        quick: bool,
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        no_e: bool,
        #[arg(long)]
        e_curve: bool,
        #[arg(long)]
        e_instances: Option<u32>,
    },
    /// Runs one probe of a row in this process.
    #[command(hide = true)]
    Probe {
        row: String,
        kind: String,
        #[arg(long)]
        cache_dir: PathBuf,
        #[arg(long, default_value_t = 0)]
        run: u32,
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

pub async fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    match args.process {
        Some(Process::Row { row, run, quick, tmp_dir, out, no_e, e_curve, e_instances }) => {
            let (base, _) = run_base(tmp_dir.as_deref())?;
            let scale = if quick { Scale::quick() } else { Scale::full() };
            let phases = Phases { c: true, b: true, e: !no_e, e_curve: e_curve && !no_e };
            let options = RowOptions { e_instances, ..RowOptions::new(scale, run, phases) };
            let result = measure_row(&row, &base, &options).await.with_context(|| format!("row {row}"))?;
            emit(out.as_deref(), &result)
        }
        Some(Process::Probe { row, kind, cache_dir, run, tmp_dir, out }) => {
            let (base, _) = run_base(tmp_dir.as_deref())?;
            let kind = ProbeKind::parse(&kind)?;
            let result = run_probe(&row, kind, &base, &cache_dir, run).await.with_context(|| format!("probe {row}"))?;
            emit(out.as_deref(), &result)
        }
        None => suite(args).await,
    }
}

/// The rows a suite runs: `--rows` (or the defaults; only native beside `--adapter`),
/// then each `--adapter`, then the peers.
fn rows(args: &BenchArgs) -> Vec<String> {
    let mut rows = match (&args.rows, args.adapter.is_empty()) {
        (Some(rows), _) => rows.iter().map(|r| r.trim().to_string()).filter(|r| !r.is_empty()).collect(),
        (None, true) => default_rows(),
        (None, false) => NATIVE_ROWS.map(String::from).to_vec(),
    };
    rows.extend(args.adapter.iter().map(|path| format!("{ADAPTER_PREFIX}{}", path.display())));
    if args.peers {
        rows.extend(PEER_ROWS.map(String::from));
    }
    rows
}

async fn suite(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let (base, filesystem) = run_base(args.tmp_dir.as_deref())?;
    let exe = std::env::current_exe().context("locating the stowage binary")?;
    let prefix = |what: &str| -> Vec<OsString> { vec![exe.clone().into(), "bench".into(), what.into()] };
    let rows = resolve_adapter_grants(&rows(&args)).await.context("reading the adapters' imports")?;
    let config = SuiteConfig {
        rows,
        runs: args.runs,
        row_command: prefix("row"),
        probe_command: (!args.no_probes).then(|| prefix("probe")),
        row_args: args.e_instances.map(|n| vec!["--e-instances".into(), n.to_string().into()]).unwrap_or_default(),
        python: args.python.clone().unwrap_or_else(|| PathBuf::from("python3")),
        peers_script: args.peers_script.clone().unwrap_or_else(default_peers_script),
        quick: args.quick,
        e_curve: !args.no_curve,
        tmp_dir: base.clone(),
        out_dir: args.out_dir.clone(),
        lock: args.lock.clone(),
    };
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let machine = Machine::describe(&base, &filesystem);
    // The suite waits on child processes: keep it off the async workers.
    let suite = tokio::task::spawn_blocking(move || run_suite(&config, machine, command)).await??;
    write_json(&args.out_dir.join("suite.json"), &suite)?;
    let table = format!("{}\n{}", render_markdown(&suite), render_notes(&suite));
    let table_path = args.out_dir.join("table.md");
    std::fs::write(&table_path, &table).with_context(|| format!("writing {}", table_path.display()))?;
    print!("{table}");
    Ok(ExitCode::SUCCESS)
}

fn default_peers_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers/run.py")
}

/// Writes a run to `out`, or prints it.
fn emit(out: Option<&Path>, result: &RunResult) -> anyhow::Result<ExitCode> {
    match out {
        Some(path) => write_json(path, result)?,
        None => println!("{}", serde_json::to_string_pretty(result)?),
    }
    Ok(ExitCode::SUCCESS)
}

//! `stowage`: use Stowage from a terminal.
//!
//! Exit codes: 0 success; 1 unexpected failure; 2 bad input (arguments, files,
//! configuration); 3 not found; 4 adapter failure (cannot load, trapped, timed
//! out, storage error); 5 version conflict; 6 `check`: the adapter failed an
//! applicable conformance case; 7 `migrate`: verification found a difference.

/// mimalloc: adapter calls run on other threads than their callers, and glibc's
/// malloc makes a free of another thread's memory wait for that thread's arena.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench;
mod check;
mod context;
mod data;
mod demo;
mod keys;
mod migrate;
mod render;
mod scaffold;
mod serve;
mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::context::Context;

#[derive(Parser)]
#[command(
    name = "stowage",
    version,
    about = "Persistence for AI-agent platforms, served by sandboxed WebAssembly storage adapters",
    after_help = "Exit codes: 0 ok, 1 unexpected failure, 2 bad input, 3 not found, 4 adapter failure, \
                  5 version conflict, 6 conformance failure (check), 7 verification failure (migrate)."
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone, Debug)]
pub struct Global {
    /// Configuration file [default: ./stowage.toml if present, else the embedded
    /// default: the SQLite adapter with data in ./stowage-data]
    #[arg(long, global = true, env = "STOWAGE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The store to use [default: the configuration's default store]
    #[arg(long, global = true, env = "STOWAGE_STORE", value_name = "NAME")]
    pub store: Option<String>,
    /// Tenant of the scope every call is made in.
    #[arg(long, global = true, env = "STOWAGE_TENANT", default_value = "default")]
    pub tenant: String,
    /// User of the scope every call is made in.
    #[arg(long, global = true, env = "STOWAGE_USER", default_value = "")]
    pub user: String,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Append messages (JSON Lines, one Stowage message per line) to a
    /// conversation, as one atomic batch; creates the conversation if needed.
    /// Messages whose id is already stored are skipped, so re-running is safe.
    Append {
        conversation: String,
        /// JSON Lines file, or `-` for standard input.
        #[arg(default_value = "-")]
        file: String,
        /// Refuse (exit 5) unless the conversation is at this version (optimistic
        /// concurrency); a batch already stored whole is still acknowledged.
        #[arg(long, value_name = "VERSION")]
        expected_version: Option<u64>,
    },
    /// Print a page of a conversation (newest messages by default).
    Load(data::LoadArgs),
    /// List the scope's conversations.
    List {
        /// At most this many (all when absent).
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Delete a conversation with its display records (idempotent).
    Delete { conversation: String },
    /// Remove every message after a seq.
    Truncate {
        conversation: String,
        #[arg(long, value_name = "SEQ")]
        after: u64,
        /// Refuse (exit 5) unless the conversation is at this version.
        #[arg(long, value_name = "VERSION")]
        expected_version: Option<u64>,
    },
    /// Import conversations from a JSON Lines file (one conversation per line) in
    /// Stowage, OpenAI Chat Completions, Anthropic Messages, OpenAI Responses items
    /// or AI SDK UI messages format (docs/formats.md), without loss. The whole
    /// file is checked before anything is written; if writing fails part-way, the
    /// conversations this import created are removed again.
    Import {
        file: PathBuf,
        /// The file's format [default: detected per line]
        #[arg(long, value_parser = transfer::FORMATS)]
        format: Option<String>,
    },
    /// Export conversations (all of the scope when none are named) as JSON Lines.
    Export {
        conversations: Vec<String>,
        #[arg(long, default_value = "stowage", value_parser = transfer::FORMATS)]
        format: String,
        /// Only what the provider's API accepts: no `x_stowage` (ids, timestamps,
        /// costs), no response-only members; what is left out goes to stderr.
        #[arg(long)]
        pure: bool,
        /// Write to this file (atomically) instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Run the conformance catalogue against any adapter component in a scratch
    /// directory and report every case; exits 0 only if every applicable case
    /// passes. Capabilities the adapter imports (sql, filesystem) are granted.
    Check { adapter: PathBuf },
    /// Describe an adapter component: the contract version it implements, the
    /// capabilities it imports, its size, and whether it passes the loader's checks.
    Inspect {
        /// A `.wasm` file or a built-in adapter name (sqlite, filesystem, null).
        adapter: String,
    },
    /// Copy conversations (all of the scope when none are named) and their display
    /// records from one store to another, then verify the copy. Safe to re-run
    /// after an interruption: messages are idempotent by id.
    Migrate {
        #[arg(long, value_name = "STORE")]
        from: String,
        #[arg(long, value_name = "STORE")]
        to: String,
        conversations: Vec<String>,
    },
    /// Add a fresh integrity key to the store's keyring (generated keys or
    /// `key_file`) and make it current. Older keys stay, so every record tagged
    /// before keeps verifying: history is never rewritten.
    Rekey,
    /// The main job: play a multi-turn agent conversation with tool calls, thinking
    /// and a failure into the default store, reload it from a fresh host, show the
    /// transcript and the display events, then show the same data through another
    /// adapter.
    Demo,
    /// Replay the pinned benchmark workload on the shipped adapters (or `--adapter
    /// FILE.wasm`) next to a native SQLite baseline, each row in a fresh process, and
    /// print the table with cold-start, memory and per-call probes.
    Bench(bench::BenchArgs),
    /// Serve the store over HTTP/JSON (`/v1/…`, SSE display events, /healthz,
    /// /metrics, /v1/openapi.json) until SIGTERM; settings in the `[server]` table
    /// of the configuration. Prints `listening on URL` once bound.
    Serve {
        /// Address to listen on [default: server.listen, else 127.0.0.1:7373]
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
    },
    /// Write a minimal storage adapter into DIR (missing or empty) that builds with
    /// its language's toolchain and passes `stowage check` (docs/adapters.md).
    NewAdapter {
        #[arg(long, value_enum)]
        lang: scaffold::Lang,
        dir: PathBuf,
    },
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // The bench measures a runtime's start-up in its own processes: no context runtime.
    let command = match cli.command {
        Command::Bench(args) => return bench::bench(args).await,
        Command::NewAdapter { lang, dir } => return scaffold::new_adapter(lang, &dir),
        command => command,
    };
    let ctx = Context::new(cli.global)?;
    match command {
        Command::Append { conversation, file, expected_version } => {
            data::append(&ctx, &conversation, &file, expected_version).await
        }
        Command::Load(args) => data::load(&ctx, args).await,
        Command::List { limit } => data::list(&ctx, limit).await,
        Command::Delete { conversation } => data::delete(&ctx, &conversation).await,
        Command::Truncate { conversation, after, expected_version } => {
            data::truncate(&ctx, &conversation, after, expected_version).await
        }
        Command::Import { file, format } => transfer::import(&ctx, &file, format.as_deref()).await,
        Command::Export { conversations, format, pure, output } => {
            transfer::export(&ctx, &conversations, &format, pure, output).await
        }
        Command::Check { adapter } => check::check(&ctx, &adapter).await,
        Command::Inspect { adapter } => check::inspect(&ctx, &adapter).await,
        Command::Migrate { from, to, conversations } => migrate::migrate(&ctx, &from, &to, &conversations).await,
        Command::Rekey => keys::rekey(&ctx),
        Command::Demo => demo::demo(&ctx).await,
        Command::Serve { listen } => serve::serve(&ctx, listen).await,
        Command::Bench(args) => bench::bench(args).await,
        Command::NewAdapter { lang, dir } => scaffold::new_adapter(lang, &dir),
    }
}

/// The exit code for an error, from the first typed cause in its chain.
fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<stowage::Error>() {
            return match e {
                stowage::Error::InvalidInput(_) | stowage::Error::InvalidCursor | stowage::Error::Config(_) => 2,
                stowage::Error::NotFound => 3,
                stowage::Error::Conflict { .. } => 5,
                stowage::Error::Internal(_) => 1,
                _ => 4,
            };
        }
        if cause.downcast_ref::<stowage::interchange::LineError>().is_some()
            || cause.downcast_ref::<context::BadInput>().is_some()
        {
            return 2;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return if io.kind() == std::io::ErrorKind::NotFound { 2 } else { 1 };
        }
    }
    1
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("STOWAGE_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(exit_code(&err))
        }
    }
}

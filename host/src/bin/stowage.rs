//! The `stowage` command line. For now: inspect an adapter. The full command set
//! (import/export, check, migrate, demo) lands with the CLI issue.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use stowage::{AdapterSource, Grants, Runtime, RuntimeConfig};

#[derive(Parser)]
#[command(
    name = "stowage",
    version,
    about = "Persistence for AI-agent platforms, served by sandboxed WebAssembly storage adapters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load an adapter component and report whether it passes the loader's checks:
    /// contract exports, imports, and the capabilities those imports need.
    Inspect {
        /// A `.wasm` component, or a built-in adapter name (sqlite, filesystem, null).
        adapter: String,
        /// Capabilities to grant while checking (repeatable): sql, filesystem.
        #[arg(long = "grant", value_name = "CAPABILITY")]
        grants: Vec<String>,
    },
}

async fn inspect(adapter: &str, grant_names: &[String]) -> anyhow::Result<()> {
    let mut grants = Grants::NONE;
    for name in grant_names {
        match name.as_str() {
            "sql" => grants.sql = true,
            "filesystem" => grants.filesystem = true,
            other => anyhow::bail!("unknown capability `{other}` (known: sql, filesystem)"),
        }
    }
    let source = AdapterSource::parse(adapter);
    if let AdapterSource::File(path) = &source
        && !path.exists()
    {
        anyhow::bail!("{} does not exist and is not a built-in adapter name", path.display());
    }
    let runtime = Runtime::new(RuntimeConfig::default()).context("starting the wasm runtime")?;
    let report = runtime.inspect(&source, grants).await?;
    println!("adapter:   {adapter}");
    println!("contract:  stowage:store@{}", stowage::CONTRACT_VERSION);
    println!("sha256:    {}", report.digest);
    println!("size:      {} bytes", report.size);
    println!("imports:");
    for import in &report.imports {
        println!("  {import}");
    }
    println!("loader checks: passed");
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { adapter, grants } => inspect(&adapter, &grants).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

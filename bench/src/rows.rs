//! Row ids and measuring one row in this process: the native baselines
//! (`native-full`, `native-normal`), the Stowage rows ([`crate::stowage_store::row`]) and
//! the opt-in PostgreSQL rows ([`POSTGRES_ROWS`], not among the defaults: they need a server).
//! Python rows (`py:PEER`) are measured by `bench/peers/run.py`, not here.

use std::path::Path;

use stowage::Runtime;

use crate::error::{BenchError, Result};
use crate::native::{Durability, NativeKind};
use crate::native_pg::NativePgKind;
use crate::phases::{Phases, Scale, run_row};
use crate::report::RunResult;
use crate::stowage_store::{
    ADAPTER_PREFIX, AdapterChoice, BUILTIN_ROWS, NO_APPEND_PLAN_ROW, NO_MEMO_ROW, NO_PLAN_ROW, POSTGRES_ROW, SPIN_ROW,
    StowageKind, StowageRow, e_instances_for, runtime_config,
};

/// The native baseline rows.
pub const NATIVE_ROWS: [&str; 2] = ["native-full", "native-normal"];

/// The PostgreSQL rows (opt-in): the tokio-postgres baseline and the SQL adapter on the
/// server of [`crate::pg`]; the second's ratios are taken against the first.
pub const POSTGRES_ROWS: [&str; 2] = [crate::native_pg::ROW, POSTGRES_ROW];

/// A row this crate measures itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowSpec {
    Native(Durability),
    /// The native tokio-postgres baseline.
    NativePg,
    Stowage(StowageRow),
}

impl RowSpec {
    pub fn parse(id: &str) -> Result<Self> {
        match id {
            "native-full" => return Ok(Self::Native(Durability::Full)),
            "native-normal" => return Ok(Self::Native(Durability::Normal)),
            crate::native_pg::ROW => return Ok(Self::NativePg),
            _ => {}
        }
        StowageRow::parse(id)?.map(Self::Stowage).ok_or_else(|| {
            BenchError::Config(format!(
                "unknown row `{id}`; rows: {}, {}, {NO_MEMO_ROW}, {NO_PLAN_ROW}, {NO_APPEND_PLAN_ROW}, {SPIN_ROW}, {}, {ADAPTER_PREFIX}PATH[:GRANT,…] (and py:PEER in a suite)",
                NATIVE_ROWS.join(", "),
                BUILTIN_ROWS.join(", "),
                POSTGRES_ROWS.join(", ")
            ))
        })
    }
}

/// The native rows and every Stowage row on the shipped adapters.
pub fn default_rows() -> Vec<String> {
    NATIVE_ROWS.iter().chain(BUILTIN_ROWS.iter()).map(|r| r.to_string()).collect()
}

/// How to measure a row.
#[derive(Clone, Debug)]
pub struct RowOptions {
    pub scale: Scale,
    /// Round of the suite this run belongs to.
    pub round: u32,
    pub phases: Phases,
    /// Native SQLite rows: connections in phase E's pool.
    pub e_pool: usize,
    /// Stowage rows: cap on adapter instances in phase E; `native-pg`: on its pool's
    /// connections (as many as the Stowage PostgreSQL row's pool). `None`: the
    /// default for where the row stores ([`e_instances_for`]).
    pub e_instances: Option<u32>,
}

impl RowOptions {
    pub fn new(scale: Scale, round: u32, phases: Phases) -> Self {
        Self { scale, round, phases, e_pool: 1, e_instances: None }
    }
}

/// Measures `row` once, in this process, in a fresh directory under `base`. A Stowage
/// row creates the process's one `Runtime` here, before any phase starts a timer.
pub async fn measure_row(row: &str, base: &Path, options: &RowOptions) -> Result<RunResult> {
    let (scale, round, phases) = (&options.scale, options.round, options.phases);
    match RowSpec::parse(row)? {
        RowSpec::Native(durability) => {
            let kind = NativeKind { durability, e_pool: options.e_pool };
            run_row(&kind, base, scale, round, phases).await
        }
        RowSpec::NativePg => {
            let kind =
                NativePgKind::new(crate::pg::base_url(), e_instances_for(options.e_instances, true) as usize).await?;
            run_row(&kind, base, scale, round, phases).await
        }
        RowSpec::Stowage(stowage) => {
            let e_instances = e_instances_for(options.e_instances, stowage.postgres);
            let runtime = Runtime::new(runtime_config(None, e_instances)).map_err(crate::stowage_store::store_error)?;
            let kind = StowageKind::new(stowage, runtime, e_instances).await?;
            run_row(&kind, base, scale, round, phases).await
        }
    }
}

/// Rewrites every `adapter:PATH` row without grants to `adapter:PATH:GRANTS`, the
/// capabilities the component's imports ask for, so that the rows' processes (and the
/// cold-start probes, which must not compile before their clock starts) get them
/// explicitly. Compiles those components once, through the default compiled cache.
pub async fn resolve_adapter_grants(rows: &[String]) -> Result<Vec<String>> {
    let mut runtime: Option<Runtime> = None;
    let mut resolved = Vec::with_capacity(rows.len());
    for id in rows {
        let row = StowageRow::parse(id)?;
        let Some((row, path)) = row.and_then(|row| match &row.adapter {
            AdapterChoice::File { path, grants: None } => Some((row.clone(), path.clone())),
            _ => None,
        }) else {
            resolved.push(id.clone());
            continue;
        };
        let runtime = match &mut runtime {
            Some(runtime) => runtime.clone(),
            None => {
                let created = Runtime::new(runtime_config(None, 1)).map_err(crate::stowage_store::store_error)?;
                runtime.insert(created).clone()
            }
        };
        let grants: Vec<&str> = row.grants(&runtime).await?.iter().map(|c| c.name()).collect();
        resolved.push(format!("{ADAPTER_PREFIX}{}:{}", path.display(), grants.join(",")));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_default_row() {
        for row in default_rows() {
            RowSpec::parse(&row).unwrap();
        }
        assert!(RowSpec::parse("py:sqlite3").is_err());
        assert_eq!(RowSpec::parse("native-normal").unwrap(), RowSpec::Native(Durability::Normal));
        assert_eq!(RowSpec::parse("native-pg").unwrap(), RowSpec::NativePg);
        assert!(matches!(RowSpec::parse("stowage-sqlite-pg").unwrap(), RowSpec::Stowage(row) if row.postgres));
        for row in POSTGRES_ROWS {
            assert!(!default_rows().iter().any(|r| r == row), "{row} must stay opt-in");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn builtin_rows_need_no_resolution() {
        let rows = default_rows();
        assert_eq!(resolve_adapter_grants(&rows).await.unwrap(), rows);
    }
}

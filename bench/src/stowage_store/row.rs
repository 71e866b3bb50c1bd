//! The Stowage rows of the table: which adapter, which `sql_sync`, which integrity
//! setting, parsed from a row id.
//!
//! - `stowage-sqlite-full`, `stowage-sqlite-normal`: the SQLite adapter at
//!   `sql_sync` FULL / NORMAL, default integrity (tags on, not sealed).
//! - `stowage-sqlite-full-untagged`: FULL with `Integrity { tags: false }` (what tags cost).
//! - `stowage-sqlite-full-sealed`: FULL with `Integrity { seal: true }` (what sealing costs).
//! - `stowage-sqlite-full-no-memo` (opt-in): FULL with `Limits::verified_cache_bytes = 0`,
//!   so every load checks every record (what the memo of checked messages saves).
//! - `stowage-sqlite-full-no-plan` (opt-in): FULL with `Limits::load_plans = false`,
//!   so every load calls into the adapter (what running its load plan on the host saves).
//! - `stowage-sqlite-full-no-append-plan` (opt-in): FULL with `Limits::append_plans =
//!   false`, so every append calls into the adapter (what running its append plan on
//!   the host saves).
//! - `stowage-sqlite-full-spin` (opt-in): FULL with `Limits::flush_spin_us = 400`,
//!   so a writer alone spins for its flush on the store's flusher thread.
//! - `stowage-filesystem`: the filesystem adapter (it `sync_data`s every appended frame).
//! - `stowage-null`: the null adapter (keeps nothing: read-back checks are skipped).
//! - `stowage-sqlite-pg` (opt-in, not a default row): the SQL adapter on the PostgreSQL
//!   server of [`crate::pg`], a fresh schema per store; its ratios are against `native-pg`.
//! - `adapter:PATH[:GRANT,GRANT]`: any third-party component at `sql_sync` FULL; without
//!   grants, the capabilities its imports ask for (`Runtime::describe(..).grants()`).

use std::path::{Path, PathBuf};

use stowage::{AdapterSource, Builtin, Capability, Grants, Integrity, Runtime, SqlSync};

use crate::error::{BenchError, Result};

/// The Stowage rows on the shipped adapters, in table order.
pub const BUILTIN_ROWS: [&str; 6] = [
    "stowage-sqlite-full",
    "stowage-sqlite-normal",
    "stowage-sqlite-full-untagged",
    "stowage-sqlite-full-sealed",
    "stowage-filesystem",
    "stowage-null",
];

/// The SQL adapter on a PostgreSQL server (opt-in: needs a server).
pub const POSTGRES_ROW: &str = "stowage-sqlite-pg";

/// The SQLite adapter at FULL without the memo of checked messages (opt-in).
pub const NO_MEMO_ROW: &str = "stowage-sqlite-full-no-memo";
/// The SQLite adapter at FULL with every load a call into it, its load plan
/// unused (opt-in).
pub const NO_PLAN_ROW: &str = "stowage-sqlite-full-no-plan";
/// The SQLite adapter at FULL with every append a call into it, its append
/// plan unused (opt-in).
pub const NO_APPEND_PLAN_ROW: &str = "stowage-sqlite-full-no-append-plan";
/// The SQLite adapter at FULL with a writer alone spinning for its flush on
/// the store's flusher thread (opt-in).
pub const SPIN_ROW: &str = "stowage-sqlite-full-spin";

/// Prefix of third-party adapter rows.
pub const ADAPTER_PREFIX: &str = "adapter:";

/// Which component a row runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdapterChoice {
    Builtin(Builtin),
    /// A `.wasm` file; `None` grants: whatever its imports ask for.
    File {
        path: PathBuf,
        grants: Option<Vec<Capability>>,
    },
}

/// One Stowage row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StowageRow {
    /// The row id it was parsed from.
    pub id: String,
    pub adapter: AdapterChoice,
    pub sync: SqlSync,
    pub integrity: Integrity,
    /// The `sql` capability on the PostgreSQL server of [`crate::pg`], not a SQLite file.
    pub postgres: bool,
    /// Loads recognise messages checked before (`Limits::verified_cache_bytes`).
    pub memo: bool,
    /// Loads run the adapter's load plan on the host (`Limits::load_plans`).
    pub plan: bool,
    /// Appends run the adapter's append plan on the host (`Limits::append_plans`).
    pub append_plan: bool,
    /// A writer alone spins for its flush on the flusher thread (`Limits::flush_spin_us`).
    pub spin: bool,
}

impl StowageRow {
    /// Parses a Stowage row id; `Ok(None)` when `id` is not one (a native or Python row).
    pub fn parse(id: &str) -> Result<Option<Self>> {
        let full = SqlSync::Full;
        let row = |adapter, sync, integrity| {
            Some(Self {
                id: id.to_string(),
                adapter,
                sync,
                integrity,
                postgres: false,
                memo: true,
                plan: true,
                append_plan: true,
                spin: false,
            })
        };
        let sqlite = AdapterChoice::Builtin(Builtin::Sqlite);
        let default = Integrity::default();
        Ok(match id {
            "stowage-sqlite-full" => row(sqlite, full, default),
            "stowage-sqlite-normal" => row(sqlite, SqlSync::Normal, default),
            "stowage-sqlite-full-untagged" => row(sqlite, full, Integrity { tags: false, ..default }),
            "stowage-sqlite-full-sealed" => row(sqlite, full, Integrity { seal: true, ..default }),
            "stowage-filesystem" => row(AdapterChoice::Builtin(Builtin::Filesystem), full, default),
            "stowage-null" => row(AdapterChoice::Builtin(Builtin::Null), full, default),
            POSTGRES_ROW => Some(Self {
                id: id.into(),
                adapter: sqlite,
                sync: full,
                integrity: default,
                postgres: true,
                memo: true,
                plan: true,
                append_plan: true,
                spin: false,
            }),
            NO_MEMO_ROW => row(sqlite, full, default).map(|r| Self { memo: false, ..r }),
            NO_PLAN_ROW => row(sqlite, full, default).map(|r| Self { plan: false, ..r }),
            NO_APPEND_PLAN_ROW => row(sqlite, full, default).map(|r| Self { append_plan: false, ..r }),
            SPIN_ROW => row(sqlite, full, default).map(|r| Self { spin: true, ..r }),
            other => match other.strip_prefix(ADAPTER_PREFIX) {
                Some(rest) => row(parse_file(rest)?, full, default),
                None if other.starts_with("stowage-") => {
                    return Err(BenchError::Config(format!(
                        "unknown Stowage row `{other}`; rows: {}, {POSTGRES_ROW}, {NO_MEMO_ROW}, {NO_PLAN_ROW}, {NO_APPEND_PLAN_ROW}, {SPIN_ROW}, {ADAPTER_PREFIX}PATH[:GRANT,…]",
                        BUILTIN_ROWS.join(", ")
                    )));
                }
                None => None,
            },
        })
    }

    /// The adapter source to open.
    pub fn source(&self) -> AdapterSource {
        match &self.adapter {
            AdapterChoice::Builtin(builtin) => AdapterSource::Builtin(*builtin),
            AdapterChoice::File { path, .. } => AdapterSource::File(path.clone()),
        }
    }

    /// The grants the store gives: a built-in's own, the listed ones, or those the
    /// component's imports ask for (compiles it, through the runtime's cache).
    pub async fn grants(&self, runtime: &Runtime) -> Result<Grants> {
        match &self.adapter {
            AdapterChoice::Builtin(builtin) => Ok(builtin.grants()),
            AdapterChoice::File { grants: Some(listed), .. } => Ok(Grants::of(listed)),
            AdapterChoice::File { grants: None, .. } => {
                let description = runtime.describe(&self.source()).await.map_err(store_error)?;
                Ok(description.grants())
            }
        }
    }

    /// Display name in the table.
    pub fn label(&self) -> String {
        let integrity = match (self.integrity.tags, self.integrity.seal) {
            (false, _) => ", untagged",
            (true, true) => ", sealed",
            (true, false) if self.postgres => " on PostgreSQL",
            (true, false) if !self.memo => ", no memo",
            (true, false) if !self.plan => ", no plan",
            (true, false) if !self.append_plan => ", no append plan",
            (true, false) if self.spin => ", flush spin",
            (true, false) => "",
        };
        match &self.adapter {
            AdapterChoice::Builtin(builtin) => format!("Stowage {}{integrity}", builtin.name()),
            AdapterChoice::File { path, .. } => {
                let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
                format!("Stowage adapter {name}{integrity}")
            }
        }
    }

    /// SQLite's name for the durability the row promises (pairs it with a native row).
    pub fn sync_label(&self) -> &'static str {
        match (&self.adapter, self.sync) {
            _ if self.postgres => crate::runner::POSTGRES_SYNC,
            (AdapterChoice::Builtin(Builtin::Null), _) => "none",
            (_, SqlSync::Normal) => "NORMAL",
            _ => "FULL",
        }
    }

    /// False for the null adapter, which keeps nothing (read-back checks are skipped).
    pub fn keeps_messages(&self) -> bool {
        self.adapter != AdapterChoice::Builtin(Builtin::Null)
    }

    /// True for the rows whose fixed per-call cost is probed: the null adapter and
    /// third-party adapters (whose language runtime is part of every call).
    pub fn probes_call_cost(&self) -> bool {
        matches!(self.adapter, AdapterChoice::Builtin(Builtin::Null) | AdapterChoice::File { .. })
    }

    /// Size of the component: the built-in's embedded bytes or the file's size.
    pub fn adapter_bytes(&self) -> Result<u64> {
        match &self.adapter {
            AdapterChoice::Builtin(builtin) => Ok(builtin.wasm().len() as u64),
            AdapterChoice::File { path, .. } => Ok(std::fs::metadata(path).map_err(|e| BenchError::io(path, e))?.len()),
        }
    }
}

/// `PATH` or `PATH:GRANT,GRANT` (grants: `sql`, `filesystem`; `PATH:` grants nothing).
fn parse_file(rest: &str) -> Result<AdapterChoice> {
    let (path, grants) = match rest.rsplit_once(':') {
        Some((path, list)) if !path.is_empty() && list.split(',').all(|g| g.is_empty() || is_capability(g)) => {
            let grants =
                list.split(',').filter(|g| !g.is_empty()).filter_map(Capability::from_name).collect::<Vec<_>>();
            (path, Some(grants))
        }
        _ => (rest, None),
    };
    if path.is_empty() {
        return Err(BenchError::Config(format!("`{ADAPTER_PREFIX}` needs a path to a .wasm component")));
    }
    Ok(AdapterChoice::File { path: absolute(Path::new(path))?, grants })
}

fn is_capability(name: &str) -> bool {
    Capability::from_name(name).is_some()
}

/// The path made absolute, so a row's child process finds the same file.
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| BenchError::io(path, e))
}

/// A Stowage error as the bench's store error.
pub fn store_error(error: stowage::Error) -> BenchError {
    BenchError::Store(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_postgres_row() {
        let row = StowageRow::parse(POSTGRES_ROW).unwrap().unwrap();
        assert!(row.postgres && row.keeps_messages() && !row.probes_call_cost());
        assert_eq!(row.adapter, AdapterChoice::Builtin(Builtin::Sqlite));
        assert_eq!((row.label().as_str(), row.sync_label()), ("Stowage sqlite on PostgreSQL", "PG"));
        assert!(!BUILTIN_ROWS.contains(&POSTGRES_ROW));
    }

    #[test]
    fn parses_builtin_rows() {
        for id in BUILTIN_ROWS {
            let row = StowageRow::parse(id).unwrap().unwrap();
            assert_eq!(row.id, id);
        }
        let sealed = StowageRow::parse("stowage-sqlite-full-sealed").unwrap().unwrap();
        assert!(sealed.integrity.seal && sealed.integrity.tags);
        let untagged = StowageRow::parse("stowage-sqlite-full-untagged").unwrap().unwrap();
        assert!(!untagged.integrity.tags);
        assert_eq!(StowageRow::parse("stowage-sqlite-normal").unwrap().unwrap().sync_label(), "NORMAL");
        assert!(!StowageRow::parse("stowage-null").unwrap().unwrap().keeps_messages());
        assert!(StowageRow::parse("native-full").unwrap().is_none());
        assert!(StowageRow::parse("stowage-sqlite-fast").is_err());
        let no_memo = StowageRow::parse(NO_MEMO_ROW).unwrap().unwrap();
        assert!(!no_memo.memo && no_memo.integrity.tags && no_memo.sync_label() == "FULL");
        assert_eq!(no_memo.label(), "Stowage sqlite, no memo");
        let no_plan = StowageRow::parse(NO_PLAN_ROW).unwrap().unwrap();
        assert!(!no_plan.plan && no_plan.memo && no_plan.integrity.tags && no_plan.sync_label() == "FULL");
        assert_eq!(no_plan.label(), "Stowage sqlite, no plan");
        let no_append_plan = StowageRow::parse(NO_APPEND_PLAN_ROW).unwrap().unwrap();
        assert!(!no_append_plan.append_plan && no_append_plan.plan && no_append_plan.sync_label() == "FULL");
        assert_eq!(no_append_plan.label(), "Stowage sqlite, no append plan");
    }

    #[test]
    fn parses_adapter_rows_with_and_without_grants() {
        let row = StowageRow::parse("adapter:/x/c.wasm:sql").unwrap().unwrap();
        assert_eq!(row.adapter, AdapterChoice::File { path: "/x/c.wasm".into(), grants: Some(vec![Capability::Sql]) });
        assert_eq!(row.label(), "Stowage adapter c.wasm");
        let both = StowageRow::parse("adapter:/x/js.wasm:sql,filesystem").unwrap().unwrap();
        assert!(matches!(both.adapter, AdapterChoice::File { grants: Some(ref g), .. } if g.len() == 2));
        let bare = StowageRow::parse("adapter:/x/py.wasm").unwrap().unwrap();
        assert!(matches!(bare.adapter, AdapterChoice::File { grants: None, .. }));
        let none = StowageRow::parse("adapter:/x/n.wasm:").unwrap().unwrap();
        assert!(matches!(none.adapter, AdapterChoice::File { grants: Some(ref g), .. } if g.is_empty()));
        assert!(StowageRow::parse("adapter:").is_err());
    }
}

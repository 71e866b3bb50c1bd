//! The Stowage conformance catalogue: one list of cases that every storage
//! adapter `.wasm` must pass, ours and third parties'. `stowage check` runs it;
//! so does the test suite, against every shipped adapter.
//!
//! Each case runs against a fresh store in its own scratch directory and states
//! the guarantee it checks. A case declares what it [`Need`]s from the adapter or
//! the host (durable storage, SQL fault injection, tearable files); a subject
//! declares what it provides, and a case whose needs are not met is reported as
//! not applicable with the reason — never silently skipped.

pub mod cases;
mod report;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use report::{Outcome, Report};
use stowage::{
    AdapterSource, Builtin, Capability, Grants, Limits, Runtime, RuntimeConfig, SqlTarget, Store, StoreConfig,
};

/// What a case needs of its subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Reads return what was written.
    Durable,
    /// The host can fail the adapter's SQL statements on purpose (a test build
    /// of the host, `fault-injection`, and an adapter that uses `sql`).
    SqlFaults,
    /// The adapter keeps append-only logs under `/data` that a test may cut, as a
    /// crash mid-write would (the `filesystem` adapter's layout).
    TornFiles,
    /// The adapter keeps nothing by design (the `null` adapter's own contract).
    KeepsNothing,
}

impl Need {
    fn reason(self) -> &'static str {
        match self {
            Need::Durable => "needs durable storage; this adapter keeps nothing by design",
            Need::SqlFaults => {
                "needs SQL fault injection: a test build of the host (feature `fault-injection`) and an adapter \
                 that stores through the `sql` capability"
            }
            Need::TornFiles => "needs the filesystem adapter's log layout to tear files at every byte",
            Need::KeepsNothing => "describes the null adapter only",
        }
    }
}

/// Prepares a case's data directory before its store opens (e.g. a mode file
/// for a test fixture); gets the store's adapter directory.
pub type Setup = fn(&Path) -> std::io::Result<()>;

/// An adapter under test.
#[derive(Clone, Debug)]
pub struct Subject {
    pub name: String,
    pub source: AdapterSource,
    pub grants: Grants,
    /// What it provides of the cases' needs.
    pub provides: Vec<Need>,
    pub setup: Option<Setup>,
    /// Stores on a PostgreSQL server (`sql.url`) instead of SQLite files: gets
    /// each store's data directory and returns the URL of a database (or schema)
    /// of that store's own — the same one for the same directory, so a reopened
    /// store sees its data.
    pub sql_url: Option<SqlUrl>,
    /// The limits its stores open with (the defaults unless [`Subject::with_limits`]).
    pub limits: Limits,
}

/// Picks the database server URL of the store in a data directory.
pub type SqlUrl = fn(&Path) -> anyhow::Result<String>;

fn sql_faults(grants: Grants) -> Option<Need> {
    (cfg!(feature = "fault-injection") && grants.contains(Capability::Sql)).then_some(Need::SqlFaults)
}

impl Subject {
    /// One of the built-in adapters.
    pub fn builtin(builtin: Builtin) -> Self {
        let grants = builtin.grants();
        let provides = match builtin {
            Builtin::Sqlite => [Some(Need::Durable), sql_faults(grants)].into_iter().flatten().collect(),
            Builtin::Filesystem => vec![Need::Durable, Need::TornFiles],
            Builtin::Null => vec![Need::KeepsNothing],
        };
        Self {
            name: builtin.name().to_owned(),
            source: AdapterSource::Builtin(builtin),
            grants,
            provides,
            setup: None,
            sql_url: None,
            limits: Limits::default(),
        }
    }

    /// Any adapter file, with `grants`; it is expected to store durably.
    pub fn file(path: impl Into<PathBuf>, grants: Grants) -> Self {
        let path = path.into();
        let provides = [Some(Need::Durable), sql_faults(grants)].into_iter().flatten().collect();
        Self {
            name: path.display().to_string(),
            source: AdapterSource::File(path),
            grants,
            provides,
            setup: None,
            sql_url: None,
            limits: Limits::default(),
        }
    }

    /// The same subject, with `setup` run in each case's adapter directory.
    pub fn with_setup(mut self, setup: Setup) -> Self {
        self.setup = Some(setup);
        self
    }

    /// The same subject, its stores opened with `limits` (say, with the host's
    /// plans off, so every call reaches the adapter).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same subject, its stores on the database server `sql_url` names.
    pub fn with_sql_url(mut self, sql_url: SqlUrl) -> Self {
        self.sql_url = Some(sql_url);
        self
    }

    /// Why a case with `needs` does not apply, if it does not.
    pub fn not_applicable(&self, needs: &[Need]) -> Option<&'static str> {
        needs.iter().find(|n| !self.provides.contains(n)).map(|n| n.reason())
    }
}

/// The runtime shared by a test process: adapters compile once per process.
pub fn shared_runtime() -> anyhow::Result<Runtime> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime.clone());
    }
    let runtime = fresh_runtime()?;
    Ok(RUNTIME.get_or_init(|| runtime).clone())
}

/// A new runtime (a new engine), as after a host restart. Compiled components are
/// cached in memory only — each runtime compiles what it loads once — unless
/// [`cache_compiled_components_in`] named a directory.
pub fn fresh_runtime() -> anyhow::Result<Runtime> {
    Ok(Runtime::new(RuntimeConfig { cache_dir: COMPILED_CACHE.get().cloned(), ..RuntimeConfig::default() })?)
}

static COMPILED_CACHE: OnceLock<PathBuf> = OnceLock::new();

/// Makes every runtime made from now on ([`shared_runtime`], [`fresh_runtime`],
/// so the restart cases too) keep compiled components in `dir` on disk, as a
/// real host does: a restart then loads the compiled adapter instead of
/// compiling it again, which takes tens of seconds for a componentize-py
/// adapter. Once per process; `false` if a directory was already set.
pub fn cache_compiled_components_in(dir: PathBuf) -> bool {
    COMPILED_CACHE.set(dir).is_ok()
}

/// What one case gets: a store on a scratch directory, and ways to reopen it.
pub struct Ctx {
    pub subject: Subject,
    pub store: Store,
    runtime: Runtime,
    dir: tempfile::TempDir,
}

impl Ctx {
    pub async fn new(subject: &Subject, runtime: &Runtime) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        if let Some(setup) = subject.setup {
            let adapter = dir.path().join("data").join("adapter");
            std::fs::create_dir_all(&adapter)?;
            setup(&adapter)?;
        }
        let store = open_store(runtime, subject, &dir.path().join("data"), subject.limits.clone()).await?;
        Ok(Self { subject: subject.clone(), store, runtime: runtime.clone(), dir })
    }

    /// The store's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The scratch directory around the data directory (to check nothing escapes).
    pub fn scratch_dir(&self) -> &Path {
        self.dir.path()
    }

    /// A second store over the same data, on the same runtime.
    pub async fn reopened_store(&self) -> anyhow::Result<Store> {
        open_store(&self.runtime, &self.subject, &self.data_dir(), self.subject.limits.clone()).await
    }

    /// A brand-new runtime and store over the same data, after closing this
    /// case's store: what a host restart sees.
    pub async fn restarted_store(&self) -> anyhow::Result<Store> {
        self.store.close().await;
        open_store(&fresh_runtime()?, &self.subject, &self.data_dir(), self.subject.limits.clone()).await
    }

    /// Another store of the same adapter in a sibling directory.
    pub async fn sibling_store(&self, name: &str) -> anyhow::Result<(Store, PathBuf)> {
        let dir = self.dir.path().join(name);
        Ok((open_store(&self.runtime, &self.subject, &dir, self.subject.limits.clone()).await?, dir))
    }
}

pub async fn open_store(
    runtime: &Runtime,
    subject: &Subject,
    data_dir: &Path,
    limits: Limits,
) -> anyhow::Result<Store> {
    let mut config = StoreConfig::new(subject.name.clone(), subject.source.clone(), data_dir)
        .with_grants(subject.grants)
        .with_limits(limits);
    if let Some(sql_url) = subject.sql_url {
        config.sql = SqlTarget { url: Some(sql_url(data_dir)?) };
    }
    Ok(runtime.open_store(config).await?)
}

/// Runs every case of the catalogue against `subject` on `runtime`.
pub async fn run_catalogue(subject: &Subject, runtime: &Runtime) -> Report {
    let mut results = Vec::new();
    for case in cases::catalogue() {
        let outcome = if let Some(reason) = subject.not_applicable(case.needs) {
            Outcome::NotApplicable(reason.to_owned())
        } else {
            match Ctx::new(subject, runtime).await {
                Ok(ctx) => {
                    let outcome = match (case.run)(&ctx).await {
                        Ok(()) => Outcome::Pass,
                        Err(err) => Outcome::Fail(format!("{err:#}")),
                    };
                    ctx.store.close().await;
                    outcome
                }
                Err(err) => Outcome::Fail(format!("could not open a store: {err:#}")),
            }
        };
        results.push((case.name, outcome));
    }
    Report { subject: subject.name.clone(), results }
}

//! The Stowage conformance catalogue: one list of cases that every storage
//! adapter `.wasm` must pass, ours and third parties'.
//!
//! Each case runs against a fresh store in its own scratch directory. An adapter
//! comes with a [`Subject`] description, including a ledger of the cases that do
//! not apply to it, each with a written reason (as Google ADK's conformance suite
//! does); a ledgered case is reported as not applicable, never silently skipped.

pub mod cases;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::OnceLock;

use stowage::{AdapterSource, Builtin, Grants, Limits, Runtime, RuntimeConfig, Store, StoreConfig};

/// How a case can make the adapter's storage fail part-way through a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultInjector {
    /// The host's SQL capability fails the n-th statement (SQL-proxy adapters).
    Sql,
    /// Cut the adapter's files at every byte offset of the last write, as a crash
    /// mid-write would (append-only-log adapters such as `filesystem`).
    TornFiles,
    /// No way to inject storage faults.
    None,
}

/// An adapter under test.
#[derive(Clone, Debug)]
pub struct Subject {
    pub name: String,
    pub source: AdapterSource,
    pub grants: Grants,
    pub faults: FaultInjector,
    /// Cases that do not apply, with the reason.
    pub ledger: Vec<(&'static str, &'static str)>,
}

const NULL_KEEPS_NOTHING: &str = "the null adapter keeps nothing by design: reads never return what was written";
const NULL_ONLY: (&str, &str) = ("null_accepts_writes_and_keeps_nothing", "describes the null adapter only");

impl Subject {
    /// One of the built-in adapters, with its ledger.
    pub fn builtin(builtin: Builtin) -> Self {
        let (faults, ledger) = match builtin {
            Builtin::Sqlite => (FaultInjector::Sql, vec![NULL_ONLY]),
            Builtin::Filesystem => (FaultInjector::TornFiles, vec![NULL_ONLY]),
            Builtin::Null => (
                FaultInjector::None,
                cases::NAMES
                    .iter()
                    .copied()
                    .filter(|name| !cases::APPLY_TO_NULL.contains(name))
                    .map(|name| (name, NULL_KEEPS_NOTHING))
                    .collect(),
            ),
        };
        Self {
            name: builtin.name().to_owned(),
            source: AdapterSource::Builtin(builtin),
            grants: builtin.grants(),
            faults,
            ledger,
        }
    }

    /// Any adapter file; grants as given; no fault injection, so the fault case is
    /// ledgered as not applicable.
    pub fn file(path: impl Into<PathBuf>, grants: Grants) -> Self {
        let path = path.into();
        Self {
            name: path.display().to_string(),
            source: AdapterSource::File(path),
            grants,
            faults: FaultInjector::None,
            ledger: vec![
                NULL_ONLY,
                (
                    "batch_is_atomic_under_storage_faults",
                    "the host has no way to inject storage faults into this adapter",
                ),
            ],
        }
    }

    fn not_applicable(&self, case: &str) -> Option<&'static str> {
        self.ledger.iter().find(|(name, _)| *name == case).map(|(_, reason)| *reason)
    }
}

/// The runtime shared by a test process: adapters compile once per process (and
/// once per machine, through the on-disk cache).
pub fn shared_runtime() -> anyhow::Result<Runtime> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime.clone());
    }
    let runtime = fresh_runtime()?;
    Ok(RUNTIME.get_or_init(|| runtime).clone())
}

/// A new runtime (a new engine), as after a host restart.
pub fn fresh_runtime() -> anyhow::Result<Runtime> {
    let cache = std::env::temp_dir().join("stowage-test-component-cache");
    Ok(Runtime::new(RuntimeConfig { cache_dir: Some(cache), ..RuntimeConfig::default() })?)
}

/// What one case gets: a store on a scratch directory, and ways to restart it.
pub struct Ctx {
    pub subject: Subject,
    pub store: Store,
    dir: tempfile::TempDir,
}

impl Ctx {
    pub async fn new(subject: &Subject) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let store = open_store(&shared_runtime()?, subject, &dir.path().join("data"), Limits::default()).await?;
        Ok(Self { subject: subject.clone(), store, dir })
    }

    /// The store's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The scratch directory around the data directory (to check nothing escapes).
    pub fn scratch_dir(&self) -> &Path {
        self.dir.path()
    }

    /// A second store over the same data, on the shared runtime.
    pub async fn reopened_store(&self) -> anyhow::Result<Store> {
        open_store(&shared_runtime()?, &self.subject, &self.data_dir(), Limits::default()).await
    }

    /// Builds a brand-new runtime and store over the same data:
    /// what a host restart sees.
    pub async fn restarted_store(&self) -> anyhow::Result<Store> {
        open_store(&fresh_runtime()?, &self.subject, &self.data_dir(), Limits::default()).await
    }
}

pub async fn open_store(
    runtime: &Runtime,
    subject: &Subject,
    data_dir: &Path,
    limits: Limits,
) -> anyhow::Result<Store> {
    let config = StoreConfig::new(subject.name.clone(), subject.source.clone(), data_dir)
        .with_grants(subject.grants)
        .with_limits(limits);
    Ok(runtime.open_store(config).await?)
}

/// Every message of a conversation, in order (paging through the whole history).
pub async fn all_messages(store: &Store, scope: &stowage::Scope, id: &str) -> anyhow::Result<Vec<stowage::Message>> {
    let mut messages: Vec<stowage::Message> = Vec::new();
    loop {
        let after = messages.last().map_or(0, |m| m.seq);
        let page = store.load(scope, id, stowage::LoadRequest::after(after, 1000)).await?;
        let more = page.next_cursor.is_some();
        messages.extend(page.messages);
        if !more {
            return Ok(messages);
        }
    }
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    NotApplicable(String),
}

/// What running a case returns.
pub type CaseFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

/// A case of the catalogue.
pub struct Case {
    pub name: &'static str,
    pub run: for<'a> fn(&'a Ctx) -> CaseFuture<'a>,
}

/// The per-case results for one adapter.
#[derive(Debug)]
pub struct Report {
    pub subject: String,
    pub results: Vec<(&'static str, Outcome)>,
}

impl Report {
    pub fn failures(&self) -> Vec<&(&'static str, Outcome)> {
        self.results.iter().filter(|(_, o)| matches!(o, Outcome::Fail(_))).collect()
    }

    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// A table a person can read.
    pub fn render(&self) -> String {
        let mut out = format!("conformance of {}\n", self.subject);
        for (name, outcome) in &self.results {
            let line = match outcome {
                Outcome::Pass => format!("  pass  {name}\n"),
                Outcome::Fail(why) => format!("  FAIL  {name}: {why}\n"),
                Outcome::NotApplicable(why) => format!("  n/a   {name}: {why}\n"),
            };
            out.push_str(&line);
        }
        let count = |f: fn(&Outcome) -> bool| self.results.iter().filter(|(_, o)| f(o)).count();
        out.push_str(&format!(
            "{} passed, {} failed, {} not applicable\n",
            count(|o| *o == Outcome::Pass),
            count(|o| matches!(o, Outcome::Fail(_))),
            count(|o| matches!(o, Outcome::NotApplicable(_)))
        ));
        out
    }
}

/// Runs every case of the catalogue against `subject`.
pub async fn run_catalogue(subject: &Subject) -> Report {
    let mut results = Vec::new();
    for case in cases::catalogue() {
        let outcome = if let Some(reason) = subject.not_applicable(case.name) {
            Outcome::NotApplicable(reason.to_owned())
        } else {
            match Ctx::new(subject).await {
                Ok(ctx) => match (case.run)(&ctx).await {
                    Ok(()) => Outcome::Pass,
                    Err(err) => Outcome::Fail(format!("{err:#}")),
                },
                Err(err) => Outcome::Fail(format!("could not open a store: {err:#}")),
            }
        };
        results.push((case.name, outcome));
    }
    Report { subject: subject.name.clone(), results }
}

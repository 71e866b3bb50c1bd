//! The PostgreSQL server of the PostgreSQL suites: `STOWAGE_TEST_POSTGRES_URL`,
//! by default the local one (`postgres://postgres@127.0.0.1:5432/test`, trust
//! auth). Each test works in schemas of its own, dropped afterwards.
//!
//! Without a reachable server a test prints `SKIPPED` and why on stderr and
//! passes; with `STOWAGE_REQUIRE_POSTGRES=1` (CI) it fails instead, saying how to
//! get a server.
//!
//! Administration (creating, inspecting and dropping schemas, terminating
//! backends) runs on a thread and runtime of its own, so it can be called from
//! synchronous and asynchronous code alike.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use anyhow::{Context, bail};

pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The server's URL.
pub fn base_url() -> String {
    std::env::var("STOWAGE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// `url` with extra startup `options` (`-c name=value …`) and other parameters
/// (`name=value`), in URL or `key=value` form.
pub fn with_params(url: &str, options: Option<&str>, params: &[(&str, &str)]) -> String {
    let url_form = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let mut out = url.to_owned();
    let mut add = |key: &str, value: &str| {
        if url_form {
            let sep = if out.contains('?') { '&' } else { '?' };
            let value = value.replace('%', "%25").replace(' ', "%20").replace('=', "%3D").replace('&', "%26");
            out.push_str(&format!("{sep}{key}={value}"));
        } else {
            out.push_str(&format!(" {key}='{value}'"));
        }
    };
    if let Some(options) = options {
        add("options", options);
    }
    for (key, value) in params {
        add(key, value);
    }
    out
}

/// `url` working in `schema`.
pub fn in_schema(url: &str, schema: &str) -> String {
    with_params(url, Some(&format!("-c search_path={schema}")), &[])
}

/// Runs `sql` on a fresh connection, on a thread and runtime of its own: its
/// messages (rows and completions).
fn simple_query(sql: &str) -> anyhow::Result<Vec<tokio_postgres::SimpleQueryMessage>> {
    let (url, query) = (base_url(), sql.to_owned());
    std::thread::spawn(move || -> anyhow::Result<_> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            let driver = tokio::spawn(connection);
            let result = client.simple_query(&query).await;
            drop(client);
            let _ = driver.await;
            Ok(result?)
        })
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the PostgreSQL admin thread panicked"))?
    .with_context(|| format!("running {sql:?} on {}", base_url()))
}

/// Runs `sql` (one or more statements, no parameters) on the server.
pub fn admin(sql: &str) -> anyhow::Result<()> {
    simple_query(sql).map(drop)
}

/// The rows of `sql` as text (`None` for NULL).
pub fn admin_rows(sql: &str) -> anyhow::Result<Vec<Vec<Option<String>>>> {
    Ok(simple_query(sql)?
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => {
                Some((0..row.len()).map(|i| row.get(i).map(str::to_owned)).collect())
            }
            _ => None,
        })
        .collect())
}

/// Whether the server answers; `Ok(false)` (after saying so) when the test
/// should be skipped, an error when `STOWAGE_REQUIRE_POSTGRES=1`.
pub fn available(test: &str) -> anyhow::Result<bool> {
    match admin("SELECT 1") {
        Ok(()) => Ok(true),
        Err(e) if std::env::var("STOWAGE_REQUIRE_POSTGRES").as_deref() == Ok("1") => bail!(
            "{test}: STOWAGE_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at {}: {e:#}\n\
             Install one (Debian: `apt-get install postgresql`) or point STOWAGE_TEST_POSTGRES_URL at one.",
            base_url()
        ),
        Err(e) => {
            eprintln!(
                "SKIPPED {test}: no PostgreSQL server at {} ({e:#}); set STOWAGE_TEST_POSTGRES_URL, or \
                 STOWAGE_REQUIRE_POSTGRES=1 to make this a failure",
                base_url()
            );
            Ok(false)
        }
    }
}

/// A schema of its own, dropped (with everything in it) when this is dropped.
pub struct Schema {
    pub name: String,
    /// The server's URL working in this schema.
    pub url: String,
}

impl Schema {
    /// Creates `stowage_<label>_<pid>`.
    pub fn create(label: &str) -> anyhow::Result<Self> {
        let name = format!("stowage_{label}_{}", std::process::id());
        admin(&format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"))?;
        Ok(Self { url: in_schema(&base_url(), &name), name })
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Err(e) = admin(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name)) {
            eprintln!("could not drop test schema {}: {e:#}", self.name);
        }
    }
}

/// The schema prefix of the stores [`schema_for_dir`] makes in this process.
fn dir_prefix() -> String {
    format!("stowage_c{}_", std::process::id())
}

/// For [`stowage_conformance::Subject::with_sql_url`]: a schema per data
/// directory (created if missing), named after a hash of its path.
pub fn schema_for_dir(dir: &Path) -> anyhow::Result<String> {
    let mut hasher = DefaultHasher::new();
    dir.hash(&mut hasher);
    let name = format!("{}{:016x}", dir_prefix(), hasher.finish());
    admin(&format!("CREATE SCHEMA IF NOT EXISTS {name}"))?;
    Ok(in_schema(&base_url(), &name))
}

/// Drops every schema [`schema_for_dir`] made in this process: how many held
/// the SQL adapter's tables.
pub fn drop_dir_schemas() -> anyhow::Result<usize> {
    let prefix = dir_prefix();
    let used = admin_rows(&format!(
        "SELECT count(*) FROM pg_tables WHERE starts_with(schemaname, '{prefix}') AND tablename = 'stowage_messages'"
    ))?;
    let rows = admin_rows(&format!("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, '{prefix}')"))?;
    for name in rows.into_iter().filter_map(|row| row.into_iter().next().flatten()) {
        admin(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))?;
    }
    let used = used.first().and_then(|row| row.first().cloned().flatten()).unwrap_or_default();
    used.parse().with_context(|| format!("counting schemas: {used:?}"))
}

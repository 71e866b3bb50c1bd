//! The PostgreSQL server of the `native-pg` and `stowage-sqlite-pg` rows:
//! `STOWAGE_BENCH_POSTGRES_URL`, by default the local one
//! (`postgres://postgres@127.0.0.1:5432/test`, trust auth).
//!
//! Every store a phase opens (A + C, B + D, each point of E) works in a fresh schema of
//! its own ([`PgSchema`], reached through the URL's `options=-c search_path=…`), so runs
//! and phases never see each other's rows; it is dropped when the store closes (or, if a
//! phase fails, when the guard is dropped). Phase D's bytes are the schema's relations
//! (`pg_total_relation_size`: heap, indexes, TOAST), not the server's WAL.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio_postgres::{Client, NoTls};

use crate::error::{BenchError, Result};

/// The server when `STOWAGE_BENCH_POSTGRES_URL` is not set.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The environment variable naming the server.
pub const URL_ENV: &str = "STOWAGE_BENCH_POSTGRES_URL";

/// The server's URL.
pub fn base_url() -> String {
    std::env::var(URL_ENV).unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// `url` with a startup `-c search_path=SCHEMA`, in URL or `key=value` form.
pub fn in_schema(url: &str, schema: &str) -> String {
    let option = format!("-c search_path={schema}");
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}options={}", option.replace(' ', "%20").replace('=', "%3D"))
    } else {
        format!("{url} options='{option}'")
    }
}

/// A fresh connection to `url`, its I/O driven by a task on the current runtime.
pub async fn connect(url: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("[bench] PostgreSQL connection ended: {}", BenchError::from(e));
        }
    });
    Ok(client)
}

/// What the server is, for a row's notes: its version and durability settings.
pub async fn describe_server(url: &str) -> Result<String> {
    let client = connect(url).await?;
    let row = client
        .query_one(
            "SELECT version(), current_setting('synchronous_commit'), current_setting('fsync'), \
             current_setting('wal_sync_method')",
            &[],
        )
        .await?;
    let (version, sync, fsync, method): (String, String, String, String) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
    let version = version.split(" on ").next().unwrap_or(&version).to_owned();
    Ok(format!("{version}; synchronous_commit={sync}, fsync={fsync}, wal_sync_method={method}"))
}

/// A schema of its own on the server, dropped by [`PgSchema::drop_now`] or, failing
/// that, when the guard is dropped.
#[derive(Debug)]
pub struct PgSchema {
    pub name: String,
    /// The server's URL, working in this schema.
    pub url: String,
    base: String,
    dropped: bool,
}

impl PgSchema {
    /// Creates `stowage_bench_<pid>_<n>` (replacing a stale one of that name).
    pub async fn create(base: &str) -> Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("stowage_bench_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let client = connect(base).await?;
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}")).await?;
        Ok(Self { url: in_schema(base, &name), name, base: base.to_owned(), dropped: false })
    }

    /// Bytes of every relation in the schema: tables with their indexes and TOAST.
    pub async fn bytes(&self) -> Result<u64> {
        let client = connect(&self.base).await?;
        let row = client
            .query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')",
                &[&self.name],
            )
            .await?;
        let bytes: i64 = row.try_get(0)?;
        Ok(u64::try_from(bytes).unwrap_or(0))
    }

    /// Drops the schema and everything in it.
    pub async fn drop_now(mut self) -> Result<()> {
        let client = connect(&self.base).await?;
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name)).await?;
        self.dropped = true;
        Ok(())
    }
}

impl Drop for PgSchema {
    /// A phase failed before closing its store: drop the schema on a thread and
    /// runtime of its own (this may run inside an async task).
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let (base, name) = (self.base.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || -> Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| BenchError::Task(format!("runtime for dropping schema {name}: {e}")))?;
            runtime.block_on(async {
                let client = connect(&base).await?;
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE")).await?;
                Ok(())
            })
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("[bench] could not drop schema {}: {e}", self.name),
            Err(_) => eprintln!("[bench] dropping schema {} panicked", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_go_into_the_startup_options() {
        assert_eq!(in_schema("postgres://u@h:5432/db", "s1"), "postgres://u@h:5432/db?options=-c%20search_path%3Ds1");
        assert_eq!(
            in_schema("postgres://u@h/db?sslmode=disable", "s"),
            "postgres://u@h/db?sslmode=disable&options=-c%20search_path%3Ds"
        );
        assert_eq!(in_schema("host=h dbname=d", "s"), "host=h dbname=d options='-c search_path=s'");
    }
}

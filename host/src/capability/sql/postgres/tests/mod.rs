//! Tests against a real PostgreSQL server: `STOWAGE_TEST_POSTGRES_URL`, by default
//! the local one (`postgres://postgres@127.0.0.1:5432/test`). Each test works in
//! a schema of its own, dropped afterwards. Without a server each test says on
//! stderr that it was skipped and why, unless `STOWAGE_REQUIRE_POSTGRES=1`, when
//! it fails.
//!
//! - `values`: values in and out by parameter type, the server's text forms, and
//!   server errors as contract errors;
//! - `sessions`: transactions and batches, the pool and its connections.

mod sessions;
mod values;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::super::{SqlDatabase, SqlSession, Value};
use super::{Settings, runtime};
use crate::wit::SqlErrorKind;

type Res = Result<(), Box<dyn std::error::Error>>;

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// `url` with extra startup `options` (URL or `key=value` form).
fn with_options(url: &str, options: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}options={}", options.replace(' ', "%20").replace('=', "%3D"))
    } else {
        format!("{url} options='{options}'")
    }
}

/// A schema of its own on the test server, and an admin connection.
struct Scratch {
    admin: tokio_postgres::Client,
    schema: String,
    url: String,
}

impl Scratch {
    fn new() -> Option<Self> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::var("STOWAGE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
        let connected = runtime().map_err(|e| format!("{e:?}")).and_then(|rt| {
            rt.block_on(tokio_postgres::connect(&base, tokio_postgres::NoTls))
                .map(|(client, conn)| {
                    rt.spawn(conn);
                    client
                })
                .map_err(|e| e.to_string())
        });
        let admin = match connected {
            Ok(admin) => admin,
            Err(e) if std::env::var("STOWAGE_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
                panic!("STOWAGE_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at {base}: {e}")
            }
            Err(e) => {
                eprintln!("SKIPPED: PostgreSQL test: no server at {base} ({e}); set STOWAGE_TEST_POSTGRES_URL");
                return None;
            }
        };
        let schema = format!("stowage_unit_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let scratch =
            Self { url: with_options(&base, &format!("-c search_path={schema} -c TimeZone=UTC")), admin, schema };
        scratch.admin(&format!("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}", scratch.schema)).ok()?;
        Some(scratch)
    }

    fn admin(&self, sql: &str) -> Result<(), String> {
        let rt = runtime().map_err(|e| format!("{e:?}"))?;
        rt.block_on(self.admin.batch_execute(sql)).map_err(|e| e.to_string())
    }

    /// The first column of the first row, as text.
    fn admin_value(&self, sql: &str) -> Result<String, String> {
        let rt = runtime().map_err(|e| format!("{e:?}"))?;
        let rows = rt.block_on(self.admin.simple_query(sql)).map_err(|e| e.to_string())?;
        rows.iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .ok_or_else(|| format!("no row from {sql}"))
    }

    fn database(&self, settings: &Settings, url: &str) -> Result<Arc<SqlDatabase>, String> {
        Ok(Arc::new(SqlDatabase::postgres(url, settings, 1 << 20)?))
    }

    fn session_with(&self, max_connections: u32) -> Result<SqlSession, String> {
        let settings = Settings {
            max_connections,
            busy_timeout: Duration::from_millis(300),
            statement_timeout: Duration::from_millis(1_500),
        };
        Ok(SqlSession::new(self.database(&settings, &self.url)?))
    }

    fn session(&self) -> Result<SqlSession, String> {
        self.session_with(2)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = self.admin(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema)) {
            eprintln!("dropping test schema {}: {e}", self.schema);
        }
    }
}

fn ok<T>(result: Result<T, SqlErrorKind>) -> Result<T, String> {
    result.map_err(|e| format!("{e:?}"))
}

fn int(i: i64) -> Value {
    Value::Integer(i)
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

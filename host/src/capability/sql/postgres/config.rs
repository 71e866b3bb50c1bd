//! A store configured with a PostgreSQL server (`sql = { url = "postgres://…" }`):
//! the checks that configuration must pass, and its database.
//!
//! - The store must grant `sql`, and its adapter implement contract 0.2.0: a
//!   0.1.0 adapter has no `get-dialect` and writes SQLite's SQL only.
//! - Tenant isolation is refused. It gives each tenant a database of its own
//!   that the adapter cannot see past; on one server, a schema per tenant would
//!   not be that (the adapter's SQL runs as the URL's role, which can name any
//!   schema it may use), so the host does not pretend. Shared isolation keys
//!   every row by tenant; stores that need a hard boundary get a database (and a
//!   role) each.

use std::sync::Arc;
use std::time::Duration;

use super::Settings;
use crate::capability::Capability;
use crate::capability::sql::SqlDatabase;
use crate::config::{Isolation, KeySource, StoreConfig};
use crate::error::Error;
use crate::wit::ContractVersion;

/// What `config`'s limits ask of its server connections.
pub fn settings(config: &StoreConfig) -> Settings {
    Settings {
        max_connections: config.limits.instances,
        busy_timeout: Duration::from_millis(config.limits.sql_busy_timeout_ms),
        statement_timeout: config.limits.call_timeout,
    }
}

/// The database of a store whose configuration names a server, `None` for a
/// SQLite store. `version` is its adapter's contract version.
pub fn server_database(config: &StoreConfig, version: ContractVersion) -> Result<Option<Arc<SqlDatabase>>, Error> {
    let Some(url) = &config.sql.url else { return Ok(None) };
    let fail = |why: &str| Err(Error::Config(format!("store `{}`: {why}", config.name)));
    if !config.grants.contains(Capability::Sql) {
        return fail("`sql.url` names a database server, but the store does not grant `sql`");
    }
    if version < ContractVersion::V0_2 {
        return fail(
            "its adapter implements contract 0.1.0, whose `sql` interface speaks SQLite only; a `sql.url` \
             database server needs an adapter of contract 0.2.0",
        );
    }
    if config.isolation == Isolation::Tenant {
        return fail(
            "isolation = \"tenant\" gives each tenant its own SQLite database and is not available with a \
             `sql.url` server; use isolation = \"shared\" (rows are keyed by tenant), or one store, database and \
             role per group of tenants that must not share",
        );
    }
    let settings = settings(config);
    let db = SqlDatabase::postgres(url, &settings, config.limits.max_sql_result_bytes)
        .map_err(|e| Error::Config(format!("store `{}`: {e}", config.name)))?;
    if config.keys == KeySource::Generated {
        tracing::warn!(
            store = %config.name,
            "integrity keys are generated in this host's data directory, but the data lives on a database server: \
             every host sharing it needs the same keys (set key_file or key_env), and losing this directory \
             loses them"
        );
    }
    Ok(Some(Arc::new(db)))
}

//! The adapter's schema and its migrations, tracked in `PRAGMA user_version`.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::db::{self, transaction};
use crate::stowage::store::types::Error;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&[&str]] = &[&[
    "CREATE TABLE conversations (
        cid INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        user TEXT NOT NULL,
        id TEXT NOT NULL,
        meta TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 0,
        last_seq INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0,
        UNIQUE (tenant, user, id)
    )",
    "CREATE TABLE messages (
        cid INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (cid, seq),
        UNIQUE (cid, id)
    ) WITHOUT ROWID",
    "CREATE TABLE display_records (
        tenant TEXT NOT NULL,
        user TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        tool_call_id TEXT,
        status TEXT,
        body BLOB NOT NULL,
        PRIMARY KEY (tenant, user, conversation_id, seq)
    ) WITHOUT ROWID",
    "CREATE INDEX display_tool_calls ON display_records (tenant, user, conversation_id, tool_call_id)",
    "CREATE INDEX display_status ON display_records (status) WHERE status IS NOT NULL",
]];

static CURRENT: AtomicBool = AtomicBool::new(false);

fn user_version() -> Result<usize, Error> {
    let rows = db::query("PRAGMA user_version", &[])?;
    let version = rows.first().map(|r| r.int(0)).transpose()?.unwrap_or(0);
    usize::try_from(version).map_err(|_| Error::Storage(format!("bad schema version {version}")))
}

/// Brings the database to the latest schema, once per instance.
pub fn ensure() -> Result<(), Error> {
    if CURRENT.load(Ordering::Relaxed) {
        return Ok(());
    }
    transaction(|| {
        let mut version = user_version()?;
        if version > MIGRATIONS.len() {
            return Err(Error::Storage(format!(
                "the database has schema version {version}, newer than this adapter's {}; \
                 use a newer adapter",
                MIGRATIONS.len()
            )));
        }
        while version < MIGRATIONS.len() {
            for statement in MIGRATIONS[version] {
                db::execute(statement, &[])?;
            }
            version += 1;
            db::execute(&format!("PRAGMA user_version = {version}"), &[])?;
        }
        Ok(())
    })?;
    CURRENT.store(true, Ordering::Relaxed);
    Ok(())
}

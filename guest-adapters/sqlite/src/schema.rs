//! The tables of contract 0.2.0, per dialect (migration 1).
//!
//! SQLite is laid out for size on disk. A message is one row of a rowid table
//! keyed `pos = cid * 2^32 + seq`: rows sit in key order with their ~1 KiB bodies
//! inline (a WITHOUT ROWID table would push each such row into its own overflow
//! page), range scans are rowid ranges, and the only index is the unique
//! (cid, id) one that makes appends idempotent. Display records are keyed the
//! same way by a per-conversation stream id (`did`), since they may exist for a
//! conversation that has no history. `message_count` is not stored: the contract
//! makes it equal to `last_seq`. Migration 3 adds the two columns in which an
//! append's last message carries the conversation's head ([`crate::head`]). A
//! SQLite database made new gets its display tables with its first display
//! write ([`crate::display_tables`]); one migrated from 0.1.0 gets them at once.
//!
//! PostgreSQL gets the natural layout (TOAST keeps large values out of line), with
//! every text column `COLLATE "C"` so comparing and ordering are byte-wise, as in
//! SQLite, whatever the database's default collation.

use crate::db::Dialect;
use crate::db::{Db, Res, statement};
use crate::stowage::store::sql::Statement;

const SQLITE: &[&str] = &[
    "CREATE TABLE stowage_conversations (
        cid INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        scope_user TEXT NOT NULL,
        id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        meta_content BLOB NOT NULL,
        meta_tag BLOB NOT NULL,
        UNIQUE (tenant, scope_user, id)
    )",
    // pos = cid * 2^32 + seq
    "CREATE TABLE stowage_messages (
        pos INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        role INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        content BLOB NOT NULL,
        tag BLOB NOT NULL
    )",
    "CREATE UNIQUE INDEX stowage_messages_id ON stowage_messages (pos >> 32, id)",
    "CREATE TABLE stowage_display_streams (
        did INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        scope_user TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        UNIQUE (tenant, scope_user, conversation_id)
    )",
    // pos = did * 2^32 + seq
    "CREATE TABLE stowage_display_records (
        pos INTEGER PRIMARY KEY,
        message_id TEXT,
        message_type TEXT NOT NULL,
        content_type TEXT NOT NULL,
        tool_call_id TEXT,
        status TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        body BLOB NOT NULL,
        tag BLOB NOT NULL
    )",
    // The rowid rides along in the index, so a lookup is (tool_call_id, pos range).
    "CREATE INDEX stowage_display_tool_calls ON stowage_display_records (tool_call_id)
        WHERE tool_call_id IS NOT NULL",
    "CREATE INDEX stowage_display_status ON stowage_display_records (status)
        WHERE status IS NOT NULL",
];

const POSTGRES: &[&str] = &[
    "CREATE TABLE stowage_conversations (
        cid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant TEXT COLLATE \"C\" NOT NULL,
        scope_user TEXT COLLATE \"C\" NOT NULL,
        id TEXT COLLATE \"C\" NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        version BIGINT NOT NULL,
        last_seq BIGINT NOT NULL,
        meta_content BYTEA NOT NULL,
        meta_tag BYTEA NOT NULL,
        UNIQUE (tenant, scope_user, id)
    )",
    "CREATE TABLE stowage_messages (
        cid BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        id TEXT COLLATE \"C\" NOT NULL,
        role INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        content BYTEA NOT NULL,
        tag BYTEA NOT NULL,
        PRIMARY KEY (cid, seq),
        UNIQUE (cid, id)
    )",
    "CREATE TABLE stowage_display_streams (
        did BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant TEXT COLLATE \"C\" NOT NULL,
        scope_user TEXT COLLATE \"C\" NOT NULL,
        conversation_id TEXT COLLATE \"C\" NOT NULL,
        UNIQUE (tenant, scope_user, conversation_id)
    )",
    "CREATE TABLE stowage_display_records (
        did BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        message_id TEXT COLLATE \"C\",
        message_type TEXT COLLATE \"C\" NOT NULL,
        content_type TEXT COLLATE \"C\" NOT NULL,
        tool_call_id TEXT COLLATE \"C\",
        status TEXT COLLATE \"C\",
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        body BYTEA NOT NULL,
        tag BYTEA NOT NULL,
        PRIMARY KEY (did, seq)
    )",
    "CREATE INDEX stowage_display_tool_calls ON stowage_display_records (did, tool_call_id)
        WHERE tool_call_id IS NOT NULL",
    "CREATE INDEX stowage_display_status ON stowage_display_records (status)
        WHERE status IS NOT NULL",
];

/// Where `stowage_messages` is made in [`SQLITE`].
const SQLITE_MESSAGES: usize = 1;

/// Where the display tables' statements start in [`SQLITE`].
const SQLITE_DISPLAY: usize = 3;

/// `stowage_messages` as migration 3 leaves it ([`crate::head::migration`]), for
/// a database made new at the latest schema.
const SQLITE_MESSAGES_LATEST: &str = "CREATE TABLE stowage_messages (
        pos INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        role INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        content BLOB NOT NULL,
        tag BLOB NOT NULL,
        head_version INTEGER,
        head_updated_at INTEGER
    )";

/// The DDL of `dialect`, in order.
pub fn tables(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Sqlite => SQLITE,
        Dialect::Postgres => POSTGRES,
    }
}

/// Creates the 0.2.0 tables, inside the migration transaction.
pub fn create(db: &Db) -> Res<()> {
    for statement in tables(db.dialect()) {
        db.execute("creating the 0.2.0 tables", statement, &[])?;
    }
    Ok(())
}

/// The statements that make the latest SQLite history tables in a new
/// database, for the migration transaction to run in one batch: those of
/// migration 1 but the display tables, `stowage_messages` with the columns
/// migration 3 adds. Half the statements and half the pages of creating every
/// table, on a store's first call.
pub fn latest_sqlite() -> Vec<Statement> {
    let texts = SQLITE[..SQLITE_DISPLAY].iter().enumerate();
    texts
        .map(|(i, text)| statement(if i == SQLITE_MESSAGES { SQLITE_MESSAGES_LATEST } else { text }, Vec::new()))
        .collect()
}

/// Creates the SQLite display tables, as migration 1 does, inside the caller's
/// write transaction.
pub fn create_display_sqlite(db: &Db) -> Res<()> {
    for statement in &SQLITE[SQLITE_DISPLAY..] {
        db.execute("creating the display tables", statement, &[])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_messages_table_replaces_migration_1_s() {
        assert!(SQLITE[SQLITE_MESSAGES].starts_with("CREATE TABLE stowage_messages ("));
        assert!(SQLITE_MESSAGES_LATEST.starts_with("CREATE TABLE stowage_messages ("));
        assert!(SQLITE[SQLITE_DISPLAY].starts_with("CREATE TABLE stowage_display_streams ("));
        assert!(SQLITE[..SQLITE_DISPLAY].iter().all(|statement| !statement.contains("display")));
    }
}

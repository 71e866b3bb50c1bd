//! The display tables of a SQLite database made new: created by its first
//! display insert, not with the rest of its schema.
//!
//! A store's first call migrates a new database; without the display tables
//! (two tables, three indexes) that transaction makes half the statements and
//! writes half the pages, and stores that never keep display records never pay
//! for them. Until they exist every display read finds nothing, an update finds
//! no record and deleting a conversation has no stream to remove: the answers
//! the empty tables would give. The insert that needs them makes them inside
//! its own write transaction, holding SQLite's write lock, so the check it makes
//! first is current and two hosts never both make them. A database migrated
//! from 0.1.0, and every PostgreSQL database, has them from migration 1.
//! Schema version 4 records the change: an adapter from before, which takes the
//! tables for granted, refuses such a database instead of failing its calls.

use crate::db::{Db, Dialect, Res};
use crate::schema;

/// Whether the display tables exist (on a database that has them, a row).
const PROBE: &str = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stowage_display_records'";

/// Whether the display tables exist. Once seen they are remembered by the
/// instance's handle (they are never dropped); until then each call looks.
pub fn present(db: &Db) -> Res<bool> {
    if db.dialect() != Dialect::Sqlite || db.display_tables_seen() {
        return Ok(true);
    }
    let found = db.query_row("looking for the display tables", PROBE, &[])?.is_some();
    if found {
        db.remember_display_tables();
    }
    Ok(found)
}

/// Makes the display tables unless they exist. Inside a write transaction: they
/// are made with it, or not at all.
pub fn ensure(db: &Db) -> Res<()> {
    if present(db)? {
        return Ok(());
    }
    schema::create_display_sqlite(db)
}

//! Schema migrations, tracked in the adapter's own `stowage_migrations` table and
//! applied exactly once however many hosts start at the same time.
//!
//! Every step runs in a write transaction that first takes the migration lock —
//! SQLite: `begin` itself (the database's write lock, `BEGIN IMMEDIATE`);
//! PostgreSQL: `pg_advisory_xact_lock`, released at commit or rollback — and then
//! re-reads the applied version inside the transaction. A host that waited for
//! the lock therefore sees the work of the one that held it and does nothing.
//!
//! A migration may take several steps (importing a 0.1.0 database moves a bounded
//! chunk of rows per transaction), so a large import never runs into the host's
//! per-call deadline in one piece: every committed step is progress the next
//! call continues from.

use crate::db::{Db, Res, int, statement, storage};
use crate::dialect;
use crate::head;
use crate::legacy_import::{self, Progress};
use crate::schema;
use crate::stowage::store::types::Error;

/// The schema version this adapter reads and writes.
pub const LATEST: i64 = 4;

/// Migration `version`'s next step: `Done` once it is complete.
pub(crate) fn step(db: &Db, version: i64) -> Res<Progress> {
    match version {
        // The 0.2.0 tables; a 0.1.0 database's tables are set aside for import.
        1 => {
            legacy_import::set_aside(db)?;
            schema::create(db)?;
            Ok(Progress::Done)
        }
        // Rows of a 0.1.0 database, converted chunk by chunk.
        2 => legacy_import::step(db),
        // SQLite appends keep the conversation's head in their last message.
        3 => {
            for statement in head::migration(db.dialect()) {
                db.execute("keeping heads in messages", statement, &[])?;
            }
            Ok(Progress::Done)
        }
        // From here on a new SQLite database gets its display tables with its
        // first display insert ([`crate::display_tables`]). Nothing to do on a
        // database that has them; recorded so that an adapter from before,
        // which takes them for granted, refuses a database at this version
        // rather than finding them missing.
        4 => Ok(Progress::Done),
        other => Err(storage(format!("no migration to schema version {other}"))),
    }
}

/// The highest applied migration, read without the lock; `None` when it cannot be
/// read (no migrations table yet).
fn applied_unlocked(db: &Db) -> Option<i64> {
    let sql = dialect::text(db.dialect()).migrations_applied;
    let mut row = db.query_row("reading the schema version", sql, &[]).ok()??;
    row.int(0).ok()
}

/// Where one locked transaction left the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// A step that only made progress (a chunk of an import); more to do.
    More,
    /// Current; migrated from where it was.
    Current,
    /// Current; made in a new database by this transaction.
    Made,
}

/// One locked transaction: applies migrations while each completes in it, so a
/// fresh database gets its whole schema in one commit (one flush); a step that
/// only made progress (a chunk of an import) ends the transaction.
fn locked_step(db: &Db) -> Res<Step> {
    let t = dialect::text(db.dialect());
    if let Some(lock) = t.migrations_lock {
        db.query("taking the migration lock", lock, &[])?;
    }
    db.execute("creating the migrations table", t.migrations_table, &[])?;
    let applied = match db.query_row("reading the schema version", t.migrations_applied, &[])? {
        Some(mut row) => row.int(0)?,
        None => 0,
    };
    if applied > LATEST {
        return Err(storage(format!(
            "the database has schema version {applied}, newer than this adapter's {LATEST}; use a newer adapter"
        )));
    }
    if applied == 0
        && let Some(mark) = legacy_import::fresh_mark(db)?
    {
        // A new SQLite database gets the latest tables at once (migration 3's
        // columns in their CREATE TABLE, not added by two ALTER TABLEs after it),
        // its mark, and every migration recorded: one batch, one crossing.
        let mut statements = schema::latest_sqlite();
        statements.push(mark);
        statements.extend((1..=LATEST).map(|version| statement(t.migrations_record, vec![int(version)])));
        db.execute_batch("creating the tables", &statements)?;
        return Ok(Step::Made);
    }
    let mut applied = applied;
    while applied < LATEST {
        let next = applied + 1;
        if step(db, next)? != Progress::Done {
            return Ok(Step::More);
        }
        db.execute("recording a migration", t.migrations_record, &[int(next)])?;
        applied = next;
    }
    Ok(Step::Current)
}

/// One committed step of migrating; `true` once the schema is current (the
/// tests' way to stop between steps).
#[cfg(test)]
pub fn step_once(db: &Db) -> Result<bool, Error> {
    db.write("migrating the schema", || locked_step(db)).map(|step| step != Step::More)
}

/// Brings the database to [`LATEST`]: `true` when this call made a new
/// database's schema. Cheap when it already is: one read, no lock.
/// Terminates: every transaction either applies a migration or moves at least one row.
pub fn run(db: &Db) -> Result<bool, Error> {
    if applied_unlocked(db) == Some(LATEST) {
        return Ok(false);
    }
    loop {
        match db.write("migrating the schema", || locked_step(db))? {
            Step::More => {}
            Step::Current => return Ok(false),
            Step::Made => return Ok(true),
        }
    }
}

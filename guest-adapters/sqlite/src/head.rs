//! Where a conversation's head — its version, last seq and `updated-at` — is
//! kept (migration 3).
//!
//! - **PostgreSQL**: in the conversation's row, swapped by every write (the
//!   row's lock is also what orders writers across hosts).
//! - **SQLite**: an append writes the head into its batch's last message
//!   (`head_version`, `head_updated_at`) and leaves the conversation's row alone,
//!   so it dirties two pages (the message's, the id index's) instead of three:
//!   one WAL frame fewer per flushed append. `replace` and `truncate-after` still
//!   write the row. The head is whichever has the higher version: the row's or
//!   the one in the conversation's newest message. Every change bumps the
//!   version past both, so the other one is always stale. Messages written
//!   before migration 3 (or by `replace`) carry no head, and the row's counts.
//!
//! Reading the head takes two plain statements (the row, then the newest
//! message by rowid), folded here: one statement joining them made SQLite
//! re-prepare it on every step on the host's connection.

use crate::batch::History;
use crate::db::{Db, Dialect, Res, context, int, storage, uint};
use crate::stowage::store::sql::Value;

/// The DDL of migration 3, per dialect.
pub fn migration(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Sqlite => &[
            "ALTER TABLE stowage_messages ADD COLUMN head_version INTEGER",
            "ALTER TABLE stowage_messages ADD COLUMN head_updated_at INTEGER",
        ],
        Dialect::Postgres => &[],
    }
}

/// (cid) → seq, head_version, head_updated_at of the conversation's newest
/// message; no row when it has none.
pub const NEWEST: &str = "SELECT pos & 4294967295, head_version, head_updated_at FROM stowage_messages \
    WHERE pos > (?1 << 32) AND pos < (?1 << 32) + 4294967296 ORDER BY pos DESC LIMIT 1";

/// (cid, seq, id, role, created_at, content, tag, head version, now): the last
/// message of an append, carrying the conversation's new head.
pub const INSERT_WITH_HEAD: &str = "INSERT INTO stowage_messages \
    (pos, id, role, created_at, content, tag, head_version, head_updated_at) \
    VALUES ((?1 << 32) + ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

/// Whether appends in `dialect` keep the head in their last message.
pub fn in_messages(dialect: Dialect) -> bool {
    dialect == Dialect::Sqlite
}

/// A conversation's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub history: History,
    pub updated_at: i64,
}

/// What the newest message says: its seq and, if an append wrote it last, the
/// head it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Newest {
    pub seq: u64,
    pub carried: Option<(u64, i64)>,
}

/// The head, given the row's and the newest message's.
pub fn fold(row: Head, newest: Option<Newest>) -> Head {
    match newest {
        Some(Newest { seq, carried: Some((version, updated_at)) }) if version > row.history.version => {
            Head { history: History { version, last_seq: seq }, updated_at }
        }
        _ => row,
    }
}

/// The history (version, last seq) of conversation `cid`, whose row says
/// `row`: what a write checks and swaps.
pub fn history(db: &Db, cid: i64, row: History) -> Res<History> {
    // The time is not part of what a write decides on.
    Ok(current(db, cid, Head { history: row, updated_at: 0 })?.history)
}

/// The head of conversation `cid`, whose row says `row`.
pub fn current(db: &Db, cid: i64, row: Head) -> Res<Head> {
    if !in_messages(db.dialect()) {
        return Ok(row);
    }
    let Some(mut found) = db.query_row("reading the conversation's newest message", NEWEST, &[int(cid)])? else {
        return Ok(row);
    };
    let newest = context(
        (|| {
            let seq = found.uint(0)?;
            let carried = match (found.opt_int(1)?, found.opt_int(2)?) {
                (Some(version), Some(updated_at)) => Some((uint_of(version)?, updated_at)),
                (None, None) => None,
                _ => return Err(storage("half a head (a version without a time, or the reverse)")),
            };
            Ok(Newest { seq, carried })
        })(),
        || "the conversation's newest message".to_owned(),
    )?;
    Ok(fold(row, Some(newest)))
}

fn uint_of(i: i64) -> Res<u64> {
    u64::try_from(i).map_err(|_| storage(format!("negative head version {i}")))
}

/// The parameters [`INSERT_WITH_HEAD`] adds to a message insert's.
pub fn carried(version: u64, now: i64) -> Res<[Value; 2]> {
    Ok([uint("version", version)?, int(now)])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: Head = Head { history: History { version: 4, last_seq: 7 }, updated_at: 100 };

    #[test]
    fn a_newer_head_in_the_newest_message_wins() {
        let newest = Newest { seq: 9, carried: Some((5, 200)) };
        assert_eq!(fold(ROW, Some(newest)), Head { history: History { version: 5, last_seq: 9 }, updated_at: 200 });
    }

    #[test]
    fn the_row_wins_over_a_stale_or_missing_head() {
        for newest in [
            None,
            Some(Newest { seq: 7, carried: None }),
            Some(Newest { seq: 7, carried: Some((3, 50)) }),
            Some(Newest { seq: 7, carried: Some((4, 50)) }),
        ] {
            assert_eq!(fold(ROW, newest), ROW, "{newest:?}");
        }
    }
}

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
//! The statements that read a conversation's row on SQLite (for a write, for
//! `info` and `list`) read its newest message in the same step, through three
//! scalar subqueries ([`newest_message_columns!`]), folded here. A join of the
//! two instead made SQLite mark the statement to be planned again whenever a
//! binding changes, and the host's statement cache clears the bindings after
//! every use: the join was parsed again on every call.

use crate::batch::History;
use crate::db::{Dialect, Res, Row, int, storage, uint};
use crate::stowage::store::sql::Value;

/// One column of the newest message of the conversation whose
/// `stowage_conversations` row the statement reads (NULL when it has none).
macro_rules! newest_message {
    ($column:literal) => {
        concat!(
            "(SELECT ",
            $column,
            " FROM stowage_messages m WHERE m.pos > (stowage_conversations.cid << 32) \
             AND m.pos < (stowage_conversations.cid << 32) + 4294967296 ORDER BY m.pos DESC LIMIT 1)"
        )
    };
}

/// The newest message's seq, head version and head time, in that order, as
/// columns of a SQLite statement on `stowage_conversations` (read back by
/// [`newest`]). Each is a seek to the end of the conversation's rowid range.
macro_rules! newest_message_columns {
    () => {
        concat!(
            newest_message!("m.pos & 4294967295"),
            ", ",
            newest_message!("m.head_version"),
            ", ",
            newest_message!("m.head_updated_at")
        )
    };
}

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

/// The newest message from the [`newest_message_columns!`] that start at
/// column `first` of `row`: `None` when the conversation has no message.
pub fn newest(row: &mut Row, first: usize) -> Res<Option<Newest>> {
    let Some(seq) = row.opt_int(first)? else {
        return Ok(None);
    };
    let carried = match (row.opt_int(first + 1)?, row.opt_int(first + 2)?) {
        (Some(version), Some(updated_at)) => Some((uint_of(version)?, updated_at)),
        (None, None) => None,
        _ => return Err(storage("the newest message holds half a head (a version without a time, or the reverse)")),
    };
    Ok(Some(Newest { seq: uint_of(seq)?, carried }))
}

/// The head of a conversation whose row says `row`, given the newest
/// message's columns from column `first` of the statement's result on SQLite
/// (other dialects keep the head in the row).
pub fn current(dialect: Dialect, row: Head, result: &mut Row, first: usize) -> Res<Head> {
    if !in_messages(dialect) {
        return Ok(row);
    }
    Ok(fold(row, newest(result, first)?))
}

fn uint_of(i: i64) -> Res<u64> {
    u64::try_from(i).map_err(|_| storage(format!("negative seq or head version {i}")))
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

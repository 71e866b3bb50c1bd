//! The append plan (`stowage:writes/append-plan`): the INSERTs of
//! [`crate::fast_append`] as statements the host runs itself, on SQLite only
//! (on PostgreSQL every append stays a call, as it always goes the long way).
//!
//! They store exactly the rows the one-crossing append stores: each message at
//! `(cid << 32) + seq`, the batch's last one carrying the conversation's new
//! head ([`crate::head`]). The host knows neither the conversation's key nor
//! how its head is kept, so the first statement finds the conversation by
//! (tenant, user, id) in scalar subqueries, and its message's id is NULL when
//! there is no such conversation or its head, as [`crate::head::fold`] reads
//! it, is not the host's guess. The NOT NULL constraint then fails the
//! statement, and the host rolls the batch back and calls `append`. The
//! others follow the row the statement before them inserted (the host runs
//! them right after it, on the same connection): no look-up at all. A stored
//! id fails on the `(conversation, id)` index.
//!
//! Each is a one-row `INSERT … VALUES`: inside a transaction (a commit group,
//! or the batch's own) SQLite keeps a statement journal for an `INSERT …
//! SELECT`, which may write many rows, and in a long commit group that journal
//! spills to a temporary file (measured: seven times the `pwrite`s in the
//! bench's concurrent phase).

use crate::db::{Db, Dialect};
use crate::exports::stowage::writes::append_plan::{Dialect as PlanDialect, MessageStatements};

/// The newest message of conversation `c` (the statement's row), as the end
/// of a subquery that reads one value of it (no row when it has none).
macro_rules! of_newest_of_c {
    () => {
        " FROM stowage_messages m WHERE m.pos > (c.cid << 32) AND m.pos < (c.cid << 32) + 4294967296 \
         ORDER BY m.pos DESC LIMIT 1)"
    };
}

/// True when conversation `c` is at version `?10` with last seq `?4 - 1`, as
/// [`crate::fast_append`]'s guard has it for a known key.
macro_rules! head_of_c_is {
    () => {
        concat!(
            "CASE WHEN c.version < ?10 THEN (SELECT m.head_version = ?10 AND m.head_updated_at IS NOT NULL \
             AND m.pos = (c.cid << 32) + ?4 - 1",
            of_newest_of_c!(),
            " ELSE c.version = ?10 AND c.last_seq = ?4 - 1 AND COALESCE((SELECT COALESCE(m.head_version, -1) \
             <= c.version AND (m.head_version IS NULL) = (m.head_updated_at IS NULL)",
            of_newest_of_c!(),
            ", 1) END"
        )
    };
}

/// The conversation's row `c`, found by (tenant `?1`, user `?2`, id `?3`),
/// with a key in the adapter's range, as the end of a subquery.
macro_rules! of_the_conversation {
    () => {
        " FROM stowage_conversations c WHERE c.tenant = +?1 AND c.scope_user = +?2 AND c.id = +?3 \
         AND c.cid BETWEEN 1 AND 2147483647"
    };
}

/// The message's rowid, `(cid << 32) + ?4` (NULL when there is no conversation).
macro_rules! position {
    () => {
        concat!("((SELECT c.cid", of_the_conversation!(), ") << 32) + ?4")
    };
}

/// The batch's first message, its id NULL unless the conversation's head is
/// the guess; it carries the new head (`?11`, `?12`) when it is also the last.
pub const FIRST: &str = concat!(
    "INSERT INTO stowage_messages (pos, id, role, created_at, content, tag, head_version, head_updated_at) \
     VALUES (",
    position!(),
    ", (SELECT ?5",
    of_the_conversation!(),
    " AND ",
    head_of_c_is!(),
    "), ?6, ?7, ?8, ?9, ?11, ?12)"
);

/// The row after the batch's previous one (`last_insert_rowid()`: the host
/// runs each statement of a batch right after the one before it, on the same
/// connection), its id NULL unless that row is this conversation's seq `?4 - 1`
/// (never when run on its own: no row inserted yet, or another one).
macro_rules! next_position_and_id {
    () => {
        "last_insert_rowid() + 1, CASE WHEN last_insert_rowid() > 4294967295 \
         AND (last_insert_rowid() & 4294967295) = ?4 - 1 THEN ?5 END"
    };
}

/// A message between the batch's first and last.
pub const MIDDLE: &str = concat!(
    "INSERT INTO stowage_messages (pos, id, role, created_at, content, tag) VALUES (",
    next_position_and_id!(),
    ", ?6, ?7, ?8, ?9)"
);

/// The last message of a longer batch, carrying the new head (`?11`, `?12`).
pub const LAST: &str = concat!(
    "INSERT INTO stowage_messages (pos, id, role, created_at, content, tag, head_version, head_updated_at) \
     VALUES (",
    next_position_and_id!(),
    ", ?6, ?7, ?8, ?9, ?11, ?12)"
);

/// The append plan for `asked`, on SQLite only.
pub fn plan(db: &Db, asked: PlanDialect) -> Option<MessageStatements> {
    match (db.dialect(), asked) {
        (Dialect::Sqlite, PlanDialect::Sqlite) => {
            Some(MessageStatements { first: FIRST.to_owned(), middle: MIDDLE.to_owned(), last: LAST.to_owned() })
        }
        _ => None,
    }
}

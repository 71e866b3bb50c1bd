//! The SQL text of every operation, once per dialect. The logic is the same for
//! both; so are the parameters of each statement (same count, same order). Only
//! the text differs:
//!
//! - SQLite packs a message's (cid, seq) into its rowid `pos = cid * 2^32 + seq`
//!   (and a display record's (did, seq) likewise), so rows are stored in key order
//!   with their bodies inline and every range scan is a rowid range, no index;
//! - PostgreSQL keeps natural `(cid, seq)` keys, text columns `COLLATE "C"` (byte
//!   order, like SQLite's BINARY), and locks the conversation's row
//!   (`FOR UPDATE`) before it writes, so the database serialises writers of one
//!   conversation across hosts.
//!
//! Parameters are `?N` for SQLite and `$N` for PostgreSQL; the host never rewrites
//! SQL.
//!
//! SQLite limits are `LIMIT ?N + 0`, and some equalities compare with `+?N`:
//! SQLite plans a bare `LIMIT ?N` (or an equality some candidate plan leaves
//! unindexed) for the bound value and prepares the statement again once the
//! host's statement cache clears the bindings, on every call (`tests::plans`).

use crate::db::Dialect;

/// Parameters of [`Text::message_insert`] (the head's follow on SQLite:
/// [`crate::head::INSERT_WITH_HEAD`]).
pub const MESSAGE_INSERT_PARAMS: usize = 7;

/// The SQLite statements of the load plan (`stowage:reads/load-plan`): the host
/// runs them itself in place of [`crate::reads::load`]'s two statements.
/// Parameters (tenant, user, id, limit) for `latest`, (tenant, user, id, seq
/// bound, limit) for the others; a bound past [`crate::model::SEQ_LIMIT`] is
/// clamped there, as `load` clamps it.
///
/// Each is `load`'s own rowid range scan, the conversation's key found by a
/// scalar subquery that runs once, before the scan; the last column, the
/// conversation's newest seq, is one seek to the end of its range. The host
/// checks a page against it: SQLite does not always notice a damaged page in
/// the middle of a range scan, and a scan that stops there early would return
/// a history cut short (`tests/damage.rs` on the host).
macro_rules! plan_key {
    () => {
        "((SELECT cid FROM stowage_conversations WHERE tenant = +?1 AND scope_user = +?2 AND id = +?3 \
         AND cid BETWEEN 1 AND 2147483647) << 32)"
    };
}
macro_rules! plan_columns {
    () => {
        concat!(
            "SELECT pos & 4294967295, id, role, created_at, content, tag, (SELECT pos & 4294967295 \
             FROM stowage_messages WHERE pos > ",
            plan_key!(),
            " AND pos < ",
            plan_key!(),
            " + 4294967296 ORDER BY pos DESC LIMIT 1) FROM stowage_messages WHERE pos > ",
            plan_key!()
        )
    };
}
pub const PLAN_LATEST: &str =
    concat!(plan_columns!(), " AND pos < ", plan_key!(), " + 4294967296 ORDER BY pos DESC LIMIT ?4 + 0");
pub const PLAN_AFTER: &str = concat!(
    plan_columns!(),
    " + MIN(?4, 4294967296) AND pos < ",
    plan_key!(),
    " + 4294967296 ORDER BY pos LIMIT ?5 + 0"
);
pub const PLAN_BEFORE: &str =
    concat!(plan_columns!(), " AND pos < ", plan_key!(), " + MIN(?4, 4294967296) ORDER BY pos DESC LIMIT ?5 + 0");

/// The SQL text of one dialect. Parameter lists are documented once, on the field.
pub struct Text {
    /// (tenant, user, id) → cid, version, last_seq.
    pub conversation_key: &'static str,
    /// As `conversation_key`, and holds the row until the transaction ends; on
    /// SQLite followed by the newest message's columns ([`crate::head`]).
    pub conversation_key_for_write: &'static str,
    /// (tenant, user, id) → id, tenant, user, meta_content, meta_tag, created_at,
    /// updated_at, last_seq, version, cid (the row's head), and on SQLite the
    /// newest message's columns ([`crate::head`]).
    pub conversation_info: &'static str,
    /// (tenant, user, id, now, meta_content, meta_tag) -> the new row's cid; does
    /// nothing, and returns no row, if it exists.
    pub conversation_create: &'static str,
    /// (tenant, user, id, meta_content, meta_tag): changes one row, or none when
    /// the conversation does not exist.
    pub conversation_meta_update: &'static str,
    /// (cid, old version, new version, last_seq, now): a compare-and-swap on the
    /// version; changes no row when another writer changed the history. On SQLite
    /// the row may be older than the head an append left in its last message
    /// ([`crate::head`]), so the row must only be no newer than the head read
    /// (writers there take turns on the database's write lock).
    pub conversation_update: &'static str,
    /// (cid).
    pub conversation_delete: &'static str,
    /// (tenant, user, limit) → info columns, by id.
    pub conversations_first: &'static str,
    /// (tenant, user, after, limit) → info columns, by id.
    pub conversations_after: &'static str,
    /// (cid, seq, id, role, created_at, content, tag).
    pub message_insert: &'static str,
    /// (cid, id…) → id, seq. Completed by [`messages_by_id`].
    messages_by_id_head: &'static str,
    /// (cid, limit) → message columns, newest first.
    pub messages_latest: &'static str,
    /// (cid, after, limit) → message columns, oldest first.
    pub messages_after: &'static str,
    /// (cid, before, limit) → message columns, newest first.
    pub messages_before: &'static str,
    /// (cid).
    pub messages_delete_all: &'static str,
    /// (cid, seq): removes every message after `seq`.
    pub messages_delete_after: &'static str,
    /// (tenant, user, conversation id) → did.
    pub stream_key: &'static str,
    /// As `stream_key`, and holds the row until the transaction ends.
    pub stream_key_for_write: &'static str,
    /// (tenant, user, conversation id); does nothing if it exists.
    pub stream_create: &'static str,
    /// (did).
    pub stream_delete: &'static str,
    /// (did) → the last display seq, no row when there is none.
    pub display_last_seq: &'static str,
    /// (did, seq, message_id, message_type, content_type, tool_call_id, status,
    /// created_at, updated_at, body, tag).
    pub display_insert: &'static str,
    /// (tenant, user, conversation id, seq, message_id, message_type,
    /// content_type, tool_call_id, status, created_at, updated_at, body, tag).
    pub display_update: &'static str,
    /// (did).
    pub display_delete_all: &'static str,
    /// (tenant, user, conversation id, tool call id) → display columns.
    pub display_by_tool_call: &'static str,
    /// (tenant, user, conversation id, after, limit) → display columns.
    pub display_list: &'static str,
    /// Completed by [`display_by_status`].
    by_status_head: &'static str,
    by_status_after: &'static str,
    by_status_tail: &'static str,
    /// The migrations table, created if missing.
    pub migrations_table: &'static str,
    /// () → the highest applied migration, 0 when none.
    pub migrations_applied: &'static str,
    /// (version): records a migration as applied now.
    pub migrations_record: &'static str,
    /// Taken inside the migration transaction so concurrent hosts migrate one at a
    /// time; `None` where `begin` already takes a database-wide write lock.
    pub migrations_lock: Option<&'static str>,
}

/// The SQL text for `dialect`.
pub fn text(dialect: Dialect) -> &'static Text {
    match dialect {
        Dialect::Sqlite => &SQLITE,
        Dialect::Postgres => &POSTGRES,
    }
}

/// Placeholder `n` (1-based) in `dialect`.
pub fn placeholder(dialect: Dialect, n: usize) -> String {
    match dialect {
        Dialect::Sqlite => format!("?{n}"),
        Dialect::Postgres => format!("${n}"),
    }
}

/// `count` placeholders from `first`, comma-separated.
pub fn placeholders(dialect: Dialect, first: usize, count: usize) -> String {
    (first..first + count).map(|n| placeholder(dialect, n)).collect::<Vec<_>>().join(", ")
}

/// (cid, id × `ids`) → id, seq of the stored messages among `ids`.
pub fn messages_by_id(dialect: Dialect, ids: usize) -> String {
    format!("{}{})", text(dialect).messages_by_id_head, placeholders(dialect, 2, ids))
}

/// (limit, [tenant, user, conversation id, seq when `after`], status × `statuses`)
/// → tenant, user, conversation id, display columns; in (tenant, user,
/// conversation id, seq) byte order, strictly after the position when given.
pub fn display_by_status(dialect: Dialect, statuses: usize, after: bool) -> String {
    let t = text(dialect);
    let first_status = if after { 6 } else { 2 };
    format!(
        "{}{}){}{}",
        t.by_status_head,
        placeholders(dialect, first_status, statuses),
        if after { t.by_status_after } else { "" },
        t.by_status_tail
    )
}

const SQLITE: Text = Text {
    conversation_key: "SELECT cid, version, last_seq FROM stowage_conversations \
        WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3",
    conversation_key_for_write: concat!(
        "SELECT cid, version, last_seq, ",
        newest_message_columns!(),
        " FROM stowage_conversations WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3"
    ),
    conversation_info: concat!(
        "SELECT id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, last_seq, version, cid, ",
        newest_message_columns!(),
        " FROM stowage_conversations WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3"
    ),
    conversation_create: "INSERT INTO stowage_conversations \
        (tenant, scope_user, id, created_at, updated_at, version, last_seq, meta_content, meta_tag) \
        VALUES (?1, ?2, ?3, ?4, ?4, 0, 0, ?5, ?6) ON CONFLICT (tenant, scope_user, id) DO NOTHING RETURNING cid",
    conversation_meta_update: "UPDATE stowage_conversations SET meta_content = ?4, meta_tag = ?5 \
        WHERE tenant = ?1 AND scope_user = ?2 AND id = ?3",
    conversation_update: "UPDATE stowage_conversations SET version = ?3, last_seq = ?4, updated_at = ?5 \
        WHERE cid = ?1 AND version <= ?2",
    conversation_delete: "DELETE FROM stowage_conversations WHERE cid = ?1",
    conversations_first: concat!(
        "SELECT id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, last_seq, version, cid, ",
        newest_message_columns!(),
        " FROM stowage_conversations WHERE tenant = +?1 AND scope_user = +?2 ORDER BY id LIMIT ?3 + 0"
    ),
    conversations_after: concat!(
        "SELECT id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, last_seq, version, cid, ",
        newest_message_columns!(),
        " FROM stowage_conversations WHERE tenant = +?1 AND scope_user = +?2 AND id > +?3 ORDER BY id LIMIT ?4 + 0"
    ),
    message_insert: "INSERT INTO stowage_messages (pos, id, role, created_at, content, tag) \
        VALUES ((?1 << 32) + ?2, ?3, ?4, ?5, ?6, ?7)",
    messages_by_id_head: "SELECT id, pos & 4294967295 FROM stowage_messages \
        WHERE pos >> 32 = ?1 AND id IN (",
    messages_latest: "SELECT pos & 4294967295, id, role, created_at, content, tag FROM stowage_messages \
        WHERE pos > (?1 << 32) AND pos < (?1 << 32) + 4294967296 ORDER BY pos DESC LIMIT ?2 + 0",
    messages_after: "SELECT pos & 4294967295, id, role, created_at, content, tag FROM stowage_messages \
        WHERE pos > (?1 << 32) + ?2 AND pos < (?1 << 32) + 4294967296 ORDER BY pos LIMIT ?3 + 0",
    messages_before: "SELECT pos & 4294967295, id, role, created_at, content, tag FROM stowage_messages \
        WHERE pos > (?1 << 32) AND pos < (?1 << 32) + ?2 ORDER BY pos DESC LIMIT ?3 + 0",
    messages_delete_all: "DELETE FROM stowage_messages \
        WHERE pos > (?1 << 32) AND pos < (?1 << 32) + 4294967296",
    messages_delete_after: "DELETE FROM stowage_messages \
        WHERE pos > (?1 << 32) + ?2 AND pos < (?1 << 32) + 4294967296",
    stream_key: "SELECT did FROM stowage_display_streams \
        WHERE tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3",
    stream_key_for_write: "SELECT did FROM stowage_display_streams \
        WHERE tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3",
    stream_create: "INSERT INTO stowage_display_streams (tenant, scope_user, conversation_id) \
        VALUES (?1, ?2, ?3) ON CONFLICT (tenant, scope_user, conversation_id) DO NOTHING",
    stream_delete: "DELETE FROM stowage_display_streams WHERE did = ?1",
    display_last_seq: "SELECT pos & 4294967295 FROM stowage_display_records \
        WHERE pos > (?1 << 32) AND pos < (?1 << 32) + 4294967296 ORDER BY pos DESC LIMIT 1",
    display_insert: "INSERT INTO stowage_display_records (pos, message_id, message_type, content_type, \
        tool_call_id, status, created_at, updated_at, body, tag) \
        VALUES ((?1 << 32) + ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    display_update: "UPDATE stowage_display_records SET message_id = ?5, message_type = ?6, \
        content_type = ?7, tool_call_id = ?8, status = ?9, created_at = ?10, updated_at = ?11, \
        body = ?12, tag = ?13 \
        WHERE pos = ((SELECT did FROM stowage_display_streams \
        WHERE tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3) << 32) + ?4",
    display_delete_all: "DELETE FROM stowage_display_records \
        WHERE pos > (?1 << 32) AND pos < (?1 << 32) + 4294967296",
    display_by_tool_call: "SELECT r.pos & 4294967295, r.message_id, r.message_type, r.content_type, \
        r.tool_call_id, r.status, r.created_at, r.updated_at, r.body, r.tag \
        FROM stowage_display_streams s JOIN stowage_display_records r \
        ON r.pos > (s.did << 32) AND r.pos < (s.did << 32) + 4294967296 \
        WHERE s.tenant = +?1 AND s.scope_user = +?2 AND s.conversation_id = +?3 AND r.tool_call_id = +?4 \
        ORDER BY r.pos",
    display_list: "SELECT r.pos & 4294967295, r.message_id, r.message_type, r.content_type, \
        r.tool_call_id, r.status, r.created_at, r.updated_at, r.body, r.tag \
        FROM stowage_display_streams s JOIN stowage_display_records r \
        ON r.pos > (s.did << 32) + ?4 AND r.pos < (s.did << 32) + 4294967296 \
        WHERE s.tenant = +?1 AND s.scope_user = +?2 AND s.conversation_id = +?3 \
        ORDER BY r.pos LIMIT ?5 + 0",
    by_status_head: "SELECT s.tenant, s.scope_user, s.conversation_id, r.pos & 4294967295, \
        r.message_id, r.message_type, r.content_type, r.tool_call_id, r.status, r.created_at, \
        r.updated_at, r.body, r.tag \
        FROM stowage_display_records r JOIN stowage_display_streams s ON s.did = r.pos >> 32 \
        WHERE r.status IN (",
    by_status_after: " AND (s.tenant, s.scope_user, s.conversation_id, r.pos & 4294967295) \
        > (?2, ?3, ?4, ?5)",
    by_status_tail: " ORDER BY s.tenant, s.scope_user, s.conversation_id, r.pos LIMIT ?1 + 0",
    migrations_table: "CREATE TABLE IF NOT EXISTS stowage_migrations \
        (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
    migrations_applied: "SELECT COALESCE(MAX(version), 0) FROM stowage_migrations",
    migrations_record: "INSERT INTO stowage_migrations (version, applied_at) \
        VALUES (?1, CAST(strftime('%s', 'now') AS INTEGER) * 1000)",
    migrations_lock: None,
};

const POSTGRES: Text = Text {
    conversation_key: "SELECT cid, version, last_seq FROM stowage_conversations \
        WHERE tenant = $1 AND scope_user = $2 AND id = $3",
    conversation_key_for_write: "SELECT cid, version, last_seq FROM stowage_conversations \
        WHERE tenant = $1 AND scope_user = $2 AND id = $3 FOR UPDATE",
    conversation_info: "SELECT id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, \
        last_seq, version, cid FROM stowage_conversations WHERE tenant = $1 AND scope_user = $2 AND id = $3",
    conversation_create: "INSERT INTO stowage_conversations \
        (tenant, scope_user, id, created_at, updated_at, version, last_seq, meta_content, meta_tag) \
        VALUES ($1, $2, $3, $4, $4, 0, 0, $5, $6) ON CONFLICT (tenant, scope_user, id) DO NOTHING RETURNING cid",
    conversation_meta_update: "UPDATE stowage_conversations SET meta_content = $4, meta_tag = $5 \
        WHERE tenant = $1 AND scope_user = $2 AND id = $3",
    conversation_update: "UPDATE stowage_conversations SET version = $3, last_seq = $4, updated_at = $5 \
        WHERE cid = $1 AND version = $2",
    conversation_delete: "DELETE FROM stowage_conversations WHERE cid = $1",
    conversations_first: "SELECT id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, \
        last_seq, version, cid FROM stowage_conversations WHERE tenant = $1 AND scope_user = $2 \
        ORDER BY id LIMIT $3",
    conversations_after: "SELECT id, tenant, scope_user, meta_content, meta_tag, created_at, updated_at, \
        last_seq, version, cid FROM stowage_conversations WHERE tenant = $1 AND scope_user = $2 AND id > $3 \
        ORDER BY id LIMIT $4",
    message_insert: "INSERT INTO stowage_messages (cid, seq, id, role, created_at, content, tag) \
        VALUES ($1, $2, $3, $4, $5, $6, $7)",
    messages_by_id_head: "SELECT id, seq FROM stowage_messages WHERE cid = $1 AND id IN (",
    messages_latest: "SELECT seq, id, role, created_at, content, tag FROM stowage_messages \
        WHERE cid = $1 ORDER BY seq DESC LIMIT $2",
    messages_after: "SELECT seq, id, role, created_at, content, tag FROM stowage_messages \
        WHERE cid = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    messages_before: "SELECT seq, id, role, created_at, content, tag FROM stowage_messages \
        WHERE cid = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
    messages_delete_all: "DELETE FROM stowage_messages WHERE cid = $1",
    messages_delete_after: "DELETE FROM stowage_messages WHERE cid = $1 AND seq > $2",
    stream_key: "SELECT did FROM stowage_display_streams \
        WHERE tenant = $1 AND scope_user = $2 AND conversation_id = $3",
    stream_key_for_write: "SELECT did FROM stowage_display_streams \
        WHERE tenant = $1 AND scope_user = $2 AND conversation_id = $3 FOR UPDATE",
    stream_create: "INSERT INTO stowage_display_streams (tenant, scope_user, conversation_id) \
        VALUES ($1, $2, $3) ON CONFLICT (tenant, scope_user, conversation_id) DO NOTHING",
    stream_delete: "DELETE FROM stowage_display_streams WHERE did = $1",
    display_last_seq: "SELECT seq FROM stowage_display_records WHERE did = $1 ORDER BY seq DESC LIMIT 1",
    display_insert: "INSERT INTO stowage_display_records (did, seq, message_id, message_type, content_type, \
        tool_call_id, status, created_at, updated_at, body, tag) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    display_update: "UPDATE stowage_display_records SET message_id = $5, message_type = $6, \
        content_type = $7, tool_call_id = $8, status = $9, created_at = $10, updated_at = $11, \
        body = $12, tag = $13 \
        WHERE did = (SELECT did FROM stowage_display_streams \
        WHERE tenant = $1 AND scope_user = $2 AND conversation_id = $3) AND seq = $4",
    display_delete_all: "DELETE FROM stowage_display_records WHERE did = $1",
    display_by_tool_call: "SELECT r.seq, r.message_id, r.message_type, r.content_type, \
        r.tool_call_id, r.status, r.created_at, r.updated_at, r.body, r.tag \
        FROM stowage_display_streams s JOIN stowage_display_records r ON r.did = s.did \
        WHERE s.tenant = $1 AND s.scope_user = $2 AND s.conversation_id = $3 AND r.tool_call_id = $4 \
        ORDER BY r.seq",
    display_list: "SELECT r.seq, r.message_id, r.message_type, r.content_type, \
        r.tool_call_id, r.status, r.created_at, r.updated_at, r.body, r.tag \
        FROM stowage_display_streams s JOIN stowage_display_records r ON r.did = s.did \
        WHERE s.tenant = $1 AND s.scope_user = $2 AND s.conversation_id = $3 AND r.seq > $4 \
        ORDER BY r.seq LIMIT $5",
    by_status_head: "SELECT s.tenant, s.scope_user, s.conversation_id, r.seq, \
        r.message_id, r.message_type, r.content_type, r.tool_call_id, r.status, r.created_at, \
        r.updated_at, r.body, r.tag \
        FROM stowage_display_records r JOIN stowage_display_streams s ON s.did = r.did \
        WHERE r.status IN (",
    by_status_after: " AND (s.tenant, s.scope_user, s.conversation_id, r.seq) > ($2, $3, $4, $5)",
    by_status_tail: " ORDER BY s.tenant, s.scope_user, s.conversation_id, r.seq LIMIT $1",
    migrations_table: "CREATE TABLE IF NOT EXISTS stowage_migrations \
        (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)",
    migrations_applied: "SELECT COALESCE(MAX(version), 0) FROM stowage_migrations",
    migrations_record: "INSERT INTO stowage_migrations (version, applied_at) \
        VALUES ($1, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)",
    // A constant key ("STOWAGE1"): transaction-scoped, so released at commit or
    // rollback, and safe behind connection poolers (unlike session locks).
    migrations_lock: Some("SELECT 1 FROM pg_advisory_xact_lock(6004511439367652657)"),
};

#[cfg(test)]
mod tests;

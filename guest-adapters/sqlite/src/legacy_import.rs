//! Importing a database written by the 0.1.0 adapter (SQLite only: 0.1.0 had no
//! PostgreSQL dialect), in place and without losing a row.
//!
//! The 0.1.0 adapter tracked its schema as `PRAGMA user_version = 1` with tables
//! `conversations`, `messages` and `display_records`. Migration 1 renames them to
//! `stowage_legacy_*` and sets `user_version` to 2, so the 0.1.0 adapter refuses
//! the database ("newer than this adapter") instead of misreading it. Migration 2
//! then moves rows chunk by chunk: each chunk is converted to the plain legacy
//! form ([`crate::legacy`]), inserted into the 0.2.0 tables (same cids, same
//! seqs) and deleted from the legacy table in the same transaction, so a chunk is
//! moved exactly once even if the call is cut short. When the legacy tables are
//! empty they are dropped and migration 2 is recorded.

use std::collections::HashMap;

use crate::db::Dialect;
use crate::db::{Db, Res, Row, context, int, key_params, statement, storage};
use crate::dialect;
use crate::exports::stowage::store::conversation_store::Scope;
use crate::legacy;
use crate::model::{CID_LIMIT, SEQ_LIMIT, role_code};
use crate::stowage::store::sql::{Statement, Value};

/// Whether a multi-step migration is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    Done,
    More,
}

/// The 0.1.0 tables and the names they are set aside under, in import order.
const TABLES: [(&str, &str); 3] = [
    ("conversations", "stowage_legacy_conversations"),
    ("messages", "stowage_legacy_messages"),
    ("display_records", "stowage_legacy_display_records"),
];

/// `user_version` of a 0.1.0 database, and of every database this adapter has
/// migrated.
const LEGACY_USER_VERSION: i64 = 1;
const USER_VERSION: i64 = 2;

/// Rows per chunk; halved while a chunk exceeds the host's result size cap.
const CHUNK_ROWS: i64 = 256;

/// Migration 1's part: set a 0.1.0 database's tables aside and mark the database
/// as 0.2.0's.
pub fn set_aside(db: &Db) -> Res<()> {
    if db.dialect() != Dialect::Sqlite {
        return Ok(());
    }
    match user_version(db)? {
        0 => {}
        LEGACY_USER_VERSION => {
            for (old, new) in TABLES {
                db.execute("setting 0.1.0 tables aside", &format!("ALTER TABLE {old} RENAME TO {new}"), &[])?;
            }
        }
        other => {
            return Err(storage(format!(
                "the database has PRAGMA user_version {other}, which no Stowage SQL adapter this one knows wrote"
            )));
        }
    }
    mark(db)
}

/// Whether a SQLite database is new (`user_version` 0: nothing of 0.1.0's to
/// set aside or import); if so, the statement that marks it as 0.2.0's, as
/// [`set_aside`] does, for the caller to run with the new schema.
pub fn fresh_mark(db: &Db) -> Res<Option<Statement>> {
    if db.dialect() != Dialect::Sqlite || user_version(db)? != 0 {
        return Ok(None);
    }
    Ok(Some(statement(&mark_sql(), Vec::new())))
}

fn user_version(db: &Db) -> Res<i64> {
    match db.query_row("reading PRAGMA user_version", "PRAGMA user_version", &[])? {
        Some(mut row) => row.int(0),
        None => Ok(0),
    }
}

fn mark_sql() -> String {
    format!("PRAGMA user_version = {USER_VERSION}")
}

fn mark(db: &Db) -> Res<()> {
    db.execute("marking the database as 0.2.0's", &mark_sql(), &[])?;
    Ok(())
}

/// Migration 2: moves one chunk, or drops the emptied legacy tables.
pub fn step(db: &Db) -> Res<Progress> {
    if db.dialect() != Dialect::Sqlite {
        return Ok(Progress::Done);
    }
    let present = present_tables(db)?;
    let has = |table: &str| present.iter().any(|name| name == table);
    let (conversations, messages, display) = (TABLES[0].1, TABLES[1].1, TABLES[2].1);
    if has(conversations) && move_conversations(db)? {
        return Ok(Progress::More);
    }
    if has(messages) && move_messages(db)? {
        return Ok(Progress::More);
    }
    if has(display) && move_display_records(db)? {
        return Ok(Progress::More);
    }
    for table in &present {
        db.execute("dropping an emptied 0.1.0 table", &format!("DROP TABLE {table}"), &[])?;
    }
    Ok(Progress::Done)
}

fn present_tables(db: &Db) -> Res<Vec<String>> {
    let names: Vec<String> = TABLES.iter().map(|(_, new)| format!("'{new}'")).collect();
    let sql = format!("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({})", names.join(", "));
    db.query("looking for 0.1.0 tables", &sql, &[])?.iter_mut().map(|row| row.text(0)).collect()
}

/// The next chunk of `sql` (whose one parameter is the row limit), as many rows
/// as fit the host's result size cap.
fn chunk(db: &Db, what: &str, sql: &str) -> Res<Vec<Row>> {
    let mut limit = CHUNK_ROWS;
    loop {
        if let Some(rows) = db.query_capped(what, sql, &[int(limit)])? {
            return Ok(rows);
        }
        if limit == 1 {
            return Err(storage(format!("{what}: the next row alone exceeds the host's query result cap")));
        }
        limit /= 2;
    }
}

fn move_conversations(db: &Db) -> Res<bool> {
    let what = "importing 0.1.0 conversations";
    let rows = chunk(
        db,
        what,
        "SELECT cid, tenant, user, id, meta, created_at, updated_at, version, last_seq \
         FROM stowage_legacy_conversations ORDER BY cid LIMIT ?1",
    )?;
    let mut statements = Vec::with_capacity(rows.len() * 2);
    for mut row in rows {
        let cid = row.int(0)?;
        let converted = (|| {
            if !(1..=CID_LIMIT).contains(&cid) {
                return Err(storage(format!("cid {cid} is out of range")));
            }
            let meta = row.bytes(4)?;
            let meta = std::str::from_utf8(&meta)
                .map_err(|e| storage(format!("metadata is not UTF-8: {e}")))
                .and_then(|json| legacy::conversation_meta(json).map_err(storage))?;
            let mut params = vec![int(cid), Value::Text(row.text(1)?), Value::Text(row.text(2)?)];
            params.push(Value::Text(row.text(3)?));
            params.extend([int(row.int(5)?), int(row.int(6)?), int(row.int(7)?), int(row.int(8)?)]);
            params.extend([Value::Blob(meta), Value::Blob(Vec::new())]);
            Ok(params)
        })();
        let params = context(converted, || format!("{what}: conversation cid {cid}"))?;
        statements.push(statement(
            "INSERT INTO stowage_conversations (cid, tenant, scope_user, id, created_at, updated_at, \
             version, last_seq, meta_content, meta_tag) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params,
        ));
        statements.push(statement("DELETE FROM stowage_legacy_conversations WHERE cid = ?1", vec![int(cid)]));
    }
    finish(db, what, &statements)
}

fn move_messages(db: &Db) -> Res<bool> {
    let what = "importing 0.1.0 messages";
    let rows = chunk(db, what, "SELECT cid, seq, id, body FROM stowage_legacy_messages ORDER BY cid, seq LIMIT ?1")?;
    let insert = dialect::text(db.dialect()).message_insert;
    let mut statements = Vec::with_capacity(rows.len() * 2);
    for mut row in rows {
        let (cid, seq) = (row.int(0)?, row.int(1)?);
        let converted = (|| {
            if !(1..=CID_LIMIT).contains(&cid) || !(1..SEQ_LIMIT as i64).contains(&seq) {
                return Err(storage("its key is out of range"));
            }
            let id = row.text(2)?;
            let body = row.bytes(3)?;
            let plain = std::str::from_utf8(&body)
                .map_err(|e| storage(format!("the record is not UTF-8: {e}")))
                .and_then(|json| legacy::message(json).map_err(storage))?;
            Ok(vec![
                int(cid),
                int(seq),
                Value::Text(id),
                int(role_code(plain.role)),
                int(plain.created_at),
                Value::Blob(plain.content),
                Value::Blob(Vec::new()),
            ])
        })();
        let params = context(converted, || format!("{what}: message seq {seq} of conversation cid {cid}"))?;
        statements.push(statement(insert, params));
        statements.push(statement(
            "DELETE FROM stowage_legacy_messages WHERE cid = ?1 AND seq = ?2",
            vec![int(cid), int(seq)],
        ));
    }
    finish(db, what, &statements)
}

fn move_display_records(db: &Db) -> Res<bool> {
    let what = "importing 0.1.0 display records";
    let rows = chunk(
        db,
        what,
        "SELECT tenant, user, conversation_id, seq, body FROM stowage_legacy_display_records \
         ORDER BY tenant, user, conversation_id, seq LIMIT ?1",
    )?;
    let t = dialect::text(db.dialect());
    let mut streams: HashMap<(String, String, String), i64> = HashMap::new();
    let mut statements = Vec::with_capacity(rows.len() * 2);
    for mut row in rows {
        let (tenant, user, conversation_id, seq) = (row.text(0)?, row.text(1)?, row.text(2)?, row.int(3)?);
        let converted = (|| {
            if !(1..SEQ_LIMIT as i64).contains(&seq) {
                return Err(storage("its seq is out of range"));
            }
            let body = row.bytes(4)?;
            legacy::display_record(&body).map_err(storage)
        })();
        let record = context(converted, || format!("{what}: record seq {seq} of conversation {conversation_id:?}"))?;
        let key = (tenant, user, conversation_id);
        let did = match streams.get(&key) {
            Some(did) => *did,
            None => {
                let did = stream(db, &key)?;
                streams.insert(key.clone(), did);
                did
            }
        };
        let (tenant, user, conversation_id) = key;
        statements.push(statement(
            t.display_insert,
            vec![
                int(did),
                int(seq),
                record.message_id.map_or(Value::Null, Value::Text),
                Value::Text(record.message_type),
                Value::Text(record.content_type),
                record.tool_call_id.map_or(Value::Null, Value::Text),
                record.status.map_or(Value::Null, Value::Text),
                int(record.created_at),
                int(record.updated_at),
                Value::Blob(record.body),
                Value::Blob(Vec::new()),
            ],
        ));
        statements.push(statement(
            "DELETE FROM stowage_legacy_display_records \
             WHERE tenant = ?1 AND user = ?2 AND conversation_id = ?3 AND seq = ?4",
            vec![Value::Text(tenant), Value::Text(user), Value::Text(conversation_id), int(seq)],
        ));
    }
    finish(db, what, &statements)
}

/// The display stream of (tenant, user, conversation id), created if missing.
fn stream(db: &Db, (tenant, user, conversation_id): &(String, String, String)) -> Res<i64> {
    let t = dialect::text(db.dialect());
    let scope = Scope { tenant: tenant.clone(), user: user.clone() };
    let key = key_params(&scope, conversation_id);
    db.execute("creating a display stream", t.stream_create, &key)?;
    match db.query_row("reading a display stream", t.stream_key, &key)? {
        Some(mut row) => row.int(0),
        None => Err(storage("a display stream is missing right after it was created")),
    }
}

/// Runs a chunk's statements; `true` when it moved anything.
fn finish(db: &Db, what: &str, statements: &[Statement]) -> Res<bool> {
    if statements.is_empty() {
        return Ok(false);
    }
    db.execute_batch(what, statements)?;
    Ok(true)
}

//! Test fixture: the SQLite proxy adapter as shipped for contract 0.1.0, frozen.
//! It proves that 0.1.0 adapters keep loading and that stores it wrote still open.
//!
//! The SQLite proxy adapter: owns the schema and the queries, while the host runs
//! them natively (the `sql` capability) on the store's database file.
//!
//! Every write runs in one transaction (`begin` … `commit`); an error rolls it back,
//! and a trap or timeout makes the host roll it back, so a batch is all or nothing.

mod db;
mod schema;

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "sql-adapter",
    additional_derives: [serde::Serialize, serde::Deserialize],
});

use exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Guest as ConversationStore, Message, MessageRange, Scope,
    StoredMessage, TruncateOutcome,
};
use exports::stowage::store::display_store::{
    DisplayRecord, Guest as DisplayStore, LocatedDisplayRecord, StoredDisplayRecord,
};
use stowage::store::types::{Conflict, Error};

use db::{Row, Value, blob_json, int, json, text, transaction};

fn check_version(expected: Option<u64>, actual: u64) -> Result<(), Error> {
    match expected {
        Some(expected) if expected != actual => {
            Err(Error::Conflict(Conflict { expected_version: expected, actual_version: actual }))
        }
        _ => Ok(()),
    }
}

/// The row of `conversations` for (scope, id).
struct ConversationRow {
    cid: i64,
    version: u64,
    last_seq: u64,
}

const INFO_COLUMNS: &str = "id, tenant, user, meta, created_at, updated_at, message_count, last_seq, version";

fn info_from_row(row: &Row) -> Result<ConversationInfo, Error> {
    Ok(ConversationInfo {
        id: row.text(0)?,
        scope: Scope { tenant: row.text(1)?, user: row.text(2)? },
        meta: row.json(3)?,
        created_at: row.int(4)?,
        updated_at: row.int(5)?,
        message_count: row.uint(6)?,
        last_seq: row.uint(7)?,
        version: row.uint(8)?,
    })
}

fn find(scope: &Scope, conversation_id: &str) -> Result<ConversationRow, Error> {
    let rows = db::query(
        "SELECT cid, version, last_seq FROM conversations WHERE tenant = ?1 AND user = ?2 AND id = ?3",
        &[text(&scope.tenant), text(&scope.user), text(conversation_id)],
    )?;
    let row = rows.first().ok_or(Error::NotFound)?;
    Ok(ConversationRow { cid: row.int(0)?, version: row.uint(1)?, last_seq: row.uint(2)? })
}

fn info(scope: &Scope, conversation_id: &str) -> Result<ConversationInfo, Error> {
    let rows = db::query(
        &format!("SELECT {INFO_COLUMNS} FROM conversations WHERE tenant = ?1 AND user = ?2 AND id = ?3"),
        &[text(&scope.tenant), text(&scope.user), text(conversation_id)],
    )?;
    info_from_row(rows.first().ok_or(Error::NotFound)?)
}

fn insert_messages(cid: i64, messages: &[StoredMessage]) -> Result<(), Error> {
    for stored in messages {
        db::execute(
            "INSERT INTO messages (cid, seq, id, body) VALUES (?1, ?2, ?3, ?4)",
            &[int(cid), int(stored.seq as i64), text(&stored.message.id), json(&stored.message)?],
        )?;
    }
    Ok(())
}

fn stored_message(row: &Row) -> Result<StoredMessage, Error> {
    let seq = row.uint(0)?;
    let message = row.json(1).map_err(|e| match e {
        Error::Storage(reason) => Error::Storage(format!("message seq {seq}: {reason}")),
        other => other,
    })?;
    Ok(StoredMessage { seq, message })
}

struct Sqlite;

impl ConversationStore for Sqlite {
    fn open(
        scope: Scope,
        conversation_id: String,
        meta: ConversationMeta,
        now: i64,
    ) -> Result<ConversationInfo, Error> {
        schema::ensure()?;
        transaction(|| {
            db::execute(
                "INSERT INTO conversations (tenant, user, id, meta, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (tenant, user, id) DO NOTHING",
                &[text(&scope.tenant), text(&scope.user), text(&conversation_id), json(&meta)?, int(now)],
            )?;
            info(&scope, &conversation_id)
        })
    }

    fn info(scope: Scope, conversation_id: String) -> Result<ConversationInfo, Error> {
        schema::ensure()?;
        info(&scope, &conversation_id)
    }

    fn append(
        scope: Scope,
        conversation_id: String,
        messages: Vec<Message>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        schema::ensure()?;
        transaction(|| {
            let conversation = find(&scope, &conversation_id)?;
            let mut seqs = Vec::with_capacity(messages.len());
            let mut new = Vec::new();
            let mut next = conversation.last_seq + 1;
            for message in messages {
                let existing = db::query(
                    "SELECT seq FROM messages WHERE cid = ?1 AND id = ?2",
                    &[int(conversation.cid), text(&message.id)],
                )?;
                match existing.first() {
                    Some(row) => seqs.push(row.uint(0)?),
                    None => {
                        seqs.push(next);
                        new.push(StoredMessage { seq: next, message });
                        next += 1;
                    }
                }
            }
            if new.is_empty() {
                return Ok(AppendOutcome { seqs, stored: 0, version: conversation.version });
            }
            check_version(expected_version, conversation.version)?;
            insert_messages(conversation.cid, &new)?;
            let version = conversation.version + 1;
            db::execute(
                "UPDATE conversations SET version = ?2, last_seq = ?3, \
                 message_count = message_count + ?4, updated_at = ?5 WHERE cid = ?1",
                &[int(conversation.cid), int(version as i64), int(next as i64 - 1), int(new.len() as i64), int(now)],
            )?;
            Ok(AppendOutcome { seqs, stored: new.len() as u32, version })
        })
    }

    fn replace(
        scope: Scope,
        conversation_id: String,
        messages: Vec<Message>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        schema::ensure()?;
        transaction(|| {
            let conversation = find(&scope, &conversation_id)?;
            check_version(expected_version, conversation.version)?;
            db::execute("DELETE FROM messages WHERE cid = ?1", &[int(conversation.cid)])?;
            let stored: Vec<StoredMessage> =
                messages.into_iter().zip(1..).map(|(message, seq)| StoredMessage { seq, message }).collect();
            insert_messages(conversation.cid, &stored)?;
            let version = conversation.version + 1;
            db::execute(
                "UPDATE conversations SET version = ?2, last_seq = ?3, message_count = ?3, \
                 updated_at = ?4 WHERE cid = ?1",
                &[int(conversation.cid), int(version as i64), int(stored.len() as i64), int(now)],
            )?;
            Ok(version)
        })
    }

    fn load(
        scope: Scope,
        conversation_id: String,
        range: MessageRange,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, Error> {
        schema::ensure()?;
        let conversation = find(&scope, &conversation_id)?;
        let cid = int(conversation.cid);
        let limit = int(i64::from(limit));
        let (rows, newest_first) = match range {
            MessageRange::Latest => (
                db::query("SELECT seq, body FROM messages WHERE cid = ?1 ORDER BY seq DESC LIMIT ?2", &[cid, limit])?,
                true,
            ),
            MessageRange::After(seq) => (
                db::query(
                    "SELECT seq, body FROM messages WHERE cid = ?1 AND seq > ?2 ORDER BY seq ASC LIMIT ?3",
                    &[cid, int(seq.min(i64::MAX as u64) as i64), limit],
                )?,
                false,
            ),
            MessageRange::Before(seq) => (
                db::query(
                    "SELECT seq, body FROM messages WHERE cid = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
                    &[cid, int(seq.min(i64::MAX as u64) as i64), limit],
                )?,
                true,
            ),
        };
        let mut messages = rows.iter().map(stored_message).collect::<Result<Vec<_>, _>>()?;
        if newest_first {
            messages.reverse();
        }
        Ok(messages)
    }

    fn truncate_after(
        scope: Scope,
        conversation_id: String,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        schema::ensure()?;
        transaction(|| {
            let conversation = find(&scope, &conversation_id)?;
            if seq >= conversation.last_seq {
                return Ok(TruncateOutcome { removed: 0, version: conversation.version });
            }
            check_version(expected_version, conversation.version)?;
            let removed = db::execute(
                "DELETE FROM messages WHERE cid = ?1 AND seq > ?2",
                &[int(conversation.cid), int(seq as i64)],
            )?;
            let version = conversation.version + 1;
            db::execute(
                "UPDATE conversations SET version = ?2, last_seq = ?3, \
                 message_count = message_count - ?4, updated_at = ?5 WHERE cid = ?1",
                &[int(conversation.cid), int(version as i64), int(seq as i64), int(removed as i64), int(now)],
            )?;
            Ok(TruncateOutcome { removed, version })
        })
    }

    fn delete(scope: Scope, conversation_id: String) -> Result<bool, Error> {
        schema::ensure()?;
        transaction(|| {
            let mut deleted = 0;
            match find(&scope, &conversation_id) {
                Ok(conversation) => {
                    db::execute("DELETE FROM messages WHERE cid = ?1", &[int(conversation.cid)])?;
                    deleted += db::execute("DELETE FROM conversations WHERE cid = ?1", &[int(conversation.cid)])?;
                }
                Err(Error::NotFound) => {}
                Err(e) => return Err(e),
            }
            deleted += db::execute(
                "DELETE FROM display_records WHERE tenant = ?1 AND user = ?2 AND conversation_id = ?3",
                &[text(&scope.tenant), text(&scope.user), text(&conversation_id)],
            )?;
            Ok(deleted > 0)
        })
    }

    fn list(scope: Scope, after: Option<String>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
        schema::ensure()?;
        let after = after.as_deref().map_or(Value::Null, text);
        let rows = db::query(
            &format!(
                "SELECT {INFO_COLUMNS} FROM conversations WHERE tenant = ?1 AND user = ?2 \
                 AND (?3 IS NULL OR id > ?3) ORDER BY id LIMIT ?4"
            ),
            &[text(&scope.tenant), text(&scope.user), after, int(i64::from(limit))],
        )?;
        rows.iter().map(info_from_row).collect()
    }
}

fn display_key(scope: &Scope, conversation_id: &str) -> [Value; 3] {
    [text(&scope.tenant), text(&scope.user), text(conversation_id)]
}

fn stored_display(row: &Row) -> Result<StoredDisplayRecord, Error> {
    Ok(StoredDisplayRecord { seq: row.uint(0)?, record: row.json(1)? })
}

impl DisplayStore for Sqlite {
    fn insert(scope: Scope, conversation_id: String, records: Vec<DisplayRecord>) -> Result<Vec<u64>, Error> {
        schema::ensure()?;
        transaction(|| {
            let [tenant, user, conversation] = display_key(&scope, &conversation_id);
            let rows = db::query(
                "SELECT COALESCE(MAX(seq), 0) FROM display_records \
                 WHERE tenant = ?1 AND user = ?2 AND conversation_id = ?3",
                &[tenant.clone(), user.clone(), conversation.clone()],
            )?;
            let last = rows.first().map(|r| r.uint(0)).transpose()?.unwrap_or(0);
            let mut seqs = Vec::with_capacity(records.len());
            for (record, seq) in records.iter().zip(last + 1..) {
                db::execute(
                    "INSERT INTO display_records \
                     (tenant, user, conversation_id, seq, tool_call_id, status, body) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    &[
                        tenant.clone(),
                        user.clone(),
                        conversation.clone(),
                        int(seq as i64),
                        optional_text(&record.tool_call_id),
                        optional_text(&record.status),
                        blob_json(record)?,
                    ],
                )?;
                seqs.push(seq);
            }
            Ok(seqs)
        })
    }

    fn by_tool_call_id(
        scope: Scope,
        conversation_id: String,
        tool_call_id: String,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        schema::ensure()?;
        let [tenant, user, conversation] = display_key(&scope, &conversation_id);
        let rows = db::query(
            "SELECT seq, body FROM display_records WHERE tenant = ?1 AND user = ?2 \
             AND conversation_id = ?3 AND tool_call_id = ?4 ORDER BY seq",
            &[tenant, user, conversation, text(&tool_call_id)],
        )?;
        rows.iter().map(stored_display).collect()
    }

    fn update(scope: Scope, conversation_id: String, seq: u64, record: DisplayRecord) -> Result<(), Error> {
        schema::ensure()?;
        let [tenant, user, conversation] = display_key(&scope, &conversation_id);
        let changed = db::execute(
            "UPDATE display_records SET tool_call_id = ?5, status = ?6, body = ?7 \
             WHERE tenant = ?1 AND user = ?2 AND conversation_id = ?3 AND seq = ?4",
            &[
                tenant,
                user,
                conversation,
                int(seq.min(i64::MAX as u64) as i64),
                optional_text(&record.tool_call_id),
                optional_text(&record.status),
                blob_json(&record)?,
            ],
        )?;
        if changed == 0 { Err(Error::NotFound) } else { Ok(()) }
    }

    fn list(scope: Scope, conversation_id: String, after: u64, limit: u32) -> Result<Vec<StoredDisplayRecord>, Error> {
        schema::ensure()?;
        let [tenant, user, conversation] = display_key(&scope, &conversation_id);
        let rows = db::query(
            "SELECT seq, body FROM display_records WHERE tenant = ?1 AND user = ?2 \
             AND conversation_id = ?3 AND seq > ?4 ORDER BY seq LIMIT ?5",
            &[tenant, user, conversation, int(after.min(i64::MAX as u64) as i64), int(i64::from(limit))],
        )?;
        rows.iter().map(stored_display).collect()
    }

    fn find_by_status(statuses: Vec<String>, limit: u32) -> Result<Vec<LocatedDisplayRecord>, Error> {
        schema::ensure()?;
        if statuses.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (2..statuses.len() + 2).map(|i| format!("?{i}")).collect();
        let mut params = vec![int(i64::from(limit))];
        params.extend(statuses.iter().map(|s| text(s)));
        let rows = db::query(
            &format!(
                "SELECT tenant, user, conversation_id, seq, body FROM display_records \
                 WHERE status IN ({}) ORDER BY tenant, user, conversation_id, seq LIMIT ?1",
                placeholders.join(", ")
            ),
            &params,
        )?;
        rows.iter()
            .map(|row| {
                Ok(LocatedDisplayRecord {
                    scope: Scope { tenant: row.text(0)?, user: row.text(1)? },
                    conversation_id: row.text(2)?,
                    stored: StoredDisplayRecord { seq: row.uint(3)?, record: row.json(4)? },
                })
            })
            .collect()
    }
}

fn optional_text(value: &Option<String>) -> Value {
    value.as_deref().map_or(Value::Null, text)
}

export!(Sqlite);

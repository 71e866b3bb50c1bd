//! `display-store`: display records, stored verbatim at host-given seqs.
//!
//! Records of (scope, conversation id) hang off a display stream row (`did`),
//! created by the first insert, because display records may exist for a
//! conversation without history. An insert locks the stream row on PostgreSQL and
//! relies on the (did, seq) key otherwise: a concurrent writer's record at the same
//! seq fails the insert, the call re-runs and answers `out-of-sequence`.

use crate::batch;
use crate::db::{Db, Res, Row, context, int, key_params, opt_text, set_key, statement, storage, text};
use crate::dialect;
use crate::display_tables;
use crate::exports::stowage::store::display_store::{
    DisplayPosition, DisplayRecord, InsertOutcome, LocatedDisplayRecord, Scope, StoredDisplayRecord,
};
use crate::model::SEQ_LIMIT;
use crate::stowage::store::sql::{Statement, Value};
use crate::stowage::store::types::Error;

/// The columns of a record after its key, in the order every dialect selects and
/// binds them.
fn record_params(record: DisplayRecord) -> [Value; 9] {
    let DisplayRecord {
        message_id,
        message_type,
        content_type,
        tool_call_id,
        status,
        body,
        created_at,
        updated_at,
        tag,
    } = record;
    [
        opt_text(message_id.as_deref()),
        Value::Text(message_type),
        Value::Text(content_type),
        opt_text(tool_call_id.as_deref()),
        opt_text(status.as_deref()),
        int(created_at),
        int(updated_at),
        Value::Blob(body),
        Value::Blob(tag),
    ]
}

/// A record whose seq is at column `at` and its fields after it.
fn stored_record(row: &mut Row, at: usize) -> Res<StoredDisplayRecord> {
    let seq = row.uint(at)?;
    let decoded = (|| {
        Ok(DisplayRecord {
            message_id: row.opt_text(at + 1)?,
            message_type: row.text(at + 2)?,
            content_type: row.text(at + 3)?,
            tool_call_id: row.opt_text(at + 4)?,
            status: row.opt_text(at + 5)?,
            created_at: row.int(at + 6)?,
            updated_at: row.int(at + 7)?,
            body: row.blob(at + 8)?,
            tag: row.blob(at + 9)?,
        })
    })();
    let record = context(decoded, || format!("display record seq {seq}"))?;
    Ok(StoredDisplayRecord { seq, record })
}

/// The stream of (scope, conversation id), if it exists.
fn stream(db: &Db, sql: &str, key: &[Value; 3]) -> Res<Option<i64>> {
    let Some(mut row) = db.query_row("reading the display stream", sql, key)? else {
        return Ok(None);
    };
    context(row.int(0), || "the display stream's row".to_owned()).map(Some)
}

/// The stream's last display seq, 0 when it has none.
fn last_seq(db: &Db, did: i64) -> Res<u64> {
    let sql = dialect::text(db.dialect()).display_last_seq;
    match db.query_row("reading the last display seq", sql, &[int(did)])? {
        None => Ok(0),
        Some(mut row) => context(row.uint(0), || "the last display record".to_owned()),
    }
}

pub fn insert(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    records: Vec<StoredDisplayRecord>,
) -> Result<InsertOutcome, Error> {
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    let Some(span) = batch::numbering("display insert", &seqs)? else {
        return Ok(InsertOutcome::Stored);
    };
    let t = dialect::text(db.dialect());
    let mut statements: Vec<Statement> = records
        .into_iter()
        .map(|StoredDisplayRecord { seq, record }| {
            // Seqs were checked to be below 2^32; the did is filled in per attempt.
            let mut params = vec![int(0), int(seq as i64)];
            params.extend(record_params(record));
            statement(t.display_insert, params)
        })
        .collect();
    let key = key_params(&scope, &conversation_id);
    db.write("display insert", || {
        display_tables::ensure(db)?;
        let did = match stream(db, t.stream_key_for_write, &key)? {
            Some(did) => did,
            None if span.first != 1 => return Ok(InsertOutcome::OutOfSequence(0)),
            None => {
                db.execute("creating the display stream", t.stream_create, &key)?;
                stream(db, t.stream_key_for_write, &key)?.ok_or_else(|| {
                    storage("display insert: the display stream is missing right after it was created")
                })?
            }
        };
        let last = last_seq(db, did)?;
        if last.checked_add(1) != Some(span.first) {
            return Ok(InsertOutcome::OutOfSequence(last));
        }
        set_key(&mut statements, did);
        db.execute_batch("display insert: storing the records", &statements)?;
        Ok(InsertOutcome::Stored)
    })
}

pub fn by_tool_call_id(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    tool_call_id: String,
) -> Result<Vec<StoredDisplayRecord>, Error> {
    db.read(|| {
        if !display_tables::present(db)? {
            return Ok(Vec::new());
        }
        let [tenant, user, id] = key_params(&scope, &conversation_id);
        let params = [tenant, user, id, text(&tool_call_id)];
        let sql = dialect::text(db.dialect()).display_by_tool_call;
        let mut rows = db.query("reading display records by tool call id", sql, &params)?;
        rows.iter_mut().map(|row| stored_record(row, 0)).collect()
    })
}

/// Overwrites the record at `stored.seq`, in one statement (atomic on its own).
pub fn update(db: &Db, scope: Scope, conversation_id: String, stored: StoredDisplayRecord) -> Result<(), Error> {
    if stored.seq == 0 || stored.seq >= SEQ_LIMIT {
        // No record can have this seq.
        return Err(Error::NotFound);
    }
    let mut params = key_params(&scope, &conversation_id).to_vec();
    params.push(int(stored.seq as i64));
    params.extend(record_params(stored.record));
    let sql = dialect::text(db.dialect()).display_update;
    let changed = db.read(|| {
        if display_tables::present(db)? { db.execute("updating a display record", sql, &params) } else { Ok(0) }
    })?;
    if changed == 0 { Err(Error::NotFound) } else { Ok(()) }
}

pub fn list(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredDisplayRecord>, Error> {
    db.read(|| {
        if !display_tables::present(db)? {
            return Ok(Vec::new());
        }
        let [tenant, user, id] = key_params(&scope, &conversation_id);
        // Every stored seq is below 2^32, so clamping there changes no answer.
        let after = int(after.min(SEQ_LIMIT - 1) as i64);
        let params = [tenant, user, id, after, int(i64::from(limit))];
        let sql = dialect::text(db.dialect()).display_list;
        let mut rows = db.query("listing display records", sql, &params)?;
        rows.iter_mut().map(|row| stored_record(row, 0)).collect()
    })
}

pub fn find_by_status(
    db: &Db,
    statuses: Vec<String>,
    after: Option<DisplayPosition>,
    limit: u32,
) -> Result<Vec<LocatedDisplayRecord>, Error> {
    if statuses.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    db.read(|| {
        if !display_tables::present(db)? {
            return Ok(Vec::new());
        }
        let sql = dialect::display_by_status(db.dialect(), statuses.len(), after.is_some());
        let mut params = vec![int(i64::from(limit))];
        if let Some(position) = &after {
            params.extend(key_params(&position.scope, &position.conversation_id));
            // Past 2^32 is past every record of that conversation, as is 2^32.
            params.push(int(position.seq.min(SEQ_LIMIT) as i64));
        }
        params.extend(statuses.iter().map(|s| text(s)));
        let mut rows = db.query("finding display records by status", &sql, &params)?;
        rows.iter_mut()
            .map(|row| {
                let (tenant, user, conversation_id) = (row.text(0)?, row.text(1)?, row.text(2)?);
                let stored = stored_record(row, 3)?;
                Ok(LocatedDisplayRecord { scope: Scope { tenant, user }, conversation_id, stored })
            })
            .collect()
    })
}

//! `conversation-store`: message histories.
//!
//! Every write runs in one transaction ([`Db::write`]): it reads the conversation
//! (on PostgreSQL locking its row, so writers of one conversation take turns
//! across hosts), decides with [`crate::batch`], then sends all its changes in one
//! `execute-batch`, ending with a compare-and-swap of the conversation's version
//! (on SQLite an append instead ends with an insert carrying the new head:
//! [`crate::head`]).
//! Whatever another writer slips in (a row at the same seq, a changed version)
//! makes the transaction roll back and the call run again on fresh state, which
//! then answers `already-stored`, `conflict` or `out-of-sequence` as the contract
//! orders; a message is never lost or stored twice. On SQLite an append that
//! continues the head this instance saw last is first tried in one statement
//! that checks that head itself ([`crate::fast_append`]).

use crate::batch::{self, AppendPlan, History};
use crate::db::{Db, Failure, Res, Row, context, int, key_params, set_key, statement, storage, text, uint};
use crate::dialect;
use crate::display_tables;
use crate::exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Scope, StoredMessage, TruncateOutcome,
};
use crate::fast_append;
use crate::head::{self, Head};
use crate::heads::Known;
use crate::model::{CID_LIMIT, role_code};
use crate::stowage::store::sql::{Statement, Value};
use crate::stowage::store::types::{Error, Message};

/// At most this many ids per lookup statement (far below every engine's limit on
/// parameters).
const IDS_PER_LOOKUP: usize = 500;

/// A conversation's key and, when found for a write, its history.
pub struct Key {
    pub cid: i64,
    pub history: History,
}

/// The conversation's key, `None` if it does not exist in `scope`. For a write,
/// its history is the head's: on SQLite the same statement reads the newest
/// message, which may carry a newer head than the row ([`head`]).
pub fn find(db: &Db, scope: &Scope, conversation_id: &str, for_write: bool) -> Res<Option<Key>> {
    let t = dialect::text(db.dialect());
    let sql = if for_write { t.conversation_key_for_write } else { t.conversation_key };
    let Some(mut row) = db.query_row("reading the conversation", sql, &key_params(scope, conversation_id))? else {
        return Ok(None);
    };
    let key = context(
        (|| {
            let (cid, stored) = (row.int(0)?, History { version: row.uint(1)?, last_seq: row.uint(2)? });
            let history = if for_write {
                head::current(db.dialect(), Head { history: stored, updated_at: 0 }, &mut row, 3)?.history
            } else {
                stored
            };
            Ok(Key { cid, history })
        })(),
        || "the conversation's row".to_owned(),
    )?;
    if !(1..=CID_LIMIT).contains(&key.cid) {
        return Err(storage(format!("the conversation's key {} is out of range", key.cid)));
    }
    Ok(Some(key))
}

/// A conversation from its row, with its head ([`head::current`]).
pub fn info_from_row(db: &Db, row: &mut Row) -> Res<ConversationInfo> {
    let id = row.text(0)?;
    let decoded = (|| {
        let scope = Scope { tenant: row.text(1)?, user: row.text(2)? };
        let meta = ConversationMeta { content: row.blob(3)?, tag: row.blob(4)? };
        let created_at = row.int(5)?;
        let stored =
            Head { history: History { version: row.uint(8)?, last_seq: row.uint(7)? }, updated_at: row.int(6)? };
        let Head { history, updated_at } = head::current(db.dialect(), stored, row, 10)?;
        Ok(ConversationInfo {
            id: id.clone(),
            scope,
            meta,
            created_at,
            updated_at,
            message_count: history.last_seq,
            last_seq: history.last_seq,
            version: history.version,
        })
    })();
    context(decoded, || format!("conversation {id:?}"))
}

/// The conversation's info. With `remember` its head becomes the next
/// append's guess (an append usually follows an `open`).
fn find_info(db: &Db, scope: &Scope, conversation_id: &str, remember: bool) -> Res<Option<ConversationInfo>> {
    let sql = dialect::text(db.dialect()).conversation_info;
    let Some(mut row) = db.query_row("reading the conversation", sql, &key_params(scope, conversation_id))? else {
        return Ok(None);
    };
    let cid = row.int(9);
    let info = info_from_row(db, &mut row)?;
    if let (Ok(cid), true) = (cid, remember) {
        let history = History { version: info.version, last_seq: info.last_seq };
        fast_append::remember(db, scope, conversation_id, Known { cid, history });
    }
    Ok(Some(info))
}

/// [`open_in`] a database this instance did not make (the tests' open).
#[cfg(test)]
pub fn open(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    meta: ConversationMeta,
    now: i64,
) -> Result<ConversationInfo, Error> {
    open_in(db, scope, conversation_id, meta, now, false)
}

/// Find or create (scope, id). Reads first, so opening an existing conversation
/// takes no write lock; but a database this instance has just made
/// (`new_database`) holds no conversation yet, so there the open goes straight
/// to the insert. A conversation the insert makes is answered from what it
/// stored; one it finds (another writer made it since) is read.
pub fn open_in(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    meta: ConversationMeta,
    now: i64,
    new_database: bool,
) -> Result<ConversationInfo, Error> {
    if !new_database && let Some(info) = db.read(|| find_info(db, &scope, &conversation_id, true))? {
        return Ok(info);
    }
    db.write("open", || {
        let [tenant, user, id] = key_params(&scope, &conversation_id);
        let params = [tenant, user, id, int(now), Value::Blob(meta.content.clone()), Value::Blob(meta.tag.clone())];
        let create = dialect::text(db.dialect()).conversation_create;
        let Some(mut row) = db.query_row("creating the conversation", create, &params)? else {
            return find_info(db, &scope, &conversation_id, true)?
                .ok_or_else(|| storage("open: the conversation is missing right after it was created"));
        };
        let cid = row.int(0)?;
        if !(1..=CID_LIMIT).contains(&cid) {
            return Err(storage(format!("the new conversation's key {cid} is out of range")));
        }
        let history = History { version: 0, last_seq: 0 };
        fast_append::remember(db, &scope, &conversation_id, Known { cid, history });
        Ok(ConversationInfo {
            id: conversation_id.clone(),
            scope: scope.clone(),
            meta: meta.clone(),
            created_at: now,
            updated_at: now,
            message_count: 0,
            last_seq: 0,
            version: 0,
        })
    })
}

pub fn info(db: &Db, scope: Scope, conversation_id: String) -> Result<ConversationInfo, Error> {
    db.read(|| find_info(db, &scope, &conversation_id, false))?.ok_or(Error::NotFound)
}

/// Replaces the meta of (scope, id); the history, its version and `updated-at`
/// stay as they are.
pub fn update_meta(db: &Db, scope: Scope, conversation_id: String, meta: ConversationMeta) -> Result<(), Error> {
    let changed = db.write("update-meta", || {
        let [tenant, user, id] = key_params(&scope, &conversation_id);
        let params = [tenant, user, id, Value::Blob(meta.content.clone()), Value::Blob(meta.tag.clone())];
        db.execute("updating the conversation's meta", dialect::text(db.dialect()).conversation_meta_update, &params)
    })?;
    if changed == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// One insert per message, with a placeholder cid that [`set_key`] fills in per
/// attempt (the messages are moved in once, never cloned).
fn insert_statements(db: &Db, messages: Vec<StoredMessage>) -> Vec<Statement> {
    let sql = dialect::text(db.dialect()).message_insert;
    messages
        .into_iter()
        .map(|StoredMessage { seq, message }| {
            let Message { id, role, created_at, content, tag } = message;
            // Seqs were checked to be below 2^32.
            let seq = Value::Integer(seq as i64);
            let params = vec![
                int(0),
                seq,
                Value::Text(id),
                int(role_code(role)),
                int(created_at),
                Value::Blob(content),
                Value::Blob(tag),
            ];
            statement(sql, params)
        })
        .collect()
}

/// The conversation-row update that ends every history change: a
/// compare-and-swap from `old` to `new`.
fn history_update(db: &Db, cid: i64, old: History, new: History, now: i64) -> Res<Statement> {
    let params = vec![
        int(cid),
        uint("version", old.version)?,
        uint("version", new.version)?,
        uint("last seq", new.last_seq)?,
        int(now),
    ];
    Ok(statement(dialect::text(db.dialect()).conversation_update, params))
}

/// Sends `statements` (the last one a [`history_update`], or on SQLite an
/// append's last insert) and checks that it changed its row.
///
/// A lone statement goes by `execute`: a plain INSERT or UPDATE (no `OR FAIL`,
/// no trigger) changes all or nothing by itself, and the host's batch would wrap
/// it in a savepoint (two more statements on every one-message append).
fn apply(db: &Db, what: &str, statements: &[Statement]) -> Res<Vec<u64>> {
    let counts = match statements {
        [only] => vec![db.execute(what, &only.sql, &only.params)?],
        _ => db.execute_batch(what, statements)?,
    };
    if counts.last() != Some(&1) {
        return Err(Failure::Contended(format!("{what}: the conversation changed under the write")));
    }
    Ok(counts)
}

/// Which of `ids` are stored in conversation `cid`, with their seqs.
fn stored_ids(db: &Db, cid: i64, ids: &[&str]) -> Res<Vec<(String, u64)>> {
    let mut found = Vec::new();
    for chunk in ids.chunks(IDS_PER_LOOKUP) {
        let sql = dialect::messages_by_id(db.dialect(), chunk.len());
        let mut params = vec![int(cid)];
        params.extend(chunk.iter().map(|id| text(id)));
        for mut row in db.query("looking up the batch's message ids", &sql, &params)? {
            let pair = context((|| Ok((row.text(0)?, row.uint(1)?)))(), || "a stored message id".to_owned())?;
            found.push(pair);
        }
    }
    Ok(found)
}

pub fn append(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    messages: Vec<StoredMessage>,
    expected_version: Option<u64>,
    now: i64,
) -> Result<AppendOutcome, Error> {
    let seqs: Vec<u64> = messages.iter().map(|m| m.seq).collect();
    let span = batch::numbering("append", &seqs)?;
    let ids: Vec<String> = messages.iter().map(|m| m.message.id.clone()).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    batch::unique_ids("append", ids.iter().copied())?;
    let mut statements = insert_statements(db, messages);
    if let Some(span) = span {
        let fast = fast_append::append(db, &scope, &conversation_id, &mut statements, span, expected_version, now);
        // A failure is the append's answer (mapped as a read's: no transaction to roll back).
        if let Some(version) = db.read(|| fast)? {
            return Ok(AppendOutcome::Stored(version));
        }
    }
    // Looking the batch's ids up costs a statement, and an append that stores
    // does not need it: the (conversation, id) index refuses a stored id, and
    // that failure re-runs the write with the lookup, which then answers
    // `already-stored`. Every other answer looks first, since `already-stored`
    // outranks them.
    let mut look_up = false;
    let mut seen = None;
    let outcome = db.write("append", || {
        let key = find(db, &scope, &conversation_id, true)?.ok_or(Error::NotFound)?;
        seen = Some(Known { cid: key.cid, history: key.history });
        let stored = if look_up { stored_ids(db, key.cid, &ids)? } else { Vec::new() };
        let mut plan = batch::plan_append(&ids, span, &stored, key.history, expected_version);
        if !look_up && !matches!(plan, Ok(AppendPlan::Store(_))) {
            look_up = true;
            plan = batch::plan_append(&ids, span, &stored_ids(db, key.cid, &ids)?, key.history, expected_version);
        }
        let new = match plan? {
            AppendPlan::Answer(outcome) => return Ok(outcome),
            AppendPlan::Store(new) => new,
        };
        set_key(&mut statements, key.cid);
        let applied = if head::in_messages(db.dialect()) {
            let last = statements.last_mut().ok_or_else(|| storage("append: a stored batch has no message"))?;
            last.sql = head::INSERT_WITH_HEAD.to_owned();
            last.params.truncate(dialect::MESSAGE_INSERT_PARAMS);
            last.params.extend(head::carried(new.version, now)?);
            apply(db, "append: storing the batch", &statements)
        } else {
            statements.push(history_update(db, key.cid, key.history, new, now)?);
            let applied = apply(db, "append: storing the batch", &statements);
            statements.pop();
            applied
        };
        if matches!(applied, Err(Failure::Contended(_))) {
            look_up = true;
        }
        seen = Some(Known { cid: key.cid, history: new });
        applied.map(|_| AppendOutcome::Stored(new.version))
    });
    // What the last attempt read (or stored): the next append's guess.
    if let (Ok(_), Some(known)) = (&outcome, seen) {
        fast_append::remember(db, &scope, &conversation_id, known);
    }
    outcome
}

pub fn replace(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    messages: Vec<StoredMessage>,
    expected_version: Option<u64>,
    now: i64,
) -> Result<u64, Error> {
    let seqs: Vec<u64> = messages.iter().map(|m| m.seq).collect();
    let ids: Vec<&str> = messages.iter().map(|m| m.message.id.as_str()).collect();
    let last_seq = batch::check_replace(&seqs, &ids)?;
    fast_append::forget(db, &scope, &conversation_id);
    let mut statements = vec![statement(dialect::text(db.dialect()).messages_delete_all, vec![int(0)])];
    statements.extend(insert_statements(db, messages));
    db.write("replace", || {
        let key = find(db, &scope, &conversation_id, true)?.ok_or(Error::NotFound)?;
        batch::check_version(expected_version, key.history.version)?;
        let new = History { version: batch::next_version(key.history.version)?, last_seq };
        set_key(&mut statements, key.cid);
        statements.push(history_update(db, key.cid, key.history, new, now)?);
        let applied = apply(db, "replace: storing the history", &statements);
        statements.pop();
        applied.map(|_| new.version)
    })
}

pub fn truncate_after(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    seq: u64,
    expected_version: Option<u64>,
    now: i64,
) -> Result<TruncateOutcome, Error> {
    fast_append::forget(db, &scope, &conversation_id);
    db.write("truncate-after", || {
        let key = find(db, &scope, &conversation_id, true)?.ok_or(Error::NotFound)?;
        if seq >= key.history.last_seq {
            return Ok(TruncateOutcome { removed: 0, version: key.history.version });
        }
        batch::check_version(expected_version, key.history.version)?;
        let new = History { version: batch::next_version(key.history.version)?, last_seq: seq };
        let delete =
            statement(dialect::text(db.dialect()).messages_delete_after, vec![int(key.cid), uint("seq", seq)?]);
        let counts = apply(
            db,
            "truncate-after: removing messages",
            &[delete, history_update(db, key.cid, key.history, new, now)?],
        )?;
        let removed = counts.first().copied().unwrap_or_default();
        Ok(TruncateOutcome { removed, version: new.version })
    })
}

/// Removes the conversation, its messages and its display records.
pub fn delete(db: &Db, scope: Scope, conversation_id: String) -> Result<bool, Error> {
    fast_append::forget(db, &scope, &conversation_id);
    let t = dialect::text(db.dialect());
    db.write("delete", || {
        let mut statements = Vec::new();
        if let Some(key) = find(db, &scope, &conversation_id, true)? {
            statements.push(statement(t.messages_delete_all, vec![int(key.cid)]));
            statements.push(statement(t.conversation_delete, vec![int(key.cid)]));
        }
        let stream = if display_tables::present(db)? {
            db.query_row("reading the display stream", t.stream_key_for_write, &key_params(&scope, &conversation_id))?
        } else {
            None
        };
        if let Some(mut row) = stream {
            let did = context(row.int(0), || "the display stream's row".to_owned())?;
            statements.push(statement(t.display_delete_all, vec![int(did)]));
            statements.push(statement(t.stream_delete, vec![int(did)]));
        }
        if statements.is_empty() {
            return Ok(false);
        }
        db.execute_batch("delete: removing the conversation", &statements)?;
        Ok(true)
    })
}

//! The one-crossing append (SQLite): an append to a conversation whose head this
//! instance knows goes to the host as one `execute` (one `execute-batch` for a
//! longer batch), not as `begin`, a read of the head, the insert and `commit`.
//!
//! What the instance knows is only a guess: another instance, another host or
//! another call of this one may have written since. The database checks it.
//! The batch's first insert stores its message id only when the conversation
//! (by key *and* by scope and id) still has exactly the head the guess says;
//! otherwise the id is NULL, the NOT NULL constraint fails, and the host rolls
//! the whole statement or batch back. Nothing is stored on a wrong guess: the
//! append then goes the long way ([`crate::conversations`]), which reads the
//! head, answers in the contract's order and refreshes the guess. A stored id
//! fails the same way (the `(conversation, id)` index), and the long way then
//! answers `already-stored`.
//!
//! PostgreSQL keeps the head in the conversation's row, whose lock orders
//! writers across hosts; it always goes the long way.

use crate::batch::{History, Span};
use crate::db::{Db, Dialect, Failure, Res, key_params, set_key, storage, uint};
use crate::dialect;
use crate::exports::stowage::store::conversation_store::Scope;
use crate::head;
use crate::heads::Known;
use crate::model::CID_LIMIT;
use crate::stowage::store::sql::{Statement, Value};

/// The newest message of conversation `?1`, as the end of a statement that
/// reads one value of it (no row when the conversation has no message).
macro_rules! of_newest_message {
    () => {
        " FROM stowage_messages m WHERE m.pos > (?1 << 32) AND m.pos < (?1 << 32) + 4294967296 \
         ORDER BY m.pos DESC LIMIT 1)"
    };
}

/// True when the conversation `?1` is (tenant `?10`, user `?11`, id `?12`) and
/// its head is version `?13`, last seq `?2 - 1`. As [`head::fold`] has it: the
/// newest message's head when it carries one newer than the row's version, else
/// the row's. A head below the row's version can only be the message's; one at
/// or above it only the row's, and then the message must carry no newer one. A
/// half head (a version without a time, or the reverse) never matches.
macro_rules! head_is {
    () => {
        concat!(
            "EXISTS (SELECT 1 FROM stowage_conversations WHERE cid = ?1 AND tenant = ?10 AND scope_user = ?11 \
             AND id = ?12 AND CASE WHEN version < ?13 THEN (SELECT m.head_version = ?13 AND \
             m.head_updated_at IS NOT NULL AND m.pos = (?1 << 32) + ?2 - 1",
            of_newest_message!(),
            " ELSE version = ?13 AND last_seq = ?2 - 1 AND COALESCE((SELECT COALESCE(m.head_version, -1) <= version \
             AND (m.head_version IS NULL) = (m.head_updated_at IS NULL)",
            of_newest_message!(),
            ", 1) END)"
        )
    };
}

/// The first insert of a batch: as [`head::INSERT_WITH_HEAD`] (the head NULL
/// unless it is also the last), its id NULL unless [`head_is!`].
pub const GUARDED_INSERT: &str = concat!(
    "INSERT INTO stowage_messages (pos, id, role, created_at, content, tag, head_version, head_updated_at) \
     VALUES ((?1 << 32) + ?2, CASE WHEN ",
    head_is!(),
    " THEN ?3 END, ?4, ?5, ?6, ?7, ?8, ?9)"
);

/// Makes `known` the next append's guess for the conversation (a key out of
/// the adapter's range is never guessed: the long way refuses it).
pub fn remember(db: &Db, scope: &Scope, conversation_id: &str, known: Known) {
    let guessed = db.dialect() == Dialect::Sqlite && (1..=CID_LIMIT).contains(&known.cid);
    if let Some(heads) = db.heads().filter(|_| guessed) {
        heads.set(scope, conversation_id, known);
    }
}

/// Before a write that changes the head other than by an append: the next
/// append need not try a guess that is about to go stale.
pub fn forget(db: &Db, scope: &Scope, conversation_id: &str) {
    if let Some(heads) = db.heads() {
        heads.forget(scope, conversation_id);
    }
}

/// Stores `statements` (one plain insert per message, from `span`) in one
/// crossing when this instance knows the conversation's head and the batch
/// continues it. `Ok(Some(version))`: stored, at that new version. `Ok(None)`:
/// nothing was stored, and the caller goes the long way with `statements` as it
/// gave them. Errors other than a failed constraint are the caller's answer.
pub fn append(
    db: &Db,
    scope: &Scope,
    conversation_id: &str,
    statements: &mut [Statement],
    span: Span,
    expected_version: Option<u64>,
    now: i64,
) -> Res<Option<u64>> {
    let Some(heads) = db.heads().filter(|_| db.dialect() == Dialect::Sqlite) else {
        return Ok(None);
    };
    let (Some(known), Some(last)) = (heads.get(scope, conversation_id), statements.len().checked_sub(1)) else {
        return Ok(None);
    };
    let continues = known.history.last_seq.checked_add(1) == Some(span.first);
    let version = known.history.version;
    let Some(new_version) =
        version.checked_add(1).filter(|_| continues && expected_version.is_none_or(|v| v == version))
    else {
        return Ok(None);
    };
    let [tenant, user, id] = key_params(scope, conversation_id);
    let guard = [tenant, user, id, uint("version", version)?];
    let carried = head::carried(new_version, now)?;
    set_key(statements, known.cid);
    if let Some(first) = statements.first_mut() {
        first.sql = GUARDED_INSERT.to_owned();
        first.params.extend(if last == 0 { carried.clone() } else { [Value::Null, Value::Null] });
        first.params.extend(guard);
    }
    if last > 0 {
        statements[last].sql = head::INSERT_WITH_HEAD.to_owned();
        statements[last].params.extend(carried);
    }
    let stored = match statements {
        [only] => db.execute("append: storing the batch", &only.sql, &only.params).map(|n| vec![n]),
        _ => db.execute_batch("append: storing the batch", statements),
    };
    if let Ok(counts) = &stored
        && counts.iter().all(|&n| n == 1)
    {
        let history = History { version: new_version, last_seq: span.last };
        heads.set(scope, conversation_id, Known { cid: known.cid, history });
        return Ok(Some(new_version));
    }
    // A wrong guess, a stored id, or a failure: the next append reads the head,
    // and the long way gets its plain inserts back.
    heads.forget(scope, conversation_id);
    let plain = dialect::text(db.dialect()).message_insert;
    for statement in [0, last] {
        statements[statement].sql = plain.to_owned();
        statements[statement].params.truncate(dialect::MESSAGE_INSERT_PARAMS);
    }
    match stored {
        Ok(counts) => Err(storage(format!("append: the database reported {counts:?} rows stored for one row each"))),
        Err(Failure::Contended(_)) => Ok(None),
        Err(failure) => Err(failure),
    }
}

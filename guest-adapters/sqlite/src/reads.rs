//! `conversation-store` reads: a history's messages and a user's conversations.
//! Each runs as one read ([`Db::read`]); neither changes anything.

use crate::conversations::{find, info_from_row};
use crate::db::{Db, Dialect, Res, Row, context, int, storage, text};
use crate::dialect;
use crate::exports::stowage::reads::load_plan::{Dialect as PlanDialect, MessageStatements};
use crate::exports::stowage::store::conversation_store::{ConversationInfo, MessageRange, Scope, StoredMessage};
use crate::model::{SEQ_LIMIT, role_from_code};
use crate::stowage::store::types::{Error, Message};

pub(crate) fn stored_message(row: &mut Row) -> Res<StoredMessage> {
    let seq = row.uint(0)?;
    let decoded = (|| {
        let id = row.text(1)?;
        let code = row.int(2)?;
        let role = role_from_code(code).ok_or_else(|| storage(format!("unknown role code {code}")))?;
        Ok(Message { id, role, created_at: row.int(3)?, content: row.blob(4)?, tag: row.blob(5)? })
    })();
    let message = context(decoded, || format!("message seq {seq}"))?;
    Ok(StoredMessage { seq, message })
}

pub fn load(
    db: &Db,
    scope: Scope,
    conversation_id: String,
    range: MessageRange,
    limit: u32,
) -> Result<Vec<StoredMessage>, Error> {
    db.read(|| {
        if db.dialect() == Dialect::Sqlite
            && let Some(whole) = load_checked(db, &scope, &conversation_id, range, limit)?
        {
            return Ok(whole);
        }
        let key = find(db, &scope, &conversation_id, false)?.ok_or(Error::NotFound)?;
        let t = dialect::text(db.dialect());
        let (cid, limit) = (int(key.cid), int(i64::from(limit)));
        // Every stored seq is below 2^32, so clamping there changes no answer.
        let clamp = |seq: u64| int(seq.min(SEQ_LIMIT) as i64);
        let (sql, params, newest_first) = match range {
            MessageRange::Latest => (t.messages_latest, vec![cid, limit], true),
            MessageRange::After(seq) => (t.messages_after, vec![cid, clamp(seq), limit], false),
            MessageRange::Before(seq) => (t.messages_before, vec![cid, clamp(seq), limit], true),
        };
        let mut messages =
            db.query("loading messages", sql, &params)?.iter_mut().map(stored_message).collect::<Res<Vec<_>>>()?;
        if newest_first {
            messages.reverse();
        }
        Ok(messages)
    })
}

/// A SQLite load in one statement, the load plan's (the host runs the same
/// statements), checked against the conversation's newest seq: SQLite's range
/// scan can stop at a damaged page without reporting it, and a history cut short
/// must fail, not come back shorter. `None` when no row came back: the caller
/// tells an empty conversation from a missing one.
fn load_checked(
    db: &Db,
    scope: &Scope,
    conversation_id: &str,
    range: MessageRange,
    limit: u32,
) -> Res<Option<Vec<StoredMessage>>> {
    let mut params = vec![text(&scope.tenant), text(&scope.user), text(conversation_id)];
    let bound = |seq: u64| int(seq.min(SEQ_LIMIT) as i64);
    let (sql, newest_first) = match range {
        MessageRange::Latest => (dialect::PLAN_LATEST, true),
        MessageRange::After(seq) => {
            params.push(bound(seq));
            (dialect::PLAN_AFTER, false)
        }
        MessageRange::Before(seq) => {
            params.push(bound(seq));
            (dialect::PLAN_BEFORE, true)
        }
    };
    params.push(int(i64::from(limit)));
    let mut rows = db.query("loading messages", sql, &params)?;
    let Some(newest) = rows.first_mut().map(|row| row.uint(6)).transpose()? else { return Ok(None) };
    let mut messages = rows.iter_mut().map(stored_message).collect::<Res<Vec<_>>>()?;
    if newest_first {
        messages.reverse();
    }
    let (first, last) = (messages.first().map_or(0, |m| m.seq), messages.last().map_or(0, |m| m.seq));
    let (from, to) = expected_seqs(range, u64::from(limit), newest);
    if (first, last) != (from, to) || messages.len() as u64 != to - from + 1 {
        return Err(storage(format!(
            "loading messages: seqs {first} to {last} came back where the conversation, whose newest seq is \
             {newest}, holds {from} to {to}: the database is corrupt"
        )));
    }
    Ok(Some(messages))
}

/// The first and last seq a page of `range` and `limit` holds in a conversation
/// of seqs 1 to `newest` (not empty).
fn expected_seqs(range: MessageRange, limit: u64, newest: u64) -> (u64, u64) {
    let back = |to: u64| (to.saturating_sub(limit.saturating_sub(1)).max(1), to);
    match range {
        MessageRange::Latest => back(newest),
        MessageRange::After(after) => (after.saturating_add(1), newest.min(after.saturating_add(limit))),
        MessageRange::Before(before) => back(newest.min(before.saturating_sub(1))),
    }
}

/// The load plan for `asked`: [`load`]'s reads as single statements the host
/// runs itself, on SQLite only (on PostgreSQL every load stays a call).
pub fn plan(db: &Db, asked: PlanDialect) -> Option<MessageStatements> {
    match (db.dialect(), asked) {
        (Dialect::Sqlite, PlanDialect::Sqlite) => Some(MessageStatements {
            latest: dialect::PLAN_LATEST.to_owned(),
            after: dialect::PLAN_AFTER.to_owned(),
            before: dialect::PLAN_BEFORE.to_owned(),
        }),
        _ => None,
    }
}

pub fn list(db: &Db, scope: Scope, after: Option<String>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
    db.read(|| {
        let t = dialect::text(db.dialect());
        let (tenant, user, limit) = (text(&scope.tenant), text(&scope.user), int(i64::from(limit)));
        let rows = match &after {
            None => db.query("listing conversations", t.conversations_first, &[tenant, user, limit])?,
            Some(after) => {
                db.query("listing conversations", t.conversations_after, &[tenant, user, text(after), limit])?
            }
        };
        rows.into_iter().map(|mut row| info_from_row(db, &mut row)).collect()
    })
}

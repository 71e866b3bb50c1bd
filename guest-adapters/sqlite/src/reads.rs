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

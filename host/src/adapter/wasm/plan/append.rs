//! Appends the host runs itself from an adapter's append plan
//! (`stowage:writes/append-plan`): the adapter names the INSERTs its `append`
//! runs for a batch that continues a known head, and the host runs them on the
//! adapter's own SQL session, in the call's place on the instance, so the
//! messages never cross into the adapter and the adapter is not entered.
//!
//! The host runs them only for a batch it numbered from the head this instance
//! last saw ([`crate::adapter::pool::Heads`]), with no `expected-version` but that head's.
//! The head is a guess; the plan's first statement checks it in the database
//! and stores nothing when it is wrong. Then, and whenever the plan has no
//! answer, the adapter's own `append` is called and its answer stands:
//! `not-found`, `already-stored`, `conflict` and `out-of-sequence` are always
//! the adapter's. Nothing here is trusted more than the adapter's `append`:
//! what the statements store is checked on every read, as any record is.
//!
//! An I/O failure (a full disk, a damaged database) fails the append with
//! `storage`, as the adapter's own statements would. A plan whose statements
//! cannot run (an error other than a constraint, a busy database or an I/O
//! failure) is dropped for the instance; one whose statements change other
//! than one row each makes the call a contract violation and is dropped too. A
//! longer batch runs in one transaction, and such counts are rolled back; a
//! batch of one message is one statement on its own (no transaction around it,
//! as the adapter sends it), committed when it returns.
//!
//! Before each statement and the commit the host checks what it checks before
//! the adapter's own: an injected fault (tests), and the call's deadline, which
//! interrupts the call as the epoch deadline interrupts the adapter's code (the
//! instance is discarded, its transaction rolled back with its connection).

use wasmtime::Trap;

use crate::adapter::pool::{AppendPlan, Head, Instance};
use crate::adapter::raw::RawStored;
use crate::capability::sql::{SqlSession, Value};
use crate::model::{Role, Scope};
use crate::wit::writes::append_plan::{self, MessageStatements};
use crate::wit::{SqlErrorKind, SqlFailure};

/// Parameters of `middle`; `first` and `last` take [`ALL_PARAMS`].
const MIDDLE_PARAMS: usize = 9;
const ALL_PARAMS: usize = 12;

/// What the plan did with a batch.
#[derive(Debug, PartialEq, Eq)]
pub enum Appended {
    /// Stored, at this version.
    Stored(u64),
    /// Nothing stored: call the adapter's `append`.
    AskAdapter,
    /// Rows changed that the plan's contract does not allow.
    Violation(String),
    /// An I/O failure: the append fails with `storage`, nothing of it kept.
    Storage(String),
}

/// What running the statements did.
#[derive(Debug, PartialEq, Eq)]
pub enum Ran {
    /// Each statement changed one row: the batch is stored.
    Stored,
    /// `first` changed no row (no such conversation in that scope); nothing is kept.
    NoConversation,
    /// A statement failed; nothing of the batch is kept.
    Failed(SqlErrorKind),
    /// Other counts of changed rows, one per statement run (a batch of one
    /// message committed them; a longer batch was rolled back).
    Miscounted(Vec<u64>),
}

/// The versions around a batch that continues `head`: before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    pub before: u64,
    pub after: u64,
}

/// Stores `messages` from `instance`'s append plan when it can, asking the
/// adapter for its plan first if it was not asked yet. On any answer but
/// [`Appended::Stored`] the messages are as they came. `Err` is a trap (asking
/// the plan, or an injected fault), which discards the instance as any trap
/// does.
pub fn append(
    instance: &mut Instance,
    scope: &Scope,
    id: &str,
    messages: &mut [RawStored],
    expected_version: Option<u64>,
    now: i64,
) -> wasmtime::Result<Appended> {
    let Instance { store, append_plan: plan, heads, planned_appends, .. } = instance;
    let Some(head) = heads.get(scope, id) else { return Ok(Appended::AskAdapter) };
    let Some(versions) = continues(head, messages, expected_version) else { return Ok(Appended::AskAdapter) };
    if let AppendPlan::Unasked(writer) = plan {
        let asked = if super::on_sqlite(store) {
            writer.stowage_writes_append_plan().call_message_plan(&mut *store, append_plan::Dialect::Sqlite)?
        } else {
            None
        };
        *plan = asked.map_or(AppendPlan::None, AppendPlan::Ready);
    }
    let AppendPlan::Ready(statements) = plan else { return Ok(Appended::AskAdapter) };
    let ran = run(&mut store.data_mut().sql, statements, scope, id, messages, versions, now)?;
    let (answer, keep) = judge(ran, versions);
    match &answer {
        Appended::Stored(version) => {
            let last_seq = messages.last().map_or(head.last_seq, |m| m.seq);
            heads.set(scope, id, Head { version: *version, last_seq });
            *planned_appends += 1;
        }
        Appended::AskAdapter | Appended::Violation(_) | Appended::Storage(_) => heads.forget(scope, id),
    }
    if !keep {
        *plan = AppendPlan::None;
    }
    Ok(answer)
}

/// The answer to a batch the statements `ran` for, and whether the plan may
/// run again.
pub fn judge(ran: Ran, versions: Versions) -> (Appended, bool) {
    match ran {
        Ran::Stored => (Appended::Stored(versions.after), true),
        Ran::NoConversation => (Appended::AskAdapter, true),
        Ran::Failed(SqlErrorKind::Constraint(_) | SqlErrorKind::Busy) => (Appended::AskAdapter, true),
        Ran::Failed(SqlErrorKind::Io(reason)) => (Appended::Storage(reason), true),
        Ran::Failed(error) => {
            tracing::warn!(?error, "the adapter's append plan cannot run; appends call the adapter");
            (Appended::AskAdapter, false)
        }
        Ran::Miscounted(counts) => {
            tracing::warn!(?counts, "the adapter's append plan changed other than one row per message; dropped");
            let what = format!("its append plan changed {counts:?} rows, one per message expected");
            (Appended::Violation(what), false)
        }
    }
}

/// The versions around `messages` if they continue `head` as the host numbers
/// an append (contiguous from its last seq + 1) and `expected` allows it.
pub fn continues(head: Head, messages: &[RawStored], expected: Option<u64>) -> Option<Versions> {
    let first = messages.first()?.seq;
    let contiguous = messages.windows(2).all(|pair| pair[0].seq.checked_add(1) == Some(pair[1].seq));
    let last = messages.last()?.seq;
    if head.last_seq.checked_add(1) != Some(first) || !contiguous || i64::try_from(last).is_err() {
        return None;
    }
    if expected.is_some_and(|v| v != head.version) {
        return None;
    }
    // Both versions are bound as SQL integers.
    let after = head.version.checked_add(1).filter(|&v| i64::try_from(v).is_ok())?;
    Some(Versions { before: head.version, after })
}

/// Runs `statements` for `messages` on `session`: one statement alone for a
/// batch of one, else all in one transaction, committed only if each changed
/// one row. The messages are as they came afterwards (their ids, contents and
/// tags are moved into the parameters and back). `Err`: a trap, or the call's
/// deadline passed (before a statement, or during one, which SQLite then
/// interrupted); nothing of the batch is kept.
pub fn run(
    session: &mut SqlSession,
    statements: &MessageStatements,
    scope: &Scope,
    id: &str,
    messages: &mut [RawStored],
    versions: Versions,
    now: i64,
) -> wasmtime::Result<Ran> {
    let mut params = bind(scope, id, messages, versions, now);
    let ran = execute(session, statements, &params);
    give_back(messages, &mut params);
    ran
}

/// Before each statement and the commit: an injected fault, then the call's
/// deadline.
fn before(session: &SqlSession) -> wasmtime::Result<Result<(), SqlErrorKind>> {
    match session.before_statement() {
        Ok(()) => {}
        Err(SqlFailure::Report(kind)) => return Ok(Err(kind)),
        Err(SqlFailure::Trap(trap)) => return Err(trap),
    }
    if session.deadline_passed() {
        return Err(Trap::Interrupt.into());
    }
    Ok(Ok(()))
}

/// A statement that failed with `error`: interrupted at the call's deadline
/// (`Err`, the call times out), or a failure of its own.
fn failed(session: &SqlSession, error: SqlErrorKind) -> wasmtime::Result<Ran> {
    match session.failed(error) {
        SqlFailure::Report(kind) => Ok(Ran::Failed(kind)),
        SqlFailure::Trap(trap) => Err(trap),
    }
}

fn execute(session: &mut SqlSession, statements: &MessageStatements, params: &[Vec<Value>]) -> wasmtime::Result<Ran> {
    let last = params.len().saturating_sub(1);
    let sql = |k: usize| match k {
        0 => statements.first.as_str(),
        k if k == last => statements.last.as_str(),
        _ => statements.middle.as_str(),
    };
    if let Err(error) = before(session)? {
        return Ok(Ran::Failed(error));
    }
    if let [only] = params {
        return match session.execute(sql(0), only) {
            Ok(1) => Ok(Ran::Stored),
            Ok(0) => Ok(Ran::NoConversation),
            Ok(n) => Ok(Ran::Miscounted(vec![n])),
            Err(error) => failed(session, error),
        };
    }
    if let Err(error) = session.begin() {
        return Ok(Ran::Failed(error));
    }
    let mut counts = Vec::with_capacity(params.len());
    for (k, values) in params.iter().enumerate() {
        if k > 0
            && let Some(ran) = before_in_batch(session)?
        {
            return Ok(ran);
        }
        match session.execute(sql(k), values) {
            Ok(n) => counts.push(n),
            Err(error) => {
                rollback(session);
                return failed(session, error);
            }
        }
        if counts[k] != 1 {
            break;
        }
    }
    Ok(match counts.as_slice() {
        counts if counts.len() == params.len() && counts.iter().all(|&n| n == 1) => {
            if let Some(ran) = before_in_batch(session)? {
                return Ok(ran);
            }
            match session.commit() {
                Ok(()) => Ran::Stored,
                Err(error) => {
                    rollback(session);
                    return failed(session, error);
                }
            }
        }
        [0] => undone(session, Ran::NoConversation),
        _ => undone(session, Ran::Miscounted(counts)),
    })
}

/// [`before`] inside the batch's transaction: a fault or a passed deadline
/// rolls it back first; `Some`: the batch ends with that.
fn before_in_batch(session: &mut SqlSession) -> wasmtime::Result<Option<Ran>> {
    match before(session) {
        Ok(Ok(())) => Ok(None),
        Ok(Err(error)) => Ok(Some(undone(session, Ran::Failed(error)))),
        Err(trap) => {
            rollback(session);
            Err(trap)
        }
    }
}

/// Rolls back what the batch ran, then answers `ran`.
fn undone(session: &mut SqlSession, ran: Ran) -> Ran {
    rollback(session);
    ran
}

fn rollback(session: &mut SqlSession) {
    if let Err(error) = session.rollback() {
        // The call's end rolls back what is left open (`SqlSession::reset`), or
        // discards the instance; the adapter's own append then fails to begin.
        tracing::warn!(?error, "rolling back the append plan's batch failed");
    }
}

fn sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The role's index in the WIT `role` enum (contract order).
fn role_code(role: Role) -> i64 {
    Role::ALL.iter().position(|&r| r == role).map_or(-1, |i| i as i64)
}

/// Each message's parameters (ids, contents and tags moved in: see [`give_back`]).
fn bind(scope: &Scope, id: &str, messages: &mut [RawStored], versions: Versions, now: i64) -> Vec<Vec<Value>> {
    let last = messages.len().saturating_sub(1);
    let mut all = Vec::with_capacity(messages.len());
    for (k, stored) in messages.iter_mut().enumerate() {
        let ends = k == 0 || k == last;
        let mut params = Vec::with_capacity(if ends { ALL_PARAMS } else { MIDDLE_PARAMS });
        let m = &mut stored.message;
        params.extend([
            Value::Text(scope.tenant.clone()),
            Value::Text(scope.user.clone()),
            Value::Text(id.to_owned()),
            // `continues` checked every seq of the batch fits.
            Value::Integer(sql_int(stored.seq)),
            Value::Text(std::mem::take(&mut m.id)),
            Value::Integer(role_code(m.role)),
            Value::Integer(m.created_at),
            Value::Blob(std::mem::take(&mut m.content)),
            Value::Blob(std::mem::take(&mut m.tag)),
        ]);
        if ends {
            // `continues` checked both versions fit.
            let (before, after) = (sql_int(versions.before), sql_int(versions.after));
            let head = |value: i64| if k == last { Value::Integer(value) } else { Value::Null };
            params.extend([Value::Integer(before), head(after), head(now)]);
        }
        all.push(params);
    }
    all
}

/// Moves each message's id, content and tag back out of its parameters.
fn give_back(messages: &mut [RawStored], params: &mut [Vec<Value>]) {
    for (stored, values) in messages.iter_mut().zip(params) {
        let mut take = |i: usize| values.get_mut(i).map(|v| std::mem::replace(v, Value::Null));
        if let Some(Value::Text(id)) = take(4) {
            stored.message.id = id;
        }
        if let Some(Value::Blob(content)) = take(7) {
            stored.message.content = content;
        }
        if let Some(Value::Blob(tag)) = take(8) {
            stored.message.tag = tag;
        }
    }
}

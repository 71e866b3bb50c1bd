//! Loads the host runs itself from an adapter's load plan
//! (`stowage:reads/load-plan`): the adapter names the SELECTs its `load` would
//! run, and the host runs them on the adapter's own SQL session, in the call's
//! place on the instance, so the rows never cross into the adapter and back.
//!
//! Nothing here is trusted more than the adapter's `load`: the records go up to
//! the checked client like any answer (page shape, range, limit, budget, tags).
//! A statement the database cannot confirm as read-only is never run, and the
//! plan is dropped. The adapter's own `load` answers whenever the plan has no
//! answer: no rows (an empty or a missing conversation) or a SQL error other
//! than `io`, so `not-found` is always the adapter's. An `io` error (a failing
//! disk, a damaged database) fails the load: asking the adapter to read the
//! same damaged pages again could only hide it. Every row also carries the
//! conversation's newest seq, and a page that does not hold exactly the seqs
//! its range and limit call for is a storage error: SQLite does not notice
//! every damaged page, and a range scan can stop early at one.

use super::rows::{records, whole};
use crate::adapter::pool::{Instance, LoadPlan};
use crate::adapter::raw::{Range, RawStored};
use crate::capability::sql::{SqlSession, Value};
use crate::model::Scope;
use crate::wit::reads::load_plan::{self, MessageStatements};
use crate::wit::{SqlErrorKind, SqlFailure};

/// What running the plan gave.
#[derive(Debug)]
pub enum Planned {
    /// The records, for the client to check.
    Records(Vec<RawStored>),
    /// Rows that are not records of the plan's shape: a contract violation.
    Malformed(String),
    /// Records, but not the seqs the range calls for, or an `io` failure: a
    /// damaged database or a failing disk (a storage error).
    Damaged(String),
    /// No answer from the plan: call the adapter's `load`.
    AskAdapter,
    /// The statement may write, so it was not run: drop the plan, call `load`.
    Writes,
}

/// Runs `instance`'s load plan for a load of `range`, asking the adapter for
/// its plan first if it was not asked yet. `Err` is a trap (asking the plan,
/// or an injected fault), which discards the instance as any trap does.
pub fn load(instance: &mut Instance, scope: &Scope, id: &str, range: Range, limit: u32) -> wasmtime::Result<Planned> {
    let Instance { store, load_plan: plan, planned_loads, .. } = instance;
    if let LoadPlan::Unasked(reader) = plan {
        let asked = if super::on_sqlite(store) {
            reader.stowage_reads_load_plan().call_message_plan(&mut *store, load_plan::Dialect::Sqlite)?
        } else {
            None
        };
        *plan = asked.map_or(LoadPlan::None, LoadPlan::Ready);
    }
    let LoadPlan::Ready(statements) = plan else { return Ok(Planned::AskAdapter) };
    let planned = run(&mut store.data_mut().sql, statements, scope, id, range, limit)?;
    match planned {
        Planned::Writes => {
            tracing::warn!(
                "the adapter's load plan names a statement that may write; it is never run, loads call the adapter"
            );
            *plan = LoadPlan::None;
            return Ok(Planned::AskAdapter);
        }
        Planned::Records(_) | Planned::Malformed(_) | Planned::Damaged(_) => *planned_loads += 1,
        Planned::AskAdapter => {}
    }
    Ok(planned)
}

/// Runs the statement of `statements` for `range` on `session`, if the
/// database confirms it writes nothing, and judges its rows.
pub fn run(
    session: &mut SqlSession,
    statements: &MessageStatements,
    scope: &Scope,
    id: &str,
    range: Range,
    limit: u32,
) -> wasmtime::Result<Planned> {
    let (sql, params, newest_first) = statement(statements, scope, id, range, limit);
    let ran = match session.before_statement() {
        Ok(()) => session.query_read_only(sql, &params),
        Err(SqlFailure::Trap(trap)) => return Err(trap),
        Err(SqlFailure::Report(kind)) => Err(kind),
    };
    let rows = match ran {
        // Interrupted at the call's deadline: the call times out.
        Err(_) if session.deadline_passed() => return Err(wasmtime::Trap::Interrupt.into()),
        Ok(Some(rows)) => rows.rows,
        Ok(None) => return Ok(Planned::Writes),
        Err(SqlErrorKind::Io(reason)) => return Ok(Planned::Damaged(format!("reading its messages: {reason}"))),
        Err(error) => {
            tracing::debug!(?error, "the load plan failed; the adapter answers");
            return Ok(Planned::AskAdapter);
        }
    };
    if rows.is_empty() {
        return Ok(Planned::AskAdapter);
    }
    Ok(match records(rows, newest_first) {
        Err(what) => Planned::Malformed(what),
        Ok((records, newest)) => match whole(&records, newest, range, limit) {
            Ok(()) => Planned::Records(records),
            Err(what) => Planned::Damaged(what),
        },
    })
}

/// The statement for `range`, its parameters, and whether it returns the
/// newest first.
pub(super) fn statement<'a>(
    statements: &'a MessageStatements,
    scope: &Scope,
    id: &str,
    range: Range,
    limit: u32,
) -> (&'a str, Vec<Value>, bool) {
    let mut params =
        vec![Value::Text(scope.tenant.clone()), Value::Text(scope.user.clone()), Value::Text(id.to_owned())];
    let bound = |seq: u64| Value::Integer(i64::try_from(seq).unwrap_or(i64::MAX));
    let (sql, newest_first) = match range {
        Range::Latest => (&statements.latest, true),
        Range::After(seq) => {
            params.push(bound(seq));
            (&statements.after, false)
        }
        Range::Before(seq) => {
            params.push(bound(seq));
            (&statements.before, true)
        }
    };
    params.push(Value::Integer(i64::from(limit)));
    (sql, params, newest_first)
}

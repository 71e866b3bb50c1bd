//! The round trips of one statement on one connection: prepare (cached, bounded
//! per connection), bind, run, read rows up to the result cap.

use std::pin::pin;

use deadpool_postgres::ClientWrapper;
use futures_util::{FutureExt, StreamExt};
use tokio_postgres::Statement;

use super::bind::bind;
use super::decode::{self, Raw};
use super::errors::{OpError, classify, is_stale_plan};
use crate::capability::sql::session::Statement as Batched;
use crate::capability::sql::{Rows, Value};
use crate::wit::SqlErrorKind;

/// Prepared statements kept per connection. The adapter's statement text varies
/// with batch sizes, so the cache is emptied when it reaches this many (the
/// server forgets the dropped ones).
pub const STATEMENT_CACHE: usize = 256;

async fn prepare(client: &ClientWrapper, sql: &str) -> Result<Statement, OpError> {
    if client.statement_cache.size() >= STATEMENT_CACHE {
        client.statement_cache.clear();
    }
    client.prepare_cached(sql).await.map_err(|e| classify(&e))
}

/// Classifies a failed run; a statement whose cached plan went stale (its tables
/// changed shape) leaves the cache. `Ok(())` asks the caller to run it again,
/// which it may only do outside a transaction (inside, the error aborted it).
fn failed(client: &ClientWrapper, sql: &str, err: &tokio_postgres::Error, may_retry: bool) -> Result<(), OpError> {
    if is_stale_plan(err) {
        drop(client.statement_cache.remove(sql, &[]));
        if may_retry {
            return Ok(());
        }
        // Retrying the whole call re-runs it with a fresh plan.
        return Err(OpError { kind: SqlErrorKind::Busy, broken: false, from_server: true });
    }
    Err(classify(err))
}

/// Runs a statement that returns no rows; rows changed.
pub async fn execute(client: &ClientWrapper, sql: &str, params: &[Value], may_retry: bool) -> Result<u64, OpError> {
    let mut retry = may_retry;
    loop {
        let statement = prepare(client, sql).await?;
        let bound = bind(statement.params(), params)?;
        match client.execute_raw(&statement, bound.iter()).await {
            Ok(changed) => return Ok(changed),
            Err(err) => failed(client, sql, &err, std::mem::take(&mut retry))?,
        }
    }
}

/// Runs a statement and reads its rows, failing with `too-large` once their
/// values exceed `max_bytes` (the rest is never decoded).
pub async fn query(
    client: &ClientWrapper,
    sql: &str,
    params: &[Value],
    max_bytes: u64,
    may_retry: bool,
) -> Result<Rows, OpError> {
    let mut retry = may_retry;
    loop {
        let statement = prepare(client, sql).await?;
        let columns: Vec<String> = statement.columns().iter().map(|c| c.name().to_owned()).collect();
        for column in statement.columns() {
            decode::readable(column.name(), column.type_())?;
        }
        let bound = bind(statement.params(), params)?;
        let stream = match client.query_raw(&statement, bound.iter()).await {
            Ok(stream) => stream,
            Err(err) => {
                failed(client, sql, &err, std::mem::take(&mut retry))?;
                continue;
            }
        };
        let mut stream = pin!(stream);
        let mut rows = Vec::new();
        let mut total: u64 = 0;
        while let Some(row) = stream.next().await {
            let row = match row {
                Ok(row) => row,
                // Rows already read were a real answer: no retry past them.
                Err(err) => return Err(classify(&err)),
            };
            let mut values = Vec::with_capacity(columns.len());
            for (index, column) in statement.columns().iter().enumerate() {
                let raw: Raw<'_> =
                    row.try_get(index).map_err(|e| OpError::host(SqlErrorKind::Io(format!("reading a row: {e}"))))?;
                let value = decode::value(column.name(), column.type_(), raw)?;
                total += value.size();
                values.push(value);
            }
            if total > max_bytes {
                return Err(OpError::host(SqlErrorKind::TooLarge(format!(
                    "query result exceeds the host's limit of {max_bytes} bytes"
                ))));
            }
            rows.push(values);
        }
        return Ok(Rows { columns, rows });
    }
}

/// Runs statements through the simple protocol (transaction control and
/// savepoints; no parameters).
pub async fn plain(client: &ClientWrapper, statements: &str) -> Result<(), OpError> {
    client.batch_execute(statements).await.map_err(|e| classify(&e))
}

/// Runs `statements` as one step inside the open transaction: `SAVEPOINT`, the
/// statements in order, `RELEASE`, pipelined — one round trip when their plans
/// are cached, two when some must be prepared (the `Parse`s go after the
/// savepoint, so even a statement that does not parse is undone with the rest).
/// `Ok(Err(..))`: a statement failed and everything since the savepoint was
/// rolled back (the transaction goes on); `Err`: the connection or the
/// transaction failed.
pub async fn atomic(client: &ClientWrapper, statements: &[Batched]) -> Result<Result<Vec<u64>, SqlErrorKind>, OpError> {
    let mut savepoint = pin!(client.batch_execute("SAVEPOINT stowage_batch"));
    // Each request leaves at its future's first poll (which may also finish it:
    // a closed connection fails at once; a finished future is never polled again).
    let mut saved = savepoint.as_mut().now_or_never();
    let mut preparing: Vec<_> = statements.iter().map(|s| Box::pin(prepare(client, &s.sql))).collect();
    let mut prepared = Vec::with_capacity(statements.len());
    for future in &mut preparing {
        prepared.push(future.as_mut().now_or_never());
    }
    let mut plans = Vec::with_capacity(statements.len());
    for (ready, future) in prepared.into_iter().zip(&mut preparing) {
        let plan = match ready {
            Some(plan) => plan,
            None => future.await,
        };
        match plan {
            Ok(plan) => plans.push(plan),
            Err(e) => {
                let saved = match saved.take() {
                    Some(result) => result,
                    None => savepoint.as_mut().await,
                };
                return undo(client, saved, e).await;
            }
        }
    }
    let mut bound = Vec::with_capacity(statements.len());
    for (statement, plan) in statements.iter().zip(&plans) {
        match bind(plan.params(), &statement.params) {
            Ok(values) => bound.push(values),
            Err(kind) => {
                let saved = match saved.take() {
                    Some(result) => result,
                    None => savepoint.as_mut().await,
                };
                return undo(client, saved, OpError::host(kind)).await;
            }
        }
    }
    let runs =
        futures_util::future::join_all(plans.iter().zip(&bound).map(|(plan, b)| client.execute_raw(plan, b.iter())));
    let release = client.batch_execute("RELEASE stowage_batch");
    let saving = async {
        match saved.take() {
            Some(result) => result,
            None => savepoint.as_mut().await,
        }
    };
    let (saved, ran, released) = tokio::join!(saving, runs, release);
    saved.map_err(|e| classify(&e))?;
    let mut changes = Vec::with_capacity(ran.len());
    for (statement, result) in statements.iter().zip(ran) {
        match result {
            Ok(changed) => changes.push(changed),
            Err(err) => {
                let error = match failed(client, &statement.sql, &err, false) {
                    Err(error) => error,
                    Ok(()) => classify(&err),
                };
                return undo(client, Ok(()), error).await;
            }
        }
    }
    released.map_err(|e| classify(&e))?;
    Ok(Ok(changes))
}

/// Rolls back to the batch's savepoint after `error` (unless the connection is
/// gone): the batch's failure, or the rollback's.
async fn undo(
    client: &ClientWrapper,
    saved: Result<(), tokio_postgres::Error>,
    error: OpError,
) -> Result<Result<Vec<u64>, SqlErrorKind>, OpError> {
    saved.map_err(|e| classify(&e))?;
    if error.broken {
        return Err(error);
    }
    plain(client, "ROLLBACK TO stowage_batch; RELEASE stowage_batch").await?;
    Ok(Err(error.kind))
}

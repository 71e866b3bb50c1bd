//! The round trips of one statement on one connection: prepare (cached, bounded
//! per connection), bind, run, read rows up to the result cap.

use std::pin::pin;

use deadpool_postgres::ClientWrapper;
use futures_util::StreamExt;
use tokio_postgres::Statement;

use super::bind::bind;
use super::decode::{self, Raw};
use super::errors::{OpError, classify, is_stale_plan};
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

//! Calls queued behind a busy instance run back to back in commit groups: their
//! writes share one commit, every caller is answered only once it is committed,
//! and an adapter that traps in the middle of a group fails its own call alone.

mod support;

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use stowage::{Builtin, ConversationMeta, Error, Limits, SqlFault, Store, StoreConfig};
use stowage_tests::shared_runtime;
use support::{all, scope, text};

const CALLERS: usize = 24;

/// Holds the store's only instance with a stalled call while `CALLERS` appends
/// (two messages each, to conversations `r{round}-{i}`) queue behind it, then
/// arms `fault` to strike `after` statements later. The appends' outcomes.
async fn queue_appends_behind_a_stall(
    store: &Store,
    round: usize,
    fault: Option<(u32, SqlFault)>,
) -> anyhow::Result<Vec<Result<(), Error>>> {
    let ids: Vec<String> = (0..CALLERS).map(|i| format!("r{round}-{i}")).collect();
    for id in &ids {
        store.open(&scope(), id, ConversationMeta::default()).await?;
    }
    let calls = store.stats().calls;
    store.inject_sql_fault(0, SqlFault::Stall(Duration::from_millis(400)))?;
    let blocker = {
        let store = store.clone();
        let id = ids[0].clone();
        tokio::spawn(async move { store.info(&scope(), &id).await })
    };
    // The stall has struck once the blocking call reached the adapter.
    let started = Instant::now();
    while store.stats().calls == calls {
        ensure!(started.elapsed() < Duration::from_secs(10), "the blocking call never started");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let appends: Vec<_> = ids
        .iter()
        .map(|id| {
            let (store, id) = (store.clone(), id.clone());
            tokio::spawn(async move {
                let batch = vec![text(format!("{id}-a")), text(format!("{id}-b"))];
                store.append(&scope(), &id, batch, None).await.map(drop)
            })
        })
        .collect();
    if let Some((after, fault)) = fault {
        store.inject_sql_fault(after, fault)?;
    }
    let mut outcomes = Vec::new();
    for append in appends {
        outcomes.push(append.await?);
    }
    blocker.await?.context("the blocking call")?;
    store.disarm_sql_fault();
    // Every append answered Ok is stored whole; every other left nothing.
    for (id, outcome) in ids.iter().zip(&outcomes) {
        let stored = all(store, id).await?;
        let want = if outcome.is_ok() { 2 } else { 0 };
        ensure!(stored.len() == want, "{id}: {} messages stored after {outcome:?}", stored.len());
    }
    Ok(outcomes)
}

fn limits() -> Limits {
    Limits { instances: 1, restart_budget: 1000, restart_backoff_ms: 1, max_restart_backoff_ms: 1, ..Limits::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_appends_share_commit_groups_and_each_is_answered_once_committed() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits())).await?;
    let outcomes = queue_appends_behind_a_stall(&store, 0, None).await?;
    ensure!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let grouped = store.stats().grouped_calls;
    ensure!(grouped >= 2, "the queued appends ran in commit groups: {:?}", store.stats());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_inside_a_commit_group_fails_its_own_call_alone() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits())).await?;
    // The trap lands on a statement of the queued appends: a few appends in
    // (each takes several), so calls before it in its group have written.
    for (round, after) in [(1, 9), (2, 14), (3, 23)] {
        let traps = store.stats().traps;
        let outcomes = queue_appends_behind_a_stall(&store, round, Some((after, SqlFault::Trap))).await?;
        let failed: Vec<_> = outcomes.iter().filter(|o| o.is_err()).collect();
        match failed[..] {
            [Err(Error::Trap { .. })] => {}
            _ => bail!("round {round}: exactly the trapped call fails: {outcomes:?}"),
        }
        ensure!(store.stats().traps == traps + 1, "{:?}", store.stats());
    }
    ensure!(store.stats().grouped_calls > 0, "{:?}", store.stats());
    Ok(())
}

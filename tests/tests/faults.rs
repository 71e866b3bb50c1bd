//! Faults in the middle of a write: an adapter that traps or times out at every
//! SQL statement of a batch, a filesystem write cut short by its deadline, and a
//! caller that gives up (its call still runs to the end, in order, and gives its
//! queue slot back).

mod support;

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use stowage::{
    Builtin, ConversationInfo, ConversationMeta, Error, HealthStatus, Limits, Message, NewMessage, Role, SqlFault,
    Store, StoreConfig,
};
use stowage_tests::shared_runtime;
use support::{all, check_contiguous, scope, text};

async fn snapshot(store: &Store) -> anyhow::Result<(ConversationInfo, Vec<Message>)> {
    Ok((store.info(&scope(), "c").await?, all(store, "c").await?))
}

/// What [`sweep_batch_faults`] saw.
#[derive(Debug, Default)]
struct Sweep {
    /// Faults that failed the append with nothing of the batch stored.
    before_commit: u32,
    /// A fault that failed the append after its commit (a lost acknowledgment).
    after_commit: bool,
}

/// Strikes `fault` at statement 0, 1, 2, … of a batch append until the append
/// gets through. A fault before the adapter's commit must leave the batch wholly
/// absent. A fault that lands once the commit is durable fails the call although
/// the batch is stored (the acknowledgment is lost, as with any crash after a
/// commit): then retrying the same batch must store nothing twice.
///
/// The SQLite adapter sends an append that continues the head its instance saw
/// last as one statement, which is its own commit. With `fresh`, the instance
/// that stored the first messages is replaced before the sweep, so the batch
/// goes the long way (a transaction of several statements) from statement 0.
async fn sweep_batch_faults(
    store: &Store,
    fresh: bool,
    fault: SqlFault,
    expect: fn(&Error) -> bool,
) -> anyhow::Result<Sweep> {
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    store.append(&scope(), "c", (0..3).map(|i| text(format!("keep-{i}"))).collect(), None).await?;
    if fresh {
        store.inject_sql_fault(0, SqlFault::Trap)?;
        let replaced = store.info(&scope(), "c").await;
        store.disarm_sql_fault();
        ensure!(matches!(replaced, Err(Error::Trap { .. })), "the instance was not replaced: {replaced:?}");
    }
    let before = snapshot(store).await?;
    let batch = || (0..6).map(|i| text(format!("batch-{i}"))).collect::<Vec<_>>();
    let mut sweep = Sweep::default();
    for k in 0..64 {
        store.inject_sql_fault(k, fault)?;
        let result = store.append(&scope(), "c", batch(), None).await;
        store.disarm_sql_fault();
        match result {
            Err(e) if expect(&e) => {
                let now = snapshot(store).await?;
                if now == before {
                    sweep.before_commit += 1;
                    continue;
                }
                ensure!(
                    now.1.len() == 9 && now.0.version == before.0.version + 1,
                    "fault at statement {k}: part of the batch is visible ({} messages)",
                    now.1.len()
                );
                let retry = store.append(&scope(), "c", batch(), None).await?;
                ensure!(
                    retry.stored == 0 && retry.seqs == [4, 5, 6, 7, 8, 9],
                    "a retry after a lost acknowledgment duplicated: {retry:?}"
                );
                sweep.after_commit = true;
                return Ok(sweep);
            }
            Err(e) => bail!("fault at statement {k}: unexpected error {e:?}"),
            Ok(out) => {
                ensure!(out.seqs == [4, 5, 6, 7, 8, 9] && out.stored == 6, "the batch after the faults: {out:?}");
                let stored = all(store, "c").await?;
                check_contiguous(&stored, "after the faults")?;
                ensure!(stored.len() == 9);
                return Ok(sweep);
            }
        }
    }
    bail!("the append never got through")
}

fn fast_restarts() -> Limits {
    Limits { restart_budget: 1000, restart_backoff_ms: 1, max_restart_backoff_ms: 1, ..Limits::default() }
}

/// Every append reaches the adapter: the sweeps below walk its own statements
/// (the host's append plan has its own sweep).
fn adapter_statements() -> Limits {
    Limits { append_plans: false, ..fast_restarts() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_trapping_mid_batch_leaves_nothing_of_the_batch() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(adapter_statements());
    let store = shared_runtime()?.open_store(config).await?;
    let sweep = sweep_batch_faults(&store, false, SqlFault::Trap, |e| matches!(e, Error::Trap { .. })).await?;
    println!("{sweep:?}");
    // A trap at the one-statement append, then the long way's find, batch and commit.
    ensure!(sweep.before_commit >= 3, "only {} traps hit the batch before its commit", sweep.before_commit);
    ensure!(store.stats().traps >= u64::from(sweep.before_commit), "every trap counted: {:?}", store.stats());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_timing_out_mid_batch_leaves_nothing_of_the_batch() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { call_timeout: Duration::from_millis(150), ..adapter_statements() };
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    let stall = SqlFault::Stall(Duration::from_millis(300));
    let sweep = sweep_batch_faults(&store, true, stall, |e| matches!(e, Error::Timeout { .. })).await?;
    println!("{sweep:?}");
    // The long way sends two statements before its commit (the conversation
    // with its head, then the batch); a stall at the commit lets the commit land
    // after the deadline, a lost acknowledgment.
    ensure!(sweep.before_commit >= 2, "only {} timeouts hit the batch before its commit", sweep.before_commit);
    ensure!(store.stats().timeouts >= u64::from(sweep.before_commit), "every timeout counted: {:?}", store.stats());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_timing_out_at_a_one_statement_append_loses_only_the_acknowledgment() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { call_timeout: Duration::from_millis(150), ..adapter_statements() };
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    let stall = SqlFault::Stall(Duration::from_millis(300));
    let sweep = sweep_batch_faults(&store, false, stall, |e| matches!(e, Error::Timeout { .. })).await?;
    println!("{sweep:?}");
    // The statement is its own commit: it lands after the stall, past the deadline.
    ensure!(sweep.before_commit == 0 && sweep.after_commit, "{sweep:?}");
    Ok(())
}

/// The same sweep with the host running the SQLite adapter's append plan: a
/// trap, a stall past the deadline or an I/O error before any of its statements
/// or its commit leaves nothing of the batch, and none lands after the commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_at_every_statement_of_the_append_plan_leave_nothing_of_the_batch() -> anyhow::Result<()> {
    type Expect = fn(&Error) -> bool;
    let cases: [(SqlFault, Expect); 3] = [
        (SqlFault::Trap, |e| matches!(e, Error::Trap { .. })),
        (SqlFault::Stall(Duration::from_millis(300)), |e| matches!(e, Error::Timeout { .. })),
        (SqlFault::Error, |e| matches!(e, Error::Storage(reason) if reason.contains("injected"))),
    ];
    for (fault, expect) in cases {
        let dir = tempfile::tempdir()?;
        let limits = Limits { call_timeout: Duration::from_millis(150), ..fast_restarts() };
        let config = StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits);
        let store = shared_runtime()?.open_store(config).await?;
        let sweep = sweep_batch_faults(&store, false, fault, expect).await?;
        println!("{fault:?}: {sweep:?}");
        // Before its first statement, the five after it, and its commit.
        ensure!(sweep.before_commit == 7 && !sweep.after_commit, "{fault:?}: {sweep:?}");
        let planned = store.stats().planned_appends;
        ensure!(planned == 2, "{fault:?}: the setup's append and the last were the plan's, not {planned}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filesystem_write_cut_short_by_its_deadline_is_all_or_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let batch: Vec<NewMessage> =
        (0..300).map(|i| NewMessage::text(Role::User, "x".repeat(20_000)).with_id(format!("m{i}"))).collect();
    let (mut cut_short, mut got_through) = (0, 0);
    for (attempt, deadline_ms) in [1u64, 1, 1, 2, 4, 8, 16, 32, 64, 128, 256, 2000].into_iter().enumerate() {
        let data = dir.path().join(format!("d{attempt}"));
        let config = StoreConfig::builtin(Builtin::Filesystem, &data);
        let setup = shared_runtime()?.open_store(config.clone()).await?;
        setup.open(&scope(), "c", ConversationMeta::default()).await?;
        let limits = Limits { call_timeout: Duration::from_millis(deadline_ms), ..fast_restarts() };
        let store = shared_runtime()?.open_store(config.with_limits(limits)).await?;
        let result = store.append(&scope(), "c", batch.clone(), None).await;
        let stored = all(&setup, "c").await?;
        check_contiguous(&stored, "after the deadline")?;
        match result {
            Ok(out) => {
                ensure!(out.stored == 300 && stored.len() == 300, "acknowledged but {} stored", stored.len());
                got_through += 1;
            }
            // Cut short: nothing of the batch.
            Err(Error::Timeout { .. }) if stored.is_empty() => cut_short += 1,
            // Cut after the write was durable (a lost acknowledgment): all of it,
            // and a retry stores nothing twice.
            Err(Error::Timeout { .. }) if stored.len() == 300 => {
                let retry = setup.append(&scope(), "c", batch.clone(), None).await?;
                ensure!(retry.stored == 0, "a retry after a lost acknowledgment stored {}", retry.stored);
            }
            Err(Error::Timeout { .. }) => {
                bail!("deadline {deadline_ms} ms: timed out with {} of 300 stored", stored.len())
            }
            Err(e) => bail!("deadline {deadline_ms} ms: {e}"),
        }
        // Whatever happened, the next writer continues cleanly after it.
        let next = setup.append(&scope(), "c", vec![text("next")], None).await?;
        ensure!(next.seqs == [stored.len() as u64 + 1], "deadline {deadline_ms} ms: the next append {next:?}");
    }
    println!("{cut_short} writes cut short by their deadline, {got_through} got through");
    ensure!(cut_short >= 1, "no deadline cut a write short: the all-or-nothing check above proved nothing");
    ensure!(got_through >= 1, "no write got through even with a 2 s deadline");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_call_completes_before_the_next_one_on_its_conversation() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path())).await?;
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    // The first append stalls inside the adapter (at its first statement: the
    // SQLite adapter may send the whole append as one); its caller gives up at once.
    store.inject_sql_fault(0, SqlFault::Stall(Duration::from_millis(400)))?;
    let batch = |p: &str| (0..3).map(|i| text(format!("{p}{i}"))).collect::<Vec<_>>();
    let first = tokio::time::timeout(Duration::from_millis(50), store.append(&scope(), "c", batch("a"), None)).await;
    ensure!(first.is_err(), "the first call should have been given up by its caller: {first:?}");
    // The next call on the conversation waits for the first to finish, not overlap it.
    let second = store.append(&scope(), "c", batch("b"), None).await?;
    ensure!(second.seqs == [4, 5, 6], "the given-up append still completes first: {:?}", second.seqs);
    let ids: Vec<String> = all(&store, "c").await?.into_iter().map(|m| m.id).collect();
    ensure!(ids == ["a0", "a1", "a2", "b0", "b1", "b2"], "{ids:?}");
    Ok(())
}

const QUEUE: u32 = 4;

/// Holds the store's only instance with a call stalled inside the adapter, runs
/// `n` concurrent `info` calls on missing conversations, each given up by its
/// caller after `patience` (`None`: waited for), and returns their results.
async fn queue_behind_a_stall(
    store: &Store,
    round: usize,
    n: usize,
    patience: Option<Duration>,
) -> anyhow::Result<Vec<Option<Result<ConversationInfo, Error>>>> {
    let calls = store.stats().calls;
    store.inject_sql_fault(0, SqlFault::Stall(Duration::from_millis(600)))?;
    let blocker = tokio::spawn({
        let store = store.clone();
        async move { store.info(&scope(), "c").await }
    });
    let started = Instant::now();
    while store.stats().calls == calls {
        ensure!(started.elapsed() < Duration::from_secs(10), "the blocking call never reached the adapter");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let waiters: Vec<_> = (0..n)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let (scope, id) = (scope(), format!("missing-{round}-{i}"));
                let call = store.info(&scope, &id);
                match patience {
                    Some(patience) => tokio::time::timeout(patience, call).await.ok(),
                    None => Some(call.await),
                }
            })
        })
        .collect();
    let mut results = Vec::new();
    for waiter in waiters {
        results.push(waiter.await?);
    }
    // Callers that wait for their answer queue behind the blocking call; callers
    // that give up must have done so while it still held the instance.
    ensure!(
        patience.is_none() || !blocker.is_finished(),
        "round {round}: the blocking call ended before the callers gave up: this proves nothing"
    );
    ensure!(blocker.await?.is_ok_and(|info| info.message_count == 0), "the blocking call itself must succeed");
    Ok(results)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn callers_that_give_up_while_queued_leave_the_queue_as_they_found_it() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { instances: 1, max_waiting_calls: QUEUE, ..Limits::default() };
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    for round in 0..3 {
        // Six callers queue behind the stalled call and give up after 50 ms: four
        // fit in the queue (and time out), two are refused at once.
        let base = store.stats().calls;
        let results = queue_behind_a_stall(&store, round, 6, Some(Duration::from_millis(50))).await?;
        let (mut gave_up, mut overloaded) = (0, 0);
        for result in results {
            match result {
                None => gave_up += 1,
                Some(Err(Error::Overloaded { message, .. })) => {
                    ensure!(message.contains("4 calls are already waiting"), "{message}");
                    overloaded += 1;
                }
                Some(other) => bail!("round {round}: a queued call must time out or be refused: {other:?}"),
            }
        }
        ensure!((gave_up, overloaded) == (4, 2), "round {round}: {gave_up} gave up, {overloaded} refused");
        // The calls given up still run to the end (each operation is a task of its
        // own); once they have, the queue is empty again. The blocking call and
        // the four queued ones reach the adapter; the two refused never do.
        let started = Instant::now();
        while store.stats().calls < base + 5 {
            ensure!(started.elapsed() < Duration::from_secs(10), "round {round}: the given-up calls never ran");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // ...and have finished: a call queued behind them (the queue is first come,
        // first served) returns after them, so none of them takes the stall the
        // next round arms for its own blocking call.
        store.info(&scope(), "c").await.context("a call behind the given-up ones")?;
    }
    // A queue holding leaked slots would refuse more than one of five callers.
    let base = store.stats().calls;
    let results = queue_behind_a_stall(&store, 9, QUEUE as usize + 1, None).await?;
    let mut outcomes: Vec<&str> = results
        .iter()
        .map(|r| match r {
            Some(Err(Error::NotFound)) => "served",
            Some(Err(Error::Overloaded { .. })) => "refused",
            _ => "other",
        })
        .collect();
    outcomes.sort_unstable();
    ensure!(outcomes == ["refused", "served", "served", "served", "served"], "{results:?}");
    ensure!(store.stats().calls == base + 5, "the refused call never reached the adapter: {:?}", store.stats());
    ensure!(store.health().status == HealthStatus::Healthy, "{:?}", store.health());
    let info = store.info(&scope(), "c").await.context("a call after the queue emptied")?;
    ensure!(info.message_count == 0);
    Ok(())
}

/// An append that creates its conversation on the way (`append_creating`), with
/// a SQL error struck at statement 0, 1, 2, …. The conversation's commit does not
/// wait for a flush of its own (the append's flush covers it, or, when the
/// append fails, one made before the error returns). Whatever the fault hits, the
/// store then holds nothing, the conversation alone, or the conversation with its
/// message; and the same call again stores the message exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_that_creates_its_conversation_leaves_a_state_a_retry_completes() -> anyhow::Result<()> {
    for limits in [fast_restarts(), adapter_statements()] {
        let plans = limits.append_plans;
        creating_under_faults(limits).await.with_context(|| format!("append plans: {plans}"))?;
    }
    Ok(())
}

async fn creating_under_faults(limits: Limits) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits);
    let store = shared_runtime()?.open_store(config).await?;
    let (mut failed, mut created_alone) = (0, 0);
    let scope = scope();
    for k in 0..24 {
        let id = format!("c{k}");
        let call = || store.append_creating(&scope, &id, ConversationMeta::default(), vec![text(format!("m{k}"))]);
        store.inject_sql_fault(k, SqlFault::Error)?;
        let result = call().await;
        store.disarm_sql_fault();
        if result.is_err() {
            failed += 1;
            match store.info(&scope, &id).await {
                Err(Error::NotFound) => {}
                Ok(info) => {
                    let stored = all(&store, &id).await?.len();
                    ensure!(stored as u64 == info.last_seq, "fault at {k}: {stored} messages, head {info:?}");
                    created_alone += usize::from(stored == 0);
                }
                Err(e) => bail!("fault at {k}: reading the conversation back failed: {e}"),
            }
        }
        let retry = call().await.with_context(|| format!("retry after a fault at {k}"))?;
        let stored = all(&store, &id).await?;
        ensure!(stored.len() == 1 && retry.seqs == [1], "fault at {k}: {} messages after the retry", stored.len());
    }
    ensure!(failed >= 2, "only {failed} faults failed the call");
    ensure!(created_alone >= 1, "no fault fell between the conversation's commit and the append's");
    Ok(())
}

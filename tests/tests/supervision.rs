//! Supervision of an adapter, observed through its counters and health with the
//! `hostile` fixture (conversation id `trap` panics, `loop` spins past the
//! deadline, `memory-bomb` hits the memory cap; `info` is always answered with
//! `unsupported`, a call the adapter completes).
//!
//! - Every call that reaches the adapter is counted once in `calls`; `errors`
//!   counts the calls the sandbox ended (trap, timeout, memory cap), not the
//!   errors an adapter answers; each failure discards its instance, and the
//!   replacement counts as a restart and an instantiation.
//! - After `restart_budget` consecutive failures the breaker opens: calls are
//!   refused (counted in `refused`) without reaching the adapter; after the
//!   cool-down exactly one call goes through as a probe, however many callers
//!   are waiting; a failed probe re-opens the breaker for a full cool-down, a
//!   completed one closes it and the budget starts again.
//!
//! The growth and cap of the restart back-off are timed in `sandbox.rs`.

mod support;

use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use stowage::{
    AdapterSource, Builtin, Capability, ConversationInfo, ConversationMeta, Error, Grants, HealthStatus, Limits, Store,
    StoreConfig, StoreStats,
};
use stowage_tests::{fixture, shared_runtime};
use support::scope;

async fn hostile_store(dir: &std::path::Path, limits: Limits) -> anyhow::Result<Store> {
    let config = StoreConfig::new("hostile", AdapterSource::File(fixture("hostile")), dir.join("data"))
        .with_grants(Grants::of(&[Capability::Filesystem]))
        .with_limits(limits);
    Ok(shared_runtime()?.open_store(config).await?)
}

async fn open(store: &Store, id: &str) -> Result<ConversationInfo, Error> {
    store.open(&scope(), id, ConversationMeta::default()).await
}

/// A call the adapter completes: it answers `info` with `unsupported`.
async fn answered(store: &Store) -> anyhow::Result<()> {
    match store.info(&scope(), "ok").await {
        Err(Error::Unsupported(reason)) if reason.contains("hostile") => Ok(()),
        other => bail!("the hostile fixture answers info with unsupported, got {other:?}"),
    }
}

/// Checks the counters, also as `health()` reports them.
fn counters(store: &Store, want: StoreStats, after: &str) -> anyhow::Result<()> {
    let stats = store.stats();
    ensure!(stats == want, "after {after}: counters {stats:?}, want {want:?}");
    ensure!(store.health().stats == want, "after {after}: health() disagrees: {:?}", store.health());
    Ok(())
}

fn degraded(store: &Store, failures: u32, cause: &str) -> anyhow::Result<()> {
    match store.health().status {
        HealthStatus::Degraded { consecutive_failures, last_error } if consecutive_failures == failures => {
            ensure!(last_error.contains(cause), "the last error should mention {cause:?}: {last_error}");
            Ok(())
        }
        other => bail!("expected degraded after {failures} failure(s), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_failure_and_restart_is_counted_once() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits {
        instances: 1,
        memory_bytes: 16 << 20,
        call_timeout: Duration::from_millis(300),
        restart_budget: 100,
        restart_backoff_ms: 1,
        max_restart_backoff_ms: 1,
        ..Limits::default()
    };
    let store = hostile_store(dir.path(), limits).await?;
    let mut want = StoreStats { instantiations: 1, ..StoreStats::default() };
    counters(&store, want.clone(), "opening (one warm instance)")?;
    answered(&store).await?;
    answered(&store).await?;
    want.calls += 2;
    counters(&store, want.clone(), "two answered calls on the warm instance")?;
    // An answer the host rejects is the caller's error, not an adapter failure.
    match open(&store, "ok").await {
        Err(Error::ContractViolation { message, .. }) => {
            ensure!(message.contains("messages with last seq"), "{message}")
        }
        other => bail!("the hostile fixture's open reports a bad count: {other:?}"),
    }
    want.calls += 1;
    counters(&store, want.clone(), "a contract violation")?;
    ensure!(store.health().status == HealthStatus::Healthy, "{:?}", store.health());

    for (id, cause) in [("trap", "trapped"), ("loop", "deadline"), ("memory-bomb", "memory limit")] {
        let result = open(&store, id).await;
        match (id, &result) {
            ("trap", Err(Error::Trap { .. })) => want.traps += 1,
            ("loop", Err(Error::Timeout { .. })) => want.timeouts += 1,
            ("memory-bomb", Err(Error::MemoryLimit { .. })) => want.memory_limit_hits += 1,
            _ => bail!("`{id}` should fail with {cause}: {result:?}"),
        }
        want.calls += 1;
        want.errors += 1;
        counters(&store, want.clone(), id)?;
        degraded(&store, 1, cause)?;
        // The failed instance was discarded: the next call runs on a replacement.
        answered(&store).await?;
        want.calls += 1;
        want.instantiations += 1;
        want.restarts += 1;
        counters(&store, want.clone(), &format!("the call after `{id}`"))?;
        ensure!(store.health().status == HealthStatus::Healthy, "a completed call heals: {:?}", store.health());
    }
    Ok(())
}

/// Polls health until the cool-down has passed.
async fn cooled_down(store: &Store) -> anyhow::Result<()> {
    let started = Instant::now();
    while let HealthStatus::Unhealthy { retry_in_ms, .. } = store.health().status {
        if retry_in_ms == 0 {
            return Ok(());
        }
        ensure!(started.elapsed() < Duration::from_secs(30), "the cool-down never ends: {:?}", store.health());
        tokio::time::sleep(Duration::from_millis(retry_in_ms.min(20))).await;
    }
    bail!("expected an unhealthy store waiting out its cool-down, got {:?}", store.health())
}

const COOLDOWN_MS: u64 = 400;

fn breaker_limits(budget: u32) -> Limits {
    Limits {
        instances: 4,
        call_timeout: Duration::from_millis(1000),
        restart_budget: budget,
        restart_backoff_ms: 1,
        max_restart_backoff_ms: 1,
        unhealthy_cooldown_ms: COOLDOWN_MS,
        ..Limits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_probe_goes_through_after_the_cool_down_and_its_failure_reopens_the_breaker() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = hostile_store(dir.path(), breaker_limits(2)).await?;
    for _ in 0..2 {
        ensure!(matches!(open(&store, "trap").await, Err(Error::Trap { .. })));
    }
    match open(&store, "ok").await {
        Err(Error::Unhealthy { last_error, .. }) => ensure!(last_error.contains("trapped"), "{last_error}"),
        other => bail!("an open breaker refuses calls: {other:?}"),
    }
    let mut want = StoreStats {
        calls: 2,
        errors: 2,
        traps: 2,
        instantiations: 2,
        restarts: 1,
        refused: 1,
        ..StoreStats::default()
    };
    counters(&store, want.clone(), "tripping the breaker")?;

    // Eight callers after the cool-down: one probe spins to its deadline, the
    // seven others arrive while it runs and are refused.
    cooled_down(&store).await?;
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { open(&store, "loop").await })
        })
        .collect();
    let (mut probes, mut refused) = (0, 0);
    for caller in callers {
        match caller.await? {
            Err(Error::Timeout { .. }) => probes += 1,
            Err(Error::Unhealthy { .. }) => refused += 1,
            other => bail!("a caller must be the probe or refused: {other:?}"),
        }
    }
    let probe_failed = Instant::now();
    ensure!((probes, refused) == (1, 7), "{probes} probes went through, {refused} refused");
    want.calls += 1;
    want.errors += 1;
    want.timeouts += 1;
    want.instantiations += 1;
    want.restarts += 1;
    want.refused += 7;
    counters(&store, want.clone(), "the probe")?;

    // The failed probe reopened the breaker for a whole cool-down.
    match store.health().status {
        HealthStatus::Unhealthy { consecutive_failures: 3, last_error, retry_in_ms } => {
            ensure!(last_error.contains("deadline"), "{last_error}");
            let left = COOLDOWN_MS.saturating_sub(probe_failed.elapsed().as_millis() as u64);
            ensure!(retry_in_ms + 50 >= left, "a full cool-down again: retry in {retry_in_ms} ms, want about {left}");
        }
        other => bail!("a failed probe must reopen the breaker: {other:?}"),
    }
    ensure!(matches!(open(&store, "ok").await, Err(Error::Unhealthy { .. })), "refused again");
    want.refused += 1;

    // The next probe completes: the breaker closes and calls flow.
    cooled_down(&store).await?;
    answered(&store).await?;
    ensure!(store.health().status == HealthStatus::Healthy, "{:?}", store.health());
    answered(&store).await?;
    // The completed probe ran on a replacement for the probe that timed out.
    want.calls += 2;
    want.instantiations += 1;
    want.restarts += 1;
    counters(&store, want, "a completed probe")?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_probe_closes_the_breaker_and_the_budget_starts_again() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = hostile_store(dir.path(), breaker_limits(3)).await?;
    for _ in 0..3 {
        ensure!(matches!(open(&store, "trap").await, Err(Error::Trap { .. })));
    }
    ensure!(matches!(store.health().status, HealthStatus::Unhealthy { consecutive_failures: 3, .. }));
    cooled_down(&store).await?;
    answered(&store).await?;
    ensure!(store.health().status == HealthStatus::Healthy, "the probe completed: {:?}", store.health());
    // Failures count from zero again: two traps leave the store degraded, the third trips it.
    for failures in 1..=2 {
        ensure!(matches!(open(&store, "trap").await, Err(Error::Trap { .. })));
        degraded(&store, failures, "trapped")?;
    }
    answered(&store).await?;
    ensure!(store.health().status == HealthStatus::Healthy, "a completed call resets the count: {:?}", store.health());
    for _ in 0..3 {
        ensure!(matches!(open(&store, "trap").await, Err(Error::Trap { .. })));
    }
    ensure!(matches!(store.health().status, HealthStatus::Unhealthy { consecutive_failures: 3, .. }));
    // Ten calls, eight of them traps. A trap's replacement is created by the call
    // after it, unless that call found an idle instance: the warm one, and the
    // ones the two answered calls left idle, served three of the traps.
    let want = StoreStats { calls: 10, errors: 8, traps: 8, instantiations: 8, restarts: 7, ..StoreStats::default() };
    counters(&store, want, "three rounds of traps")?;
    Ok(())
}

/// A statement an adapter sends that never ends (here the SQL adapter's
/// conversations table, replaced beside the host by a view that counts for
/// ever) runs in the host, where the epoch deadline does not reach: SQLite
/// interrupts it at the call's deadline, the call times out as a spinning
/// adapter's does, its instance is discarded, and the host keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sql_statement_that_never_ends_times_its_call_out_and_the_host_keeps_serving() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let limits = Limits {
        call_timeout: Duration::from_millis(300),
        restart_backoff_ms: 1,
        max_restart_backoff_ms: 1,
        ..Limits::default()
    };
    let config = StoreConfig::builtin(Builtin::Sqlite, &data).with_limits(limits);
    let store = shared_runtime()?.open_store(config).await?;
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    let db = rusqlite::Connection::open(data.join("host").join("sql.sqlite3"))?;
    db.busy_timeout(Duration::from_secs(5))?;
    db.execute_batch(
        "ALTER TABLE stowage_conversations RENAME TO kept; \
         CREATE VIEW stowage_conversations AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
         SELECT * FROM kept WHERE (SELECT max(i) FROM n) > 0",
    )?;
    // Bounded, so that a statement never interrupted fails the test instead of hanging it.
    let info = tokio::time::timeout(Duration::from_secs(120), store.info(&scope(), "c")).await;
    ensure!(matches!(info, Ok(Err(Error::Timeout { .. }))), "expected a timeout, got {info:?}");
    ensure!(store.stats().timeouts >= 1, "{:?}", store.stats());
    db.execute_batch("DROP VIEW stowage_conversations; ALTER TABLE kept RENAME TO stowage_conversations")?;
    let info = store.info(&scope(), "c").await?;
    ensure!(info.message_count == 0 && info.id == "c", "{info:?}");
    Ok(())
}

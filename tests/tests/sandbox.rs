//! Hostile and broken adapters: the host reports a clear error, discards the
//! offending instance, keeps serving, and supervises a failing adapter (back-off,
//! restart budget, a half-open circuit breaker with one probe call).
//!
//! The hostile fixture answers `open` by misbehaving as its conversation id says
//! and every other call with `unsupported`: such an answer is a call the adapter
//! served, so `info` is the "good call" here, and `stats().instantiations` tells a
//! fresh instance from a reused one.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use stowage::{
    AdapterSource, Builtin, Capability, ConversationMeta, Error, Grants, HealthStatus, Limits, LoadError, Scope, Store,
    StoreConfig,
};
use stowage_tests::{fixture, shared_runtime};

fn filesystem() -> Grants {
    Grants::of(&[Capability::Filesystem])
}

async fn hostile_store(dir: &Path, limits: Limits, grants: Grants) -> anyhow::Result<Store> {
    let config = StoreConfig::new("hostile", AdapterSource::File(fixture("hostile")), dir.join("data"))
        .with_grants(grants)
        .with_limits(limits);
    Ok(shared_runtime()?.open_store(config).await?)
}

async fn open(store: &Store, id: &str) -> Result<stowage::ConversationInfo, Error> {
    store.open(&Scope::new("t", "u"), id, ConversationMeta::default()).await
}

/// A call the adapter serves without failing (it answers `unsupported`).
async fn good_call(store: &Store) -> anyhow::Result<()> {
    match store.info(&Scope::new("t", "u"), "ok").await {
        Err(Error::Unsupported(reason)) => ensure!(reason.contains("hostile"), "{reason}"),
        other => bail!("the hostile fixture answers info with unsupported, got {other:?}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_hits_the_deadline_and_the_host_keeps_serving() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { call_timeout: Duration::from_millis(300), instances: 1, ..Limits::default() };
    let store = hostile_store(dir.path(), limits, filesystem()).await?;
    good_call(&store).await?;
    good_call(&store).await?;
    ensure!(store.stats().instantiations == 1, "the warm instance is reused between good calls: {:?}", store.stats());
    match open(&store, "loop").await {
        Err(Error::Timeout { deadline, .. }) => ensure!(deadline == Duration::from_millis(300)),
        other => bail!("expected a timeout, got {other:?}"),
    }
    good_call(&store).await?;
    let stats = store.stats();
    ensure!(
        stats.timeouts == 1 && stats.instantiations == 2,
        "after a timeout the next call gets a fresh instance: {stats:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_bomb_is_capped() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { memory_bytes: 32 << 20, instances: 1, ..Limits::default() };
    let store = hostile_store(dir.path(), limits, filesystem()).await?;
    match open(&store, "memory-bomb").await {
        Err(Error::MemoryLimit { limit, .. }) => ensure!(limit == 32 << 20),
        other => bail!("expected the memory limit, got {other:?}"),
    }
    good_call(&store).await?;
    let stats = store.stats();
    ensure!(stats.memory_limit_hits == 1 && stats.instantiations == 2, "fresh instance after the bomb: {stats:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_discards_the_instance() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { instances: 1, ..Limits::default() };
    let store = hostile_store(dir.path(), limits, filesystem()).await?;
    good_call(&store).await?;
    match open(&store, "trap").await {
        Err(Error::Trap { message, .. }) => ensure!(message.contains("unreachable"), "{message}"),
        other => bail!("expected a trap, got {other:?}"),
    }
    good_call(&store).await?;
    let stats = store.stats();
    ensure!(stats.traps == 1 && stats.instantiations == 2, "fresh instance after the trap: {stats:?}");
    Ok(())
}

/// Every entry under `dir`, links not followed, with whether it is a symlink.
fn walk(dir: &Path, out: &mut Vec<(std::path::PathBuf, bool)>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let meta = std::fs::symlink_metadata(&path)?;
        out.push((path.clone(), meta.file_type().is_symlink()));
        if meta.is_dir() {
            walk(&path, out)?;
        }
    }
    Ok(())
}

/// Every link attempt of the hostile fixture (guest-adapters/testing/hostile/src/links.rs),
/// for `escape:<secret>`: symlinks out of /data, hard links, and symlinks in place
/// of the database file name earlier hosts kept in /data.
fn link_attempts(secret: &Path) -> Vec<String> {
    let secret = secret.display();
    let mut attempts: Vec<String> = [
        ("hostile-link-up", "../.."),
        ("hostile-link-secret", "../secret.txt"),
        ("hostile-link-deep", "../../../../../../etc/passwd"),
        ("hostile-link-etc", "/etc/passwd"),
        ("hostile-link-sibling", "../sibling/stowage.sqlite3"),
        ("../hostile-link-outside", "data"),
    ]
    .iter()
    .map(|(name, target)| format!("symlink /data/{name} -> {target}"))
    .collect();
    attempts.push(format!("symlink /data/hostile-link-absolute -> {secret}"));
    for (name, source) in [
        ("hostile-hardlink-probe", "hostile-probe.txt".to_owned()),
        ("../hostile-hardlink-outside", "hostile-probe.txt".to_owned()),
        ("hostile-hardlink-secret", "../secret.txt".to_owned()),
        ("hostile-hardlink-absolute", secret.to_string()),
        ("hostile-hardlink-database", "stowage.sqlite3".to_owned()),
    ] {
        attempts.push(format!("hard link /data/{name} to `{source}`"));
    }
    for target in ["../sibling/stowage.sqlite3".to_owned(), "../..".to_owned(), secret.to_string()] {
        attempts.push(format!("symlink /data/stowage.sqlite3 -> {target}"));
    }
    attempts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_cannot_escape_its_data_directory() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "do not read")?;
    let store = hostile_store(dir.path(), Limits::default(), filesystem()).await?;
    let target = format!("escape:{}", secret.display());
    let report = match open(&store, &target).await {
        Err(Error::AccessDenied(report)) => report,
        Err(Error::Storage(report)) if report.starts_with("ESCAPED") => bail!("sandbox escape: {report}"),
        other => bail!("unexpected outcome {other:?}"),
    };
    println!("escape attempts refused: {report}");
    ensure!(report.contains(&format!("read {}", secret.display())), "the fixture reports what it tried: {report}");
    for attempt in link_attempts(&secret) {
        ensure!(report.contains(&format!("{attempt}: not-permitted")), "`{attempt}` was not refused: {report}");
    }
    ensure!(!report.contains("LEFT BEHIND"), "{report}");
    let mut entries = Vec::new();
    walk(dir.path(), &mut entries)?;
    let links: Vec<_> = entries.iter().filter(|(_, link)| *link).collect();
    ensure!(links.is_empty(), "links left behind: {links:?}");
    let leftovers: Vec<_> =
        entries.iter().filter(|(p, _)| p.to_string_lossy().contains("hostile")).map(|(p, _)| p).collect();
    ensure!(leftovers.is_empty(), "files left behind: {leftovers:?}");
    ensure!(std::fs::read_dir(dir.path().join("data/adapter"))?.next().is_none(), "/data is not empty");
    ensure!(std::fs::read_to_string(&secret)? == "do not read", "the secret changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ungranted_capabilities_fail_the_load_and_name_the_capability() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = shared_runtime()?;
    for (builtin, capability) in [(Builtin::Sqlite, "sql"), (Builtin::Filesystem, "filesystem")] {
        let config = StoreConfig::new("x", AdapterSource::Builtin(builtin), dir.path()).with_grants(Grants::NONE);
        match runtime.open_store(config).await {
            Err(err @ Error::Load(LoadError::CapabilityNotGranted { capability: c, .. })) => {
                ensure!(c == capability, "named {c}, want {capability}");
                ensure!(err.to_string().contains(capability), "message: {err}");
            }
            Err(other) => bail!("{builtin:?}: wrong error {other}"),
            Ok(_) => bail!("{builtin:?} loaded without the {capability} grant"),
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_that_are_not_adapters_are_refused_clearly() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = shared_runtime()?;
    let cases: [(&str, Vec<u8>); 4] = [
        ("core-module.wasm", b"\0asm\x01\0\0\0".to_vec()),
        ("text.wasm", b"hello, not wasm".to_vec()),
        ("empty-component.wasm", b"\0asm\x0d\0\x01\0".to_vec()),
        ("truncated-component.wasm", Builtin::Null.wasm()[..2000].to_vec()),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes)?;
        let config = StoreConfig::new(name, AdapterSource::File(path), dir.path().join("data"));
        let err = runtime.open_store(config).await.err().with_context(|| format!("{name} loaded"))?;
        let message = err.to_string();
        let ok = match name {
            "core-module.wasm" => {
                matches!(err, Error::Load(LoadError::NotAComponent { .. }))
                    && message.contains("core WebAssembly module")
            }
            "text.wasm" => matches!(err, Error::Load(LoadError::NotAComponent { .. })),
            "empty-component.wasm" => {
                matches!(err, Error::Load(LoadError::MissingExport { .. }))
                    && message.contains("stowage:store/conversation-store@0.2.0")
                    && message.contains("0.1.0 and 0.2.0")
            }
            _ => matches!(err, Error::Load(LoadError::Compile { .. })),
        };
        ensure!(ok, "{name}: unexpected error {err:?}");
    }
    let missing =
        StoreConfig::new("missing", AdapterSource::File(dir.path().join("nope.wasm")), dir.path().join("data"));
    ensure!(matches!(runtime.open_store(missing).await, Err(Error::Load(LoadError::Read { .. }))), "missing file");
    Ok(())
}

/// How long `open(id)` took, and its error (every call here is meant to fail).
async fn timed_failure(store: &Store, id: &str) -> anyhow::Result<(Duration, Error)> {
    let started = Instant::now();
    match open(store, id).await {
        Ok(info) => bail!("`{id}` succeeded: {info:?}"),
        Err(e) => Ok((started.elapsed(), e)),
    }
}

const BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_millis(500);
const BUDGET: u32 = 7;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_keeps_trapping_is_restarted_with_growing_capped_back_off_then_reported_unhealthy()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits {
        instances: 1,
        restart_budget: BUDGET,
        restart_backoff_ms: BACKOFF.as_millis() as u64,
        max_restart_backoff_ms: MAX_BACKOFF.as_millis() as u64,
        unhealthy_cooldown_ms: 300,
        ..Limits::default()
    };
    let store = hostile_store(dir.path(), limits, filesystem()).await?;
    // Each trap discards the instance; the next call waits out the back-off before
    // the replacement is instantiated: back-off × consecutive failures, capped.
    let mut gaps = Vec::new();
    for attempt in 0..BUDGET {
        let (gap, error) = timed_failure(&store, "trap").await?;
        ensure!(matches!(error, Error::Trap { .. }), "attempt {attempt} should trap: {error:?}");
        gaps.push(gap);
        if attempt + 1 < BUDGET {
            ensure!(
                matches!(store.health().status, HealthStatus::Degraded { consecutive_failures, .. } if consecutive_failures == attempt + 1),
                "degraded after {} failures: {:?}",
                attempt + 1,
                store.health()
            );
        }
    }
    println!("gaps between a failure and the next call's end: {gaps:?}");
    for (n, gap) in gaps.iter().enumerate().skip(1) {
        // Call n follows n consecutive failures.
        let want = BACKOFF.saturating_mul(n as u32).min(MAX_BACKOFF);
        ensure!(*gap >= want, "call {n} waited {gap:?}, less than its back-off {want:?}");
    }
    ensure!(gaps[2] >= BACKOFF * 2 && gaps[3] >= MAX_BACKOFF, "the back-off grows: {gaps:?}");
    // Uncapped, the last wait would be 6 × 200 ms = 1.2 s; the cap holds it at 0.5 s.
    let last = gaps[gaps.len() - 1];
    ensure!(last < MAX_BACKOFF * 2, "the back-off is capped at {MAX_BACKOFF:?}, the last call took {last:?}");

    let health = store.health();
    match &health.status {
        HealthStatus::Unhealthy { consecutive_failures, last_error, retry_in_ms } => {
            ensure!(*consecutive_failures == BUDGET && last_error.contains("trapped"), "{last_error}");
            ensure!(*retry_in_ms <= 300, "retry in {retry_in_ms} ms");
        }
        other => bail!("after the restart budget the store must be unhealthy: {other:?}"),
    }
    // Refused at once, naming the last error, instead of spinning.
    match open(&store, "ok").await {
        Err(Error::Unhealthy { last_error, .. }) => ensure!(last_error.contains("trapped")),
        other => bail!("an unhealthy store must refuse calls: {other:?}"),
    }
    let stats = store.stats();
    let want = stowage::StoreStats {
        calls: u64::from(BUDGET),
        errors: u64::from(BUDGET),
        traps: u64::from(BUDGET),
        instantiations: u64::from(BUDGET),
        restarts: u64::from(BUDGET) - 1,
        refused: 1,
        ..stowage::StoreStats::default()
    };
    ensure!(stats == want, "counters {stats:?}, want {want:?}");
    let health = store.health();
    ensure!(health.stats == want && health.contract_version == "0.2.0", "health() counters {health:?}");
    Ok(())
}

/// Drives the store into the open breaker: `BUDGET` traps without back-off worth waiting for.
async fn tripped_store(dir: &Path, cooldown_ms: u64, call_timeout: Duration) -> anyhow::Result<Store> {
    let limits = Limits {
        instances: 1,
        restart_budget: 2,
        restart_backoff_ms: 1,
        max_restart_backoff_ms: 1,
        unhealthy_cooldown_ms: cooldown_ms,
        call_timeout,
        ..Limits::default()
    };
    let store = hostile_store(dir, limits, filesystem()).await?;
    for _ in 0..2 {
        ensure!(matches!(open(&store, "trap").await, Err(Error::Trap { .. })));
    }
    ensure!(matches!(store.health().status, HealthStatus::Unhealthy { .. }), "{:?}", store.health());
    Ok(store)
}

/// Waits until the cool-down has passed (the breaker lets a probe through).
async fn cool_down(store: &Store) -> anyhow::Result<()> {
    if let HealthStatus::Unhealthy { retry_in_ms, .. } = store.health().status {
        tokio::time::sleep(Duration::from_millis(retry_in_ms + 20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_cool_down_one_probe_goes_through_and_its_failure_rearms_the_breaker() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = tripped_store(dir.path(), 300, Duration::from_millis(1500)).await?;
    cool_down(&store).await?;
    // The probe spins until its deadline; while it runs, every other call is refused.
    let calls_before = store.stats().calls;
    let probe = tokio::spawn({
        let store = store.clone();
        async move { open(&store, "loop").await }
    });
    let waited = Instant::now();
    while store.stats().calls == calls_before {
        ensure!(waited.elapsed() < Duration::from_secs(10), "the probe never reached the adapter");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    match open(&store, "ok").await {
        Err(Error::Unhealthy { .. }) => {}
        other => bail!("a second call during the probe must be refused: {other:?}"),
    }
    ensure!(!probe.is_finished(), "the probe ended before the second call was refused: the check proves nothing");
    match probe.await? {
        Err(Error::Timeout { .. }) => {}
        other => bail!("the probe should time out: {other:?}"),
    }
    // The failed probe opened the breaker again for a full cool-down.
    match store.health().status {
        HealthStatus::Unhealthy { consecutive_failures: 3, last_error, .. } => {
            ensure!(last_error.contains("deadline"), "{last_error}")
        }
        other => bail!("a failed probe must re-arm the breaker: {other:?}"),
    }
    ensure!(matches!(open(&store, "ok").await, Err(Error::Unhealthy { .. })), "refused again after the failed probe");
    let stats = store.stats();
    ensure!(stats.calls == 3 && stats.timeouts == 1 && stats.traps == 2 && stats.refused == 2, "{stats:?}");

    // The next probe is served: the adapter is healthy again and calls flow.
    cool_down(&store).await?;
    good_call(&store).await?;
    ensure!(store.health().status == HealthStatus::Healthy, "{:?}", store.health());
    good_call(&store).await?;
    let stats = store.stats();
    ensure!(stats.calls == 5 && stats.errors == 3 && stats.refused == 2, "{stats:?}");
    Ok(())
}

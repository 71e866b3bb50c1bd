//! Hostile and broken adapters: the host reports a clear error, discards the
//! offending instance and keeps serving.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use stowage::{AdapterSource, Builtin, ConversationMeta, Error, Grants, Limits, LoadError, Scope, Store, StoreConfig};
use stowage_tests::shared_runtime;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(stowage::GUEST_ARTIFACT_DIR).join(format!("stowage_adapter_{name}.wasm"))
}

async fn hostile_store(dir: &std::path::Path, limits: Limits, grants: Grants) -> anyhow::Result<Store> {
    let config = StoreConfig::new("hostile", AdapterSource::File(fixture("hostile")), dir.join("data"))
        .with_grants(grants)
        .with_limits(limits);
    Ok(shared_runtime()?.open_store(config).await?)
}

async fn open(store: &Store, id: &str) -> Result<stowage::ConversationInfo, Error> {
    store.open(&Scope::new("t", "u"), id, ConversationMeta::default()).await
}

/// The hostile fixture counts the calls its instance served in `message_count`.
async fn calls_served_by_instance(store: &Store) -> anyhow::Result<u64> {
    Ok(open(store, "ok").await?.message_count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_hits_the_deadline_and_the_host_keeps_serving() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { call_timeout: Duration::from_millis(300), instances: 1, ..Limits::default() };
    let store = hostile_store(dir.path(), limits, Grants::FILESYSTEM).await?;
    ensure!(calls_served_by_instance(&store).await? == 1, "warm instance");
    ensure!(calls_served_by_instance(&store).await? == 2, "the instance is reused between good calls");
    match open(&store, "loop").await {
        Err(Error::Timeout { deadline, .. }) => ensure!(deadline == Duration::from_millis(300)),
        other => bail!("expected a timeout, got {other:?}"),
    }
    ensure!(calls_served_by_instance(&store).await? == 1, "after a timeout the next call must get a fresh instance");
    let stats = store.stats();
    ensure!(stats.timeouts == 1 && stats.instantiations == 2, "stats {stats:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_bomb_is_capped() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { memory_bytes: 32 << 20, instances: 1, ..Limits::default() };
    let store = hostile_store(dir.path(), limits, Grants::FILESYSTEM).await?;
    match open(&store, "memory-bomb").await {
        Err(Error::MemoryLimit { limit, .. }) => ensure!(limit == 32 << 20),
        other => bail!("expected the memory limit, got {other:?}"),
    }
    ensure!(calls_served_by_instance(&store).await? == 1, "fresh instance after the bomb");
    ensure!(store.stats().memory_limit_hits == 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_discards_the_instance() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { instances: 1, ..Limits::default() };
    let store = hostile_store(dir.path(), limits, Grants::FILESYSTEM).await?;
    calls_served_by_instance(&store).await?;
    match open(&store, "trap").await {
        Err(Error::Trap { message, .. }) => ensure!(!message.is_empty()),
        other => bail!("expected a trap, got {other:?}"),
    }
    ensure!(calls_served_by_instance(&store).await? == 1, "fresh instance after the trap");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_cannot_escape_its_data_directory() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "do not read")?;
    let store = hostile_store(dir.path(), Limits::default(), Grants::FILESYSTEM).await?;
    let target = format!("escape:{}", secret.display());
    match open(&store, &target).await {
        Err(Error::AccessDenied(report)) => {
            ensure!(report.contains("read"), "the fixture reports what it tried: {report}");
            println!("escape attempts refused: {report}");
        }
        Err(Error::Storage(report)) if report.starts_with("ESCAPED") => {
            bail!("sandbox escape: {report}")
        }
        other => bail!("unexpected outcome {other:?}"),
    }
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
                    && message.contains("stowage:store/conversation-store@0.1.0")
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_keeps_trapping_is_restarted_with_back_off_then_reported_unhealthy() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits {
        instances: 1,
        restart_budget: 3,
        restart_backoff_ms: 20,
        unhealthy_cooldown_ms: 300,
        ..Limits::default()
    };
    let store = hostile_store(dir.path(), limits, Grants::FILESYSTEM).await?;
    for attempt in 0..3 {
        ensure!(matches!(open(&store, "trap").await, Err(Error::Trap { .. })), "attempt {attempt} should trap");
    }
    match store.health().status {
        stowage::HealthStatus::Unhealthy { consecutive_failures, last_error, .. } => {
            ensure!(consecutive_failures == 3 && last_error.contains("trapped"), "{last_error}");
        }
        other => bail!("after the restart budget the store must be unhealthy: {other:?}"),
    }
    // Refused at once, naming the last error, instead of spinning.
    match open(&store, "ok").await {
        Err(Error::Unhealthy { last_error, .. }) => ensure!(last_error.contains("trapped")),
        other => bail!("an unhealthy store must refuse calls: {other:?}"),
    }
    let stats = store.stats();
    ensure!(stats.traps == 3 && stats.refused == 1 && stats.restarts >= 2, "{stats:?}");
    // After the cool-down a probe goes through and a good call heals it.
    tokio::time::sleep(Duration::from_millis(350)).await;
    open(&store, "ok").await?;
    ensure!(store.health().status == stowage::HealthStatus::Healthy, "{:?}", store.health());
    Ok(())
}

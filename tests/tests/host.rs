//! Host behaviour that does not depend on the adapter: concurrency, the component
//! cache, configuration checks.

use std::collections::HashSet;

use anyhow::ensure;
use stowage::{
    AdapterSource, Builtin, ConversationMeta, Error, LoadRequest, NewMessage, Role, Runtime, RuntimeConfig, Scope,
    StoreConfig,
};
use stowage_tests::shared_runtime;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_keep_every_conversation_contiguous() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    for builtin in [Builtin::Sqlite, Builtin::Filesystem] {
        let store =
            shared_runtime()?.open_store(StoreConfig::builtin(builtin, dir.path().join(builtin.name()))).await?;
        let scope = Scope::new("t", "u");
        for c in 0..3 {
            store.open(&scope, &format!("c{c}"), ConversationMeta::default()).await?;
        }
        // 6 writers per conversation, 3 conversations, all at once.
        let mut tasks = Vec::new();
        for writer in 0..18 {
            let (store, scope) = (store.clone(), scope.clone());
            tasks.push(tokio::spawn(async move {
                let conversation = format!("c{}", writer % 3);
                for i in 0..10 {
                    let id = format!("w{writer}-{i}");
                    let message = NewMessage::text(Role::User, id.clone()).with_id(id);
                    store.append(&scope, &conversation, vec![message], None).await?;
                }
                anyhow::Ok(())
            }));
        }
        for task in tasks {
            task.await??;
        }
        for c in 0..3 {
            let page = store.load(&scope, &format!("c{c}"), LoadRequest::after(0, 1000)).await?;
            let seqs: Vec<u64> = page.messages.iter().map(|m| m.seq).collect();
            ensure!(seqs == (1..=60).collect::<Vec<_>>(), "{builtin:?} c{c}: seqs {seqs:?}");
            let ids: HashSet<&str> = page.messages.iter().map(|m| m.id.as_str()).collect();
            ensure!(ids.len() == 60, "{builtin:?} c{c}: a message was lost or duplicated");
            // Each writer's own messages stay in its order.
            for writer in (c..18).step_by(3) {
                let mine: Vec<&str> = page
                    .messages
                    .iter()
                    .map(|m| m.id.as_str())
                    .filter(|id| id.starts_with(&format!("w{writer}-")))
                    .collect();
                let want: Vec<String> = (0..10).map(|i| format!("w{writer}-{i}")).collect();
                ensure!(mine == want, "{builtin:?}: writer {writer} reordered");
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiled_adapters_are_cached_on_disk_and_damaged_entries_are_rebuilt() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    let config = || RuntimeConfig { cache_dir: Some(cache.clone()), ..RuntimeConfig::default() };
    let source = AdapterSource::Builtin(Builtin::Null);
    Runtime::new(config())?.inspect(&source, Builtin::Null.grants()).await?;
    let entries: Vec<_> = std::fs::read_dir(&cache)?.filter_map(Result::ok).map(|e| e.path()).collect();
    ensure!(entries.len() == 1, "one artifact expected, found {entries:?}");
    let artifact = &entries[0];
    let name = artifact.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    let report = Runtime::new(config())?.inspect(&source, Builtin::Null.grants()).await?;
    ensure!(name.starts_with(&report.digest), "artifact {name} is not keyed by the component digest");
    // A damaged (or foreign) artifact is never deserialised: it is replaced.
    let mut bytes = std::fs::read(artifact)?;
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(artifact, &bytes)?;
    let store =
        Runtime::new(config())?.open_store(StoreConfig::builtin(Builtin::Null, dir.path().join("data"))).await?;
    store.append(&Scope::default(), "c", vec![NewMessage::text(Role::User, "x")], None).await?;
    ensure!(std::fs::read(artifact)? != bytes, "the damaged artifact was not rewritten");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_store_configuration_is_refused() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = shared_runtime()?;
    let mut config = StoreConfig::builtin(Builtin::Null, dir.path());
    config.limits.memory_bytes = 16 << 40;
    ensure!(matches!(runtime.open_store(config).await, Err(Error::Config(_))), "oversized memory cap accepted");
    let mut config = StoreConfig::builtin(Builtin::Null, dir.path());
    config.limits.instances = 0;
    ensure!(matches!(runtime.open_store(config).await, Err(Error::Config(_))), "zero instances accepted");
    Ok(())
}

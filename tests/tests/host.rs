//! Host behaviour that does not depend on the adapter: concurrency, the component
//! cache, configuration checks. Every test uses its own directories.

use std::collections::HashSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use stowage::{
    AdapterSource, Builtin, ConversationMeta, Error, Grants, Limits, LoadError, LoadRequest, NewMessage, Role, Runtime,
    RuntimeConfig, Scope, SqlFault, StoreConfig,
};
use stowage_tests::{fixture, shared_runtime};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_keep_every_conversation_contiguous() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // Operations as tasks of their own (the default) and on the callers' tasks.
    let on_caller = Runtime::new(RuntimeConfig { ops_on_caller: true, ..RuntimeConfig::default() })?;
    for (mode, runtime) in [("spawned", shared_runtime()?), ("on-caller", on_caller)] {
        for builtin in [Builtin::Sqlite, Builtin::Filesystem] {
            let place = dir.path().join(format!("{mode}-{}", builtin.name()));
            check_writers(runtime.open_store(StoreConfig::builtin(builtin, place)).await?, builtin).await?;
        }
    }
    Ok(())
}

async fn check_writers(store: stowage::Store, builtin: Builtin) -> anyhow::Result<()> {
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
    Ok(())
}

/// A message with its text as id.
fn message(id: &str) -> NewMessage {
    NewMessage::text(Role::User, id).with_id(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_that_another_handle_already_stored_returns_the_original_seqs() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let scope = Scope::new("t", "u");
    for builtin in [Builtin::Sqlite, Builtin::Filesystem] {
        let config = StoreConfig::builtin(builtin, dir.path().join(builtin.name()));
        let one = shared_runtime()?.open_store(config.clone()).await?;
        let other = shared_runtime()?.open_store(config).await?;
        one.open(&scope, "c", ConversationMeta::default()).await?;
        ensure!(one.append(&scope, "c", vec![message("a")], None).await?.seqs == [1]);
        // Another handle on the same data (another host, say) stores a batch...
        let batch = || vec![message("b"), message("c")];
        let first = other.append(&scope, "c", batch(), None).await?;
        ensure!(first.seqs == [2, 3], "{builtin:?}: {first:?}");
        // ...and a retry of it through the first handle, which still numbers from
        // 2, stores nothing new and answers the original seqs.
        let retry = one.append(&scope, "c", batch(), None).await?;
        ensure!(retry.stored == 0 && retry.seqs == [2, 3], "{builtin:?}: {retry:?}");
        ensure!(one.append(&scope, "c", vec![message("d")], None).await?.seqs == [4], "{builtin:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_on_the_callers_task_finishes_when_the_caller_gives_up() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig { ops_on_caller: true, ..RuntimeConfig::default() })?;
    let limits = Limits { restart_backoff_ms: 300, max_restart_backoff_ms: 300, ..Limits::default() };
    let store = runtime.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    let scope = Scope::new("t", "u");
    store.open(&scope, "c", ConversationMeta::default()).await?;

    // An adapter trap: the next call waits out a back-off for a fresh instance.
    store.inject_sql_fault(0, SqlFault::Trap)?;
    ensure!(matches!(store.info(&scope, "c").await, Err(Error::Trap { .. })), "the injected trap");
    // The caller of an append (alone, so run on the caller's task) gives up
    // during that wait...
    let append = store.append(&scope, "c", vec![message("a")], None);
    ensure!(tokio::time::timeout(Duration::from_millis(30), append).await.is_err(), "the append was not cut off");
    // ...and the append still runs to its end, once.
    for _ in 0..300 {
        let messages = store.load(&scope, "c", LoadRequest::after(0, 10)).await?.messages;
        if let [only] = &messages[..] {
            ensure!((only.id.as_str(), only.seq) == ("a", 1), "{only:?}");
            let retry = store.append(&scope, "c", vec![message("a")], None).await?;
            ensure!(retry.stored == 0 && retry.seqs == [1], "a retry stores nothing new: {retry:?}");
            return Ok(());
        }
        ensure!(messages.is_empty(), "{messages:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bail!("the append whose caller gave up never finished")
}

fn cached_runtime(cache: &Path) -> Result<Runtime, Error> {
    Runtime::new(RuntimeConfig { cache_dir: Some(cache.to_path_buf()), ..RuntimeConfig::default() })
}

/// The one artifact in `cache` (temporary files of an interrupted write excluded).
fn only_artifact(cache: &Path) -> anyhow::Result<PathBuf> {
    let entries: Vec<PathBuf> = std::fs::read_dir(cache)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    match &entries[..] {
        [artifact] => Ok(artifact.clone()),
        other => bail!("one artifact expected in {}, found {other:?}", cache.display()),
    }
}

/// (inode, mtime in ns) of a file: a rewrite (write + rename) changes the inode.
fn identity(path: &Path) -> anyhow::Result<(u64, i64)> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    Ok((meta.ino(), meta.mtime() * 1_000_000_000 + meta.mtime_nsec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiled_adapters_are_cached_on_disk_reused_and_damaged_entries_are_rebuilt() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache").join("stowage");
    // A component from a file (shipped adapters come precompiled in the binary).
    let source = AdapterSource::File(fixture("null"));
    let report = cached_runtime(&cache)?.inspect(&source, Grants::NONE).await?;
    ensure!(std::fs::metadata(&cache)?.permissions().mode() & 0o777 == 0o700, "the cache dir is not owner-only");
    let artifact = only_artifact(&cache)?;
    let name = artifact.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    ensure!(name.starts_with(&report.digest), "artifact {name} is not keyed by the component digest");
    ensure!(std::fs::metadata(&artifact)?.permissions().mode() & 0o077 == 0, "the artifact is readable by others");
    let written = identity(&artifact)?;
    let bytes = std::fs::read(&artifact)?;

    // A second runtime (a new engine, empty memory cache) loads the artifact
    // instead of compiling: the file is neither rewritten nor replaced.
    let second = cached_runtime(&cache)?;
    let again = second.inspect(&source, Grants::NONE).await?;
    ensure!(again.digest == report.digest);
    ensure!(identity(&artifact)? == written, "the artifact was rewritten: the second runtime compiled again");
    ensure!(std::fs::read(&artifact)? == bytes, "the artifact changed");
    ensure!(only_artifact(&cache)? == artifact, "a second artifact appeared");

    // A damaged (or foreign) artifact is never deserialised: it is replaced.
    let mut damaged = bytes.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    std::fs::write(&artifact, &damaged)?;
    let store =
        cached_runtime(&cache)?.open_store(StoreConfig::new("null", source.clone(), dir.path().join("data"))).await?;
    let meta = ConversationMeta::default();
    store.append_creating(&Scope::default(), "c", meta, vec![NewMessage::text(Role::User, "x")]).await?;
    ensure!(only_artifact(&cache)? == artifact, "the rebuilt artifact has another name");
    let rebuilt = std::fs::read(&artifact)?;
    ensure!(rebuilt != damaged && !rebuilt.is_empty(), "the damaged artifact was not rewritten");
    // … and the rebuilt one is reused in turn.
    let replaced = identity(&artifact)?;
    cached_runtime(&cache)?.inspect(&source, Grants::NONE).await?;
    ensure!(identity(&artifact)? == replaced, "the rebuilt artifact was not reused");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_dir_other_users_can_write_is_refused() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    for mode in [0o770, 0o707, 0o777] {
        let cache = dir.path().join(format!("cache-{mode:o}"));
        std::fs::create_dir(&cache)?;
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(mode))?;
        match cached_runtime(&cache) {
            Err(Error::Load(LoadError::Cache { path, reason })) => {
                ensure!(path == cache, "names {}", path.display());
                ensure!(reason.contains("writable by other users"), "{reason}");
            }
            Err(other) => bail!("mode {mode:o}: wrong error {other}"),
            Ok(_) => bail!("a cache dir with mode {mode:o} was accepted"),
        }
    }
    // Owner-only (and a group-readable one) is fine.
    for mode in [0o700, 0o750] {
        let cache = dir.path().join(format!("cache-{mode:o}"));
        std::fs::create_dir(&cache)?;
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(mode))?;
        cached_runtime(&cache).with_context(|| format!("mode {mode:o}"))?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_store_configuration_is_refused() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = shared_runtime()?;
    let mut config = StoreConfig::builtin(Builtin::Null, dir.path());
    config.limits.memory_bytes = 16 << 40;
    match runtime.open_store(config).await {
        Err(Error::Config(reason)) => ensure!(reason.contains("memory_bytes"), "{reason}"),
        other => bail!("oversized memory cap accepted: {:?}", other.err()),
    }
    let mut config = StoreConfig::builtin(Builtin::Null, dir.path());
    config.limits.instances = 0;
    match runtime.open_store(config).await {
        Err(Error::Config(reason)) => ensure!(reason.contains("instances"), "{reason}"),
        other => bail!("zero instances accepted: {:?}", other.err()),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_sqlite_store_is_whole_on_disk_when_open_returns() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let config = StoreConfig::builtin(Builtin::Sqlite, &data);
    // Two handles opening the same new store at once (two hosts, say): one
    // database file is made, and both use it.
    let runtime = shared_runtime()?;
    let (one, other) = tokio::join!(runtime.open_store(config.clone()), runtime.open_store(config));
    let (one, other) = (one?, other?);
    let db = stowage::sql_database_path(&data);
    let header = std::fs::read(&db).context("no database file after open")?;
    ensure!(
        header.len() >= 100 && header.starts_with(b"SQLite format 3\0") && header[18] == 2 && header[19] == 2,
        "the database is not in WAL mode before the first call"
    );
    let scope = Scope::new("t", "u");
    one.append_creating(&scope, "c", ConversationMeta::default(), vec![message("a")]).await?;
    ensure!(other.load_all(&scope, "c").await?.len() == 1, "the other handle reads another database");
    one.close().await;
    other.close().await;
    let private = db.parent().context("the database has no directory")?;
    let left: Vec<String> = std::fs::read_dir(private)?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".new"))
        .collect();
    ensure!(left.is_empty(), "temporary database files were left: {left:?}");
    Ok(())
}

/// Bytes of `path`, 0 when it is missing.
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_store_closed_while_its_wal_is_written_ahead_leaves_no_wal() -> anyhow::Result<()> {
    // The host writes the WAL ahead (zeros, on a connection of its own) from
    // the commit that leaves 256 frames in it. Closing right after that commit
    // must still checkpoint the WAL and delete it, at either sync setting, and
    // with a writer alone's flushes on the store's flusher thread.
    let dir = tempfile::tempdir()?;
    let runtime = shared_runtime()?;
    let scope = Scope::new("t", "u");
    let body = "x".repeat(3000);
    let settings = [(stowage::SqlSync::Normal, 0), (stowage::SqlSync::Full, 0), (stowage::SqlSync::Full, 400)];
    for (round, (sync, spin)) in settings.into_iter().cycle().take(6).enumerate() {
        let data = dir.path().join(format!("data-{round}"));
        let mut config = StoreConfig::builtin(Builtin::Sqlite, &data);
        config.sql_sync = sync;
        config.limits.flush_spin_us = spin;
        let store = runtime.open_store(config).await?;
        let db = stowage::sql_database_path(&data);
        let wal = db.with_file_name(format!("{}-wal", db.file_name().and_then(|n| n.to_str()).unwrap_or_default()));
        let mut appended = 0;
        while file_len(&wal) < 256 * 4120 {
            let batch = vec![NewMessage::text(Role::User, body.clone())];
            store.append_creating(&scope, "c", ConversationMeta::default(), batch).await?;
            appended += 1;
            ensure!(appended < 2_000, "the WAL never reached 256 frames ({} bytes)", file_len(&wal));
        }
        store.close().await;
        ensure!(file_len(&wal) == 0, "round {round} ({sync:?}): {} bytes of WAL left after close", file_len(&wal));
        let store = runtime.open_store(StoreConfig::builtin(Builtin::Sqlite, &data)).await?;
        let loaded = store.load_all(&scope, "c").await?.len();
        ensure!(loaded == appended, "round {round}: {loaded} messages after reopening, {appended} appended");
        store.close().await;
    }
    Ok(())
}

/// Closing a runtime closes the stores opened from it that are still open:
/// their later calls, and later opens, fail with `Closed`, and what they stored
/// is there when the store is opened again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_runtime_closes_the_stores_it_opened() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let runtime = cached_runtime(&dir.path().join("cache"))?;
    let sqlite = StoreConfig::builtin(Builtin::Sqlite, dir.path().join("sqlite"));
    let stored = runtime.open_store(sqlite.clone()).await?;
    let null = runtime.open_store(StoreConfig::builtin(Builtin::Null, dir.path().join("null"))).await?;
    // A store no handle keeps any longer is no concern of the close.
    drop(runtime.open_store(StoreConfig::builtin(Builtin::Null, dir.path().join("gone"))).await?);
    let scope = Scope::new("t", "u");
    stored.append_creating(&scope, "c", ConversationMeta::default(), vec![message("a")]).await?;
    let other_handle = runtime.clone();
    other_handle.close().await;
    let closed = |result: Result<(), Error>| matches!(result, Err(Error::Closed { .. }));
    ensure!(
        closed(stored.append(&scope, "c", vec![message("b")], None).await.map(drop)),
        "the SQLite store stays open"
    );
    ensure!(closed(null.info(&scope, "c").await.map(drop)), "the null store stays open");
    ensure!(closed(runtime.open_store(sqlite.clone()).await.map(drop)), "a closed runtime opens a store");
    runtime.close().await;
    let reopened = cached_runtime(&dir.path().join("cache"))?.open_store(sqlite).await?;
    let loaded = reopened.load_all(&scope, "c").await?;
    ensure!(loaded.len() == 1, "{} messages after reopening, not the one stored", loaded.len());
    reopened.close().await;
    Ok(())
}

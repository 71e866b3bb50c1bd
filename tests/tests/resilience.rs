//! Fault injection: hot swaps under load, adapters that trap or time out
//! mid-batch, torn filesystem logs, a corrupted SQLite page. Each test ends with a
//! consistency check: every acknowledged message present exactly once, in order,
//! and the store opens cleanly.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use stowage::{
    AdapterSource, Builtin, ConversationInfo, ConversationMeta, Error, Limits, LoadRequest, Message, NewMessage, Role,
    Scope, SqlFault, Store, StoreConfig,
};
use stowage_tests::{fresh_runtime, shared_runtime};

fn scope() -> Scope {
    Scope::new("t", "u")
}

fn text(id: String) -> NewMessage {
    NewMessage::text(Role::User, format!("body of {id}")).with_id(id)
}

async fn all(store: &Store, id: &str) -> anyhow::Result<Vec<Message>> {
    stowage_tests::all_messages(store, &scope(), id).await
}

/// Seqs 1..=n with no gaps, ids unique.
fn check_contiguous(messages: &[Message], what: &str) -> anyhow::Result<()> {
    ensure!(messages.iter().map(|m| m.seq).eq(1..=messages.len() as u64), "{what}: seqs not contiguous");
    let ids: HashSet<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    ensure!(ids.len() == messages.len(), "{what}: a message is stored twice");
    Ok(())
}

/// The component with a custom section appended: same code, new digest — a "new
/// version" of the adapter as far as the host can tell.
fn new_version(wasm: &[u8], tag: &str) -> Arc<[u8]> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"stowage-test-version";
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(tag.as_bytes());
    let mut out = wasm.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend(body);
    out.into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_swaps_under_concurrent_writers_lose_and_duplicate_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut config = StoreConfig::builtin(Builtin::Sqlite, dir.path());
    config.limits.instances = 4;
    let store = shared_runtime()?.open_store(config.clone()).await?;
    for c in 0..6 {
        store.open(&scope(), &format!("c{c}"), ConversationMeta::default()).await?;
    }
    let versions = [
        AdapterSource::Bytes { name: "sqlite-v1".into(), wasm: new_version(Builtin::Sqlite.wasm(), "v1") },
        AdapterSource::Bytes { name: "sqlite-v2".into(), wasm: new_version(Builtin::Sqlite.wasm(), "v2") },
    ];
    let done = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..8 {
        let (store, done) = (store.clone(), Arc::clone(&done));
        writers.push(tokio::spawn(async move {
            let conversation = format!("c{}", w % 6);
            let mut acked = Vec::new();
            let mut i = 0;
            while !done.load(Ordering::Relaxed) || i < 30 {
                // Alternate single messages and batches of two.
                let batch: Vec<NewMessage> = (0..1 + i % 2).map(|k| text(format!("w{w}-{i}-{k}"))).collect();
                let ids: Vec<String> = batch.iter().filter_map(|m| m.id.clone()).collect();
                store
                    .append(&scope(), &conversation, batch, None)
                    .await
                    .with_context(|| format!("writer {w} append {i}"))?;
                acked.extend(ids);
                i += 1;
            }
            anyhow::Ok((conversation, acked))
        }));
    }
    for round in 0..100 {
        let report = store.swap_adapter(versions[round % 2].clone()).await?;
        ensure!(report.previous_digest != report.current_digest, "round {round}: not a new version");
        if round == 50 {
            let hostile =
                AdapterSource::File(Path::new(stowage::GUEST_ARTIFACT_DIR).join("stowage_adapter_hostile.wasm"));
            match store.swap_adapter(hostile).await {
                Err(Error::SwapRejected { reason, .. }) => ensure!(!reason.is_empty()),
                other => bail!("a hostile candidate must be rejected: {other:?}"),
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let mut expected: HashMap<String, Vec<Vec<String>>> = HashMap::new();
    for writer in writers {
        let (conversation, acked) = writer.await??;
        expected.entry(conversation).or_default().push(acked);
    }
    ensure!(store.stats().swaps == 100, "swaps counted: {}", store.stats().swaps);

    // Consistency, from a brand-new host.
    let reopened = fresh_runtime()?.open_store(config).await?;
    for (conversation, writers) in &expected {
        let stored = all(&reopened, conversation).await?;
        check_contiguous(&stored, conversation)?;
        let total: usize = writers.iter().map(Vec::len).sum();
        ensure!(stored.len() == total, "{conversation}: {} stored, {total} acknowledged", stored.len());
        for acked in writers {
            let order: Vec<&str> =
                stored.iter().map(|m| m.id.as_str()).filter(|id| acked.iter().any(|a| a == id)).collect();
            ensure!(
                order == acked.iter().map(String::as_str).collect::<Vec<_>>(),
                "{conversation}: a writer's order changed"
            );
        }
    }
    Ok(())
}

async fn snapshot(store: &Store) -> anyhow::Result<(ConversationInfo, Vec<Message>)> {
    Ok((store.info(&scope(), "c").await?, all(store, "c").await?))
}

/// Strikes `fault` at statement 0, 1, 2, … of a batch append until the append
/// gets through. A fault before the adapter's commit must leave the batch wholly
/// absent. A fault that lands once the commit is durable fails the call although
/// the batch is stored (the acknowledgment is lost, as with any crash after a
/// commit): then retrying the same batch must store nothing twice. Returns how
/// many faults struck before the commit.
async fn sweep_batch_faults(store: &Store, fault: SqlFault, expect: fn(&Error) -> bool) -> anyhow::Result<u32> {
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    store.append(&scope(), "c", (0..3).map(|i| text(format!("keep-{i}"))).collect(), None).await?;
    let before = snapshot(store).await?;
    let batch = || (0..6).map(|i| text(format!("batch-{i}"))).collect::<Vec<_>>();
    let mut mid_batch = 0;
    for k in 0..64 {
        store.inject_sql_fault(k, fault)?;
        let result = store.append(&scope(), "c", batch(), None).await;
        store.disarm_sql_fault();
        match result {
            Err(e) if expect(&e) => {
                let now = snapshot(store).await?;
                if now == before {
                    mid_batch += 1;
                    continue;
                }
                ensure!(
                    now.1.len() == 9 && now.0.version == before.0.version + 1,
                    "fault at statement {k}: part of the batch is visible"
                );
                let retry = store.append(&scope(), "c", batch(), None).await?;
                ensure!(
                    retry.stored == 0 && retry.seqs == [4, 5, 6, 7, 8, 9],
                    "a retry after a lost acknowledgment duplicated: {retry:?}"
                );
                return Ok(mid_batch);
            }
            Err(e) => bail!("fault at statement {k}: unexpected error {e:?}"),
            Ok(out) => {
                ensure!(out.seqs == [4, 5, 6, 7, 8, 9], "the batch after the faults: {:?}", out.seqs);
                let stored = all(store, "c").await?;
                check_contiguous(&stored, "after the faults")?;
                ensure!(stored.len() == 9);
                return Ok(mid_batch);
            }
        }
    }
    bail!("the append never got through")
}

fn fast_restarts(mut limits: Limits) -> Limits {
    limits.restart_budget = 1000;
    limits.restart_backoff_ms = 1;
    limits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_trapping_mid_batch_leaves_nothing_of_the_batch() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(fast_restarts(Limits::default()));
    let store = shared_runtime()?.open_store(config).await?;
    let traps = sweep_batch_faults(&store, SqlFault::Trap, |e| matches!(e, Error::Trap { .. })).await?;
    ensure!(traps >= 6, "only {traps} traps hit the batch before its commit");
    ensure!(store.stats().traps >= u64::from(traps), "every trap counted");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_timing_out_mid_batch_leaves_nothing_of_the_batch() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { call_timeout: Duration::from_millis(150), ..fast_restarts(Limits::default()) };
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    let stall = SqlFault::Stall(Duration::from_millis(300));
    let timeouts = sweep_batch_faults(&store, stall, |e| matches!(e, Error::Timeout { .. })).await?;
    ensure!(timeouts >= 6, "only {timeouts} timeouts hit the batch before its commit");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filesystem_write_cut_short_by_its_deadline_is_all_or_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let batch: Vec<NewMessage> =
        (0..200).map(|i| NewMessage::text(Role::User, "x".repeat(20_000)).with_id(format!("m{i}"))).collect();
    let mut outcomes = HashSet::new();
    for (attempt, deadline_ms) in [1u64, 2, 4, 8, 16, 32, 64, 128, 256].into_iter().enumerate() {
        let data = dir.path().join(format!("d{attempt}"));
        let limits = Limits { call_timeout: Duration::from_millis(deadline_ms), ..fast_restarts(Limits::default()) };
        let config = StoreConfig::builtin(Builtin::Filesystem, &data);
        let setup = shared_runtime()?.open_store(config.clone()).await?;
        setup.open(&scope(), "c", ConversationMeta::default()).await?;
        let store = shared_runtime()?.open_store(config.clone().with_limits(limits)).await?;
        let result = store.append(&scope(), "c", batch.clone(), None).await;
        let stored = all(&setup, "c").await?.len();
        match result {
            Ok(_) => ensure!(stored == 200, "acknowledged but {stored} stored"),
            // Cut short before the write, or after it was durable (a lost acknowledgment):
            // never part of it, and a retry stores nothing twice.
            Err(Error::Timeout { .. }) if stored == 0 => {}
            Err(Error::Timeout { .. }) if stored == 200 => {
                let retry = setup.append(&scope(), "c", batch.clone(), None).await?;
                ensure!(retry.stored == 0, "a retry after a lost acknowledgment stored {}", retry.stored);
            }
            Err(Error::Timeout { .. }) => bail!("timed out with {stored} of 200 stored"),
            Err(e) => bail!("deadline {deadline_ms} ms: {e}"),
        }
        outcomes.insert(result.is_ok());
    }
    println!("outcomes seen (true = the batch got through): {outcomes:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_filesystem_log_opens_cleanly_and_keeps_every_intact_batch() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Filesystem, dir.path());
    let store = shared_runtime()?.open_store(config.clone()).await?;
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    store.open(&scope(), "other", ConversationMeta::default()).await?;
    store.append(&scope(), "other", vec![text("o1".into())], None).await?;
    let log = find(dir.path(), "c-c")?.join("messages.log");
    let mut boundaries = vec![0u64];
    for b in 0..10 {
        store.append(&scope(), "c", (0..3).map(|i| text(format!("b{b}-{i}"))).collect(), None).await?;
        boundaries.push(std::fs::metadata(&log)?.len());
    }
    let full = std::fs::read(&log)?;
    let original = all(&store, "c").await?;
    for cut in (0..full.len()).step_by(full.len() / 97 + 1).chain([full.len() - 1]) {
        std::fs::write(&log, &full[..cut])?;
        let intact_batches = boundaries.iter().filter(|&&b| b <= cut as u64).count() - 1;
        let reopened = shared_runtime()?.open_store(config.clone()).await?;
        let stored = all(&reopened, "c").await.with_context(|| format!("cut at {cut}"))?;
        ensure!(
            stored[..] == original[..intact_batches * 3],
            "cut at {cut}: {} messages, want {}",
            stored.len(),
            intact_batches * 3
        );
        ensure!(all(&reopened, "other").await?.len() == 1, "another conversation was affected");
    }
    // Damage in the middle is reported, never skipped; other conversations are unaffected.
    let mut damaged = full.clone();
    damaged[boundaries[3] as usize + 20] ^= 0xff;
    std::fs::write(&log, &damaged)?;
    let reopened = shared_runtime()?.open_store(config).await?;
    match reopened.load(&scope(), "c", LoadRequest::latest(10)).await {
        Err(Error::Storage(reason)) => ensure!(reason.contains("corrupt at byte"), "{reason}"),
        other => bail!("corruption must be reported: {other:?}"),
    }
    ensure!(all(&reopened, "other").await?.len() == 1);
    ensure!(reopened.list(&scope(), None, 10).await?.conversations.len() == 2, "listing still works");
    Ok(())
}

fn find(dir: &Path, name: &str) -> anyhow::Result<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Ok(path);
        }
        if path.is_dir()
            && let Ok(found) = find(&path, name)
        {
            return Ok(found);
        }
    }
    bail!("{name} not under {}", dir.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_sqlite_page_is_reported_and_intact_data_still_loads() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Sqlite, dir.path());
    let mut originals = HashMap::new();
    {
        let store = shared_runtime()?.open_store(config.clone()).await?;
        for c in 0..30 {
            let id = format!("c{c:02}");
            store.open(&scope(), &id, ConversationMeta::default()).await?;
            let batch = (0..20).map(|i| {
                NewMessage::text(Role::User, format!("{id} message {i} {}", "x".repeat(300)))
                    .with_id(format!("{id}-{i}"))
            });
            store.append(&scope(), &id, batch.collect(), None).await?;
            originals.insert(id.clone(), all(&store, &id).await?);
        }
    } // every connection closes: the WAL is checkpointed into the main file
    let db = dir.path().join(stowage::SQL_DATABASE_FILE);
    let mut bytes = std::fs::read(&db)?;
    let page = 4096;
    let victim = bytes.len() / page / 2;
    for byte in &mut bytes[victim * page + 100..(victim + 1) * page] {
        *byte = 0xa5;
    }
    std::fs::write(&db, &bytes)?;

    let store = fresh_runtime()?.open_store(config).await?;
    let (mut intact, mut reported) = (0, 0);
    for (id, original) in &originals {
        match all(&store, id).await {
            Ok(loaded) if &loaded == original => intact += 1,
            Ok(_) => bail!("{id}: damaged data was returned as if intact"),
            Err(e) if matches!(e.downcast_ref::<Error>(), Some(Error::Storage(_))) => reported += 1,
            Err(e) => bail!("{id}: unexpected failure {e:#}"),
        }
    }
    println!("after corrupting page {victim}: {intact} conversations intact, {reported} reported unreadable");
    ensure!(intact > 0, "nothing intact survived one corrupted page");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_call_never_overlaps_the_next_one_and_frees_its_queue_slot() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limits = Limits { instances: 2, max_waiting_calls: 4, ..Limits::default() };
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    // The first append stalls inside the adapter; its caller gives up at once.
    store.inject_sql_fault(1, SqlFault::Stall(Duration::from_millis(400)))?;
    let batch = |p: &str| (0..3).map(|i| text(format!("{p}{i}"))).collect::<Vec<_>>();
    let first = tokio::time::timeout(Duration::from_millis(50), store.append(&scope(), "c", batch("a"), None)).await;
    ensure!(first.is_err(), "the first call should have been cancelled by its caller");
    // The next call on the conversation must wait for the first to finish, not overlap it.
    let second = store.append(&scope(), "c", batch("b"), None).await?;
    ensure!(second.seqs == [4, 5, 6], "the cancelled append still completes first: {:?}", second.seqs);
    let ids: Vec<String> = all(&store, "c").await?.into_iter().map(|m| m.id).collect();
    ensure!(ids == ["a0", "a1", "a2", "b0", "b1", "b2"], "{ids:?}");
    // Callers that give up while queued give their slot back.
    for round in 0..3 {
        store.inject_sql_fault(0, SqlFault::Stall(Duration::from_millis(200)))?;
        let mut waiters = Vec::new();
        for i in 0..6 {
            let store = store.clone();
            waiters.push(tokio::spawn(async move {
                let id = format!("other-{round}-{i}");
                tokio::time::timeout(Duration::from_millis(20), store.info(&scope(), &id)).await
            }));
        }
        for waiter in waiters {
            let _ = waiter.await?;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.disarm_sql_fault();
    ensure!(store.info(&scope(), "c").await?.message_count == 6, "the store refuses calls after cancelled waits");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_filled_tail_after_power_loss_is_a_torn_write_not_damage() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Filesystem, dir.path());
    let store = shared_runtime()?.open_store(config.clone()).await?;
    store.open(&scope(), "c", ConversationMeta::default()).await?;
    store.append(&scope(), "c", vec![text("kept".into())], None).await?;
    let log = find(dir.path(), "c-c")?.join("messages.log");
    // The file was extended but its new blocks never written.
    let mut bytes = std::fs::read(&log)?;
    bytes.extend([0u8; 4096]);
    std::fs::write(&log, &bytes)?;
    let reopened = shared_runtime()?.open_store(config).await?;
    ensure!(all(&reopened, "c").await?.len() == 1, "the intact message must load");
    let next = reopened.append(&scope(), "c", vec![text("after".into())], None).await?;
    ensure!(next.seqs == [2], "the next writer cuts the torn tail and continues: {:?}", next.seqs);
    Ok(())
}

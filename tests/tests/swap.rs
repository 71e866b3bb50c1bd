//! Hot swap: two different adapter versions swapped back and forth under
//! concurrent writers, a call already running when the swap happens, candidates
//! rejected at each stage (contract check, instantiation, smoke test), and
//! concurrent swaps.

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use stowage::{AdapterSource, Builtin, ConversationMeta, Error, Grants, Limits, SqlFault, Store, StoreConfig};
use stowage_tests::{fixture, fresh_runtime, shared_runtime};
use support::{all, check_contiguous, new_version, scope, text};

/// A component with no exports at all: it fails the contract check.
const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\x00\x01\x00";

fn bytes(name: &str, wasm: Arc<[u8]>) -> AdapterSource {
    AdapterSource::Bytes { name: name.into(), wasm }
}

/// The digest the host gives `source` (compiling it now, so a later swap to it
/// is quick).
async fn digest_of(source: &AdapterSource, grants: Grants) -> anyhow::Result<String> {
    Ok(shared_runtime()?.inspect(source, grants).await?.digest)
}

/// Expects `SwapRejected` naming `why`.
fn expect_rejected(result: Result<stowage::SwapReport, Error>, why: &str, what: &str) -> anyhow::Result<()> {
    match result {
        Err(Error::SwapRejected { reason, .. }) => {
            ensure!(reason.contains(why), "{what}: the rejection should say {why:?}: {reason}");
            Ok(())
        }
        other => bail!("{what} must be rejected, got {other:?}"),
    }
}

/// The store still serves with the adapter `digest`: a write and a read succeed.
async fn still_serving(store: &Store, digest: &str, id: &str) -> anyhow::Result<()> {
    ensure!(store.adapter_digest() == digest, "the old adapter must keep serving");
    store.open(&scope(), "serving", ConversationMeta::default()).await?;
    let out = store.append(&scope(), "serving", vec![text(id)], None).await?;
    ensure!(out.stored == 1, "{out:?}");
    ensure!(all(store, "serving").await?.iter().any(|m| m.id == id), "{id} not read back");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_swaps_between_two_versions_under_concurrent_writers_lose_and_duplicate_nothing() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let mut config = StoreConfig::builtin(Builtin::Sqlite, dir.path());
    config.limits.instances = 4;
    let store = shared_runtime()?.open_store(config.clone()).await?;
    for c in 0..6 {
        store.open(&scope(), &format!("c{c}"), ConversationMeta::default()).await?;
    }
    // The shipped adapter, and the same code under another digest.
    let versions =
        [AdapterSource::Builtin(Builtin::Sqlite), bytes("sqlite-v2", new_version(Builtin::Sqlite.wasm(), "v2"))];
    let mut digests = Vec::new();
    for version in &versions {
        digests.push(digest_of(version, config.grants).await?);
    }
    ensure!(digests[0] != digests[1], "the two versions must differ");
    ensure!(store.adapter_digest() == digests[0]);

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
                let batch: Vec<_> = (0..1 + i % 2).map(|k| text(format!("w{w}-{i}-{k}"))).collect();
                let ids: Vec<String> = batch.iter().filter_map(|m| m.id.clone()).collect();
                let out = store
                    .append(&scope(), &conversation, batch, None)
                    .await
                    .with_context(|| format!("writer {w} append {i}"))?;
                ensure!(out.stored as usize == ids.len(), "writer {w} append {i}: {out:?}");
                acked.extend(ids);
                i += 1;
            }
            anyhow::Ok((conversation, acked))
        }));
    }
    for round in 0..100 {
        let report = store.swap_adapter(versions[(round + 1) % 2].clone()).await?;
        ensure!(
            report.previous_digest == digests[round % 2] && report.current_digest == digests[(round + 1) % 2],
            "round {round}: swapped from {} to {}",
            report.previous_digest,
            report.current_digest
        );
        ensure!(store.adapter_digest() == report.current_digest, "round {round}: the new version is not serving");
        if round == 50 {
            let result = store.swap_adapter(bytes("empty", EMPTY_COMPONENT.into())).await;
            expect_rejected(result, "does not export", "a candidate without exports, under load")?;
        }
    }
    done.store(true, Ordering::Relaxed);
    let mut expected: HashMap<String, Vec<Vec<String>>> = HashMap::new();
    for writer in writers {
        let (conversation, acked) = writer.await??;
        expected.entry(conversation).or_default().push(acked);
    }
    ensure!(store.stats().swaps == 100, "swaps counted: {}", store.stats().swaps);
    store.close().await;

    // Consistency, from a brand-new host.
    let reopened = fresh_runtime()?.open_store(config).await?;
    for (conversation, writers) in &expected {
        let stored = all(&reopened, conversation).await?;
        check_contiguous(&stored, conversation)?;
        let total: usize = writers.iter().map(Vec::len).sum();
        ensure!(stored.len() == total, "{conversation}: {} stored, {total} acknowledged", stored.len());
        for acked in writers {
            let order: Vec<&str> =
                stored.iter().map(|m| m.id.as_str()).filter(|id| acked.contains(&id.to_string())).collect();
            ensure!(
                order.iter().copied().eq(acked.iter().map(String::as_str)),
                "{conversation}: a writer's order changed"
            );
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_call_already_running_finishes_on_the_old_adapter_while_the_new_one_serves() -> anyhow::Result<()> {
    // Long enough that a swap which waited for the running call (drained the
    // old adapter first) cannot finish inside it, with room for a loaded machine.
    const STALL: Duration = Duration::from_millis(4000);
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Sqlite, dir.path());
    let store = shared_runtime()?.open_store(config.clone()).await?;
    let old = store.adapter_digest();
    let candidate = bytes("sqlite-next", new_version(Builtin::Sqlite.wasm(), "next"));
    let new = digest_of(&candidate, config.grants).await?;
    ensure!(old != new);
    for id in ["c", "other"] {
        store.open(&scope(), id, ConversationMeta::default()).await?;
    }
    store.append(&scope(), "c", vec![text("before")], None).await?;
    store.append(&scope(), "other", vec![text("other-1")], None).await?;

    // The next append stalls at its first SQL statement, inside the old adapter
    // (holding SQLite's write lock: other writers wait for it, readers do not).
    let calls = store.stats().calls;
    store.inject_sql_fault(0, SqlFault::Stall(STALL))?;
    let slow = tokio::spawn({
        let store = store.clone();
        async move { store.append(&scope(), "c", vec![text("slow")], None).await }
    });
    let started = Instant::now();
    while store.stats().calls == calls {
        ensure!(started.elapsed() < Duration::from_secs(10), "the slow call never reached the adapter");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let report = store.swap_adapter(candidate).await?;
    ensure!(report.previous_digest == old && report.current_digest == new, "{report:?}");
    ensure!(store.adapter_digest() == new, "calls after the swap go to the new adapter");
    // The new adapter serves reads while the old one still runs the slow call.
    let other: Vec<String> = all(&store, "other").await?.into_iter().map(|m| m.id).collect();
    ensure!(other == ["other-1"], "{other:?}");
    ensure!(
        !slow.is_finished(),
        "the slow call ended before the swap and a read on the new adapter did, after {:?}: the swap waited for \
         it, or the stall struck another call, and this proves nothing",
        started.elapsed()
    );
    // The call's result alone cannot tell: a swap that drained the old adapter
    // first returns once the stalled statement ends, while the call still makes
    // its commit durable. The stall can: the swap and the read must finish
    // inside it.
    let swapped_after = started.elapsed();
    ensure!(
        swapped_after < STALL,
        "the swap and a read on the new adapter took {swapped_after:?}, longer than the running call's {STALL:?} \
         stall: the swap waited for the call instead of letting it finish on the old adapter"
    );
    let out = slow.await?.context("the running call must complete on the old adapter")?;
    ensure!(out.seqs == [2] && out.stored == 1, "{out:?}");
    let after = store.append(&scope(), "c", vec![text("after")], None).await?;
    ensure!(after.seqs == [3], "{after:?}");
    let ids: Vec<String> = all(&store, "c").await?.into_iter().map(|m| m.id).collect();
    ensure!(ids == ["before", "slow", "after"], "{ids:?}");
    let other = store.append(&scope(), "other", vec![text("other-2")], None).await?;
    ensure!(other.seqs == [2], "{other:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_failing_the_contract_check_is_rejected_and_the_old_adapter_keeps_serving() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path())).await?;
    let digest = store.adapter_digest();
    let empty = store.swap_adapter(bytes("empty", EMPTY_COMPONENT.into())).await;
    expect_rejected(empty, "does not export `stowage:store/", "a component without the contract's exports")?;
    still_serving(&store, &digest, "after-empty").await?;
    // The filesystem adapter imports wasi:filesystem; this store grants only `sql`.
    let ungranted = store.swap_adapter(AdapterSource::Builtin(Builtin::Filesystem)).await;
    expect_rejected(ungranted, "needs the `filesystem` capability", "an adapter needing an ungranted capability")?;
    still_serving(&store, &digest, "after-ungranted").await?;
    let core = store.swap_adapter(bytes("core", b"\0asm\x01\0\0\0".as_slice().into())).await;
    expect_rejected(core, "core WebAssembly module", "a core module")?;
    still_serving(&store, &digest, "after-core").await?;
    ensure!(store.stats().swaps == 0, "a rejected swap is not counted: {:?}", store.stats());
    Ok(())
}

/// `wasm` with its (only) defined linear memory starting at `pages` 64 KiB pages.
fn with_initial_memory(wasm: &[u8], pages: u8) -> anyhow::Result<Vec<u8>> {
    fn leb(b: &[u8], at: &mut usize) -> anyhow::Result<usize> {
        let (mut value, mut shift) = (0usize, 0);
        loop {
            let byte = *b.get(*at).context("truncated LEB128")?;
            *at += 1;
            value |= usize::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
        }
    }
    /// Offsets of the minimum-pages byte of every memory a core module defines,
    /// searching nested components; `base` is where `b` starts in the file.
    fn scan(b: &[u8], base: usize, component: bool, found: &mut Vec<usize>) -> anyhow::Result<()> {
        let mut at = 8;
        while at < b.len() {
            let id = b[at];
            at += 1;
            let size = leb(b, &mut at)?;
            let body = b.get(at..at + size).context("section past the end")?;
            match (component, id) {
                (true, 1) => scan(body, base + at, false, found)?,
                (true, 4) => scan(body, base + at, true, found)?,
                (false, 5) => {
                    let mut p = 0;
                    for _ in 0..leb(body, &mut p)? {
                        let flags = body[p];
                        ensure!(flags & !1 == 0, "unexpected memory flags {flags:#x}");
                        ensure!(body[p + 1] < 0x80, "a multi-byte minimum cannot be patched in place");
                        found.push(base + at + p + 1);
                        p += 2;
                        if flags & 1 == 1 {
                            leb(body, &mut p)?;
                        }
                    }
                }
                _ => {}
            }
            at += size;
        }
        Ok(())
    }
    ensure!(pages < 0x80, "the minimum must stay one LEB128 byte");
    let mut found = Vec::new();
    scan(wasm, 0, true, &mut found)?;
    let [offset] = found[..] else { bail!("expected one defined memory, found {}", found.len()) };
    let mut out = wasm.to_vec();
    out[offset] = pages;
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_that_cannot_be_instantiated_is_rejected_and_the_old_adapter_keeps_serving() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // The shipped adapter starts at 17 pages (1.06 MiB) and runs within 6 MiB here;
    // the candidate asks for 127 pages (7.9 MiB) when it is instantiated.
    let limits = Limits { memory_bytes: 6 << 20, ..Limits::default() };
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    let digest = store.adapter_digest();
    still_serving(&store, &digest, "before").await?;
    let big = with_initial_memory(Builtin::Sqlite.wasm(), 127)?;
    let result = store.swap_adapter(bytes("sqlite-big-memory", big.into())).await;
    expect_rejected(result, "memory limit of 6291456 bytes", "a candidate whose instantiation exceeds the cap")?;
    still_serving(&store, &digest, "after").await?;
    let stats = store.stats();
    ensure!(stats.swaps == 0 && stats.memory_limit_hits == 0, "the candidate's failure is not the store's: {stats:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_failing_its_smoke_test_is_rejected_and_the_old_adapter_keeps_serving() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Filesystem, dir.path())).await?;
    let digest = store.adapter_digest();
    // The hostile fixture loads and instantiates (it needs only `filesystem`) but
    // answers `list` with `unsupported`.
    let result = store.swap_adapter(AdapterSource::File(fixture("hostile"))).await;
    expect_rejected(result, "smoke test `list` failed", "an adapter failing the smoke test")?;
    still_serving(&store, &digest, "after-hostile").await?;
    ensure!(store.stats().swaps == 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_swaps_are_serialised() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Null, dir.path())).await?;
    let initial = store.adapter_digest();
    let versions: Vec<AdapterSource> =
        (0..6).map(|v| bytes(&format!("null-v{v}"), new_version(Builtin::Null.wasm(), &format!("v{v}")))).collect();
    let swaps: Vec<_> = versions
        .iter()
        .map(|version| {
            let (store, version) = (store.clone(), version.clone());
            tokio::spawn(async move { store.swap_adapter(version).await })
        })
        .collect();
    let mut reports = Vec::new();
    for swap in swaps {
        reports.push(swap.await??);
    }
    // Serialised swaps form one chain: each starts from the adapter the previous
    // one installed. Two swaps overlapping would both start from the same digest.
    let mut by_previous: HashMap<&str, &str> = HashMap::new();
    for r in &reports {
        let clash = by_previous.insert(&r.previous_digest, &r.current_digest);
        ensure!(clash.is_none(), "two swaps started from the same adapter {}: {reports:#?}", r.previous_digest);
    }
    let mut at = initial.as_str();
    for step in 0..reports.len() {
        at = by_previous.get(at).with_context(|| format!("the chain of swaps breaks at step {step}: {reports:#?}"))?;
    }
    ensure!(at == store.adapter_digest(), "the last swap's adapter serves");
    let mut installed: Vec<&str> = reports.iter().map(|r| r.current_digest.as_str()).collect();
    installed.sort_unstable();
    let mut wanted = Vec::new();
    for version in &versions {
        wanted.push(digest_of(version, Grants::NONE).await?);
    }
    wanted.sort_unstable();
    ensure!(installed == wanted, "every version was installed once");
    ensure!(store.stats().swaps == 6, "{:?}", store.stats());
    Ok(())
}

//! A soak under swaps and restarts: writers append while the adapter is swapped
//! between two different versions and made to trap over and over. Memory use
//! (RSS) is sampled throughout and must level off; at the end every
//! acknowledged message is present exactly once, in order, and nothing is
//! stored that no writer sent.
//!
//! `STOWAGE_SOAK_SECS` sets the length (CI: a short default; for a real soak run
//! e.g. `STOWAGE_SOAK_SECS=600 cargo test --release -p stowage-tests --test soak -- --nocapture`).

mod support;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use stowage::{AdapterSource, Builtin, ConversationMeta, Error, Limits, NewMessage, Role, SqlFault, StoreConfig};
use stowage_tests::shared_runtime;
use support::{all, check_contiguous, new_version, scope};

/// RSS samples taken at least this often.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// Fewer samples than this cannot show a trend: the test fails rather than skip.
const MIN_SAMPLES: usize = 6;
/// Allowed RSS growth from the end of the warm-up to the end of the run.
const MAX_GROWTH: u64 = 96 << 20;

fn rss_bytes() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status for VmRSS")?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("no VmRSS line in /proc/self/status")?;
    let kib: u64 = line.split_whitespace().nth(1).context("malformed VmRSS line")?.parse()?;
    Ok(kib * 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn soak_under_swaps_and_restarts_memory_levels_off() -> anyhow::Result<()> {
    let seconds: u64 = std::env::var("STOWAGE_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let dir = tempfile::tempdir()?;
    let limits =
        Limits { restart_budget: 1_000_000, restart_backoff_ms: 1, max_restart_backoff_ms: 1, ..Limits::default() };
    let config = StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits);
    let store = shared_runtime()?.open_store(config.clone()).await?;
    // The shipped adapter and the same code under another digest.
    let versions = [
        AdapterSource::Builtin(Builtin::Sqlite),
        AdapterSource::Bytes { name: "sqlite-soak".into(), wasm: new_version(Builtin::Sqlite.wasm(), "soak") },
    ];
    let mut digests = Vec::new();
    for version in &versions {
        digests.push(shared_runtime()?.inspect(version, config.grants).await?.digest);
    }
    ensure!(digests[0] != digests[1] && store.adapter_digest() == digests[0], "the two versions must differ");
    for c in 0..4 {
        store.open(&scope(), &format!("c{c}"), ConversationMeta::default()).await?;
    }
    let done = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (store, done) = (store.clone(), Arc::clone(&done));
        writers.push(tokio::spawn(async move {
            let conversation = format!("c{w}");
            let (mut acked, mut attempts) = (Vec::new(), 0u64);
            while !done.load(Ordering::Relaxed) {
                let id = format!("w{w}-{attempts}");
                attempts += 1;
                match store
                    .append(&scope(), &conversation, vec![NewMessage::text(Role::User, &id).with_id(&id)], None)
                    .await
                {
                    Ok(out) => {
                        ensure!(out.stored == 1, "writer {w}: {id} was new but stored {}", out.stored);
                        acked.push(id);
                    }
                    // An injected trap may hit this call; the message was not acknowledged.
                    Err(Error::Trap { .. }) => {}
                    Err(e) => return Err(anyhow::Error::new(e).context(format!("writer {w}"))),
                }
            }
            anyhow::Ok((w, conversation, acked, attempts))
        }));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut samples = vec![(Duration::ZERO, rss_bytes()?)];
    let mut round = 0usize;
    while Instant::now() < deadline {
        let target = (round + 1) % 2;
        // The trap is for the writers, never for the swap's smoke test.
        store.disarm_sql_fault();
        let report = store.swap_adapter(versions[target].clone()).await?;
        ensure!(
            report.previous_digest == digests[round % 2] && report.current_digest == digests[target],
            "swap {round}: from {} to {}",
            report.previous_digest,
            report.current_digest
        );
        store.inject_sql_fault(3, SqlFault::Trap)?;
        round += 1;
        if started.elapsed() >= samples[samples.len() - 1].0 + SAMPLE_EVERY {
            samples.push((started.elapsed(), rss_bytes()?));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    samples.push((started.elapsed(), rss_bytes()?));
    done.store(true, Ordering::Relaxed);
    store.disarm_sql_fault();

    let mut acked_total = 0;
    for writer in writers {
        let (w, conversation, acked, attempts) = writer.await??;
        let stored = all(&store, &conversation).await?;
        check_contiguous(&stored, &conversation)?;
        // Exactly once: every id once (checked above), every acknowledged id present
        // in order, and nothing but what this writer sent.
        let sent: HashSet<String> = (0..attempts).map(|i| format!("w{w}-{i}")).collect();
        ensure!(stored.iter().all(|m| sent.contains(&m.id)), "{conversation}: holds a message no writer sent");
        let ids: Vec<&str> = stored.iter().map(|m| m.id.as_str()).collect();
        let mut position = 0;
        for id in &acked {
            position += ids[position..]
                .iter()
                .position(|s| s == id)
                .with_context(|| format!("{conversation}: acknowledged {id} missing or out of order"))?;
        }
        // Unacknowledged ids that were stored are lost acknowledgments (a trap after the commit).
        println!("{conversation}: {} acknowledged, {} stored, {attempts} sent", acked.len(), stored.len());
        acked_total += acked.len();
    }
    let stats = store.stats();
    println!("soak: {seconds} s, {round} swaps, {} traps/restarts, {acked_total} acknowledged appends", stats.traps);
    for (at, rss) in &samples {
        println!("  t={:>5.1}s  rss={:>6.1} MiB", at.as_secs_f64(), *rss as f64 / f64::from(1 << 20));
    }
    ensure!(
        samples.len() >= MIN_SAMPLES,
        "only {} RSS samples in {seconds} s: too few to tell whether memory levels off (need {MIN_SAMPLES})",
        samples.len()
    );
    // Compare the end with the end of the first third: steady state, not unbounded growth.
    let early = samples[samples.len() / 3].1;
    let late = samples[samples.len() - 1].1;
    let growth = late.saturating_sub(early);
    println!("  growth after warm-up: {:.1} MiB", growth as f64 / f64::from(1 << 20));
    ensure!(growth < MAX_GROWTH, "RSS grew by {growth} bytes after warm-up");
    ensure!(stats.swaps as usize == round && stats.traps > 0 && acked_total > 0, "{stats:?}");
    Ok(())
}

//! A soak under swaps and restarts: writers append while the adapter is swapped
//! and made to trap over and over. Memory use (RSS) is reported and must level
//! off; at the end every acknowledged message is present exactly once, in order.
//!
//! `STOWAGE_SOAK_SECS` sets the length (CI: a short default; for a real soak run
//! e.g. `STOWAGE_SOAK_SECS=600 cargo test --release -p stowage-tests --test soak -- --nocapture`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use stowage::{
    AdapterSource, Builtin, ConversationMeta, Error, Limits, Message, NewMessage, Role, Scope, SqlFault, Store,
    StoreConfig,
};
use stowage_tests::shared_runtime;

fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn scope() -> Scope {
    Scope::new("soak", "")
}

async fn all(store: &Store, id: &str) -> anyhow::Result<Vec<Message>> {
    stowage_tests::all_messages(store, &scope(), id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn soak_under_swaps_and_restarts_memory_levels_off() -> anyhow::Result<()> {
    let seconds: u64 = std::env::var("STOWAGE_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let dir = tempfile::tempdir()?;
    let limits = Limits { restart_budget: 1_000_000, restart_backoff_ms: 1, ..Limits::default() };
    let store =
        shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path()).with_limits(limits)).await?;
    for c in 0..4 {
        store.open(&scope(), &format!("c{c}"), ConversationMeta::default()).await?;
    }
    let done = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (store, done) = (store.clone(), Arc::clone(&done));
        writers.push(tokio::spawn(async move {
            let conversation = format!("c{w}");
            let mut acked = Vec::new();
            let mut i = 0u64;
            while !done.load(Ordering::Relaxed) {
                let id = format!("w{w}-{i}");
                match store
                    .append(&scope(), &conversation, vec![NewMessage::text(Role::User, &id).with_id(&id)], None)
                    .await
                {
                    Ok(_) => acked.push(id),
                    // An injected trap may hit this call; the message was not acknowledged.
                    Err(Error::Trap { .. }) => {}
                    Err(e) => return Err(anyhow::Error::new(e).context(format!("writer {w}"))),
                }
                i += 1;
            }
            anyhow::Ok((conversation, acked))
        }));
    }
    let versions = [
        AdapterSource::Builtin(Builtin::Sqlite),
        AdapterSource::Bytes { name: "sqlite-copy".into(), wasm: Builtin::Sqlite.wasm().into() },
    ];
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut samples = Vec::new();
    let mut round = 0usize;
    while Instant::now() < deadline {
        store.swap_adapter(versions[round % 2].clone()).await?;
        store.inject_sql_fault(3, SqlFault::Trap)?;
        round += 1;
        if round.is_multiple_of(10) {
            samples.push((started.elapsed(), rss_bytes().unwrap_or(0)));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done.store(true, Ordering::Relaxed);
    store.disarm_sql_fault();
    let mut acked_total = 0;
    for writer in writers {
        let (conversation, acked) = writer.await??;
        let stored = all(&store, &conversation).await?;
        ensure!(stored.iter().map(|m| m.seq).eq(1..=stored.len() as u64), "{conversation}: seqs not contiguous");
        let ids: Vec<&str> = stored.iter().map(|m| m.id.as_str()).collect();
        let mut position = 0;
        for id in &acked {
            position += ids[position..]
                .iter()
                .position(|s| s == id)
                .with_context(|| format!("{conversation}: acknowledged {id} missing or out of order"))?;
        }
        acked_total += acked.len();
    }
    let stats = store.stats();
    println!("soak: {seconds} s, {round} swaps, {} traps/restarts, {acked_total} acknowledged appends", stats.traps);
    for (at, rss) in &samples {
        println!("  t={:>5.1}s  rss={:>6.1} MiB", at.as_secs_f64(), *rss as f64 / (1 << 20) as f64);
    }
    // Compare the last third with the first third: steady state, not unbounded growth.
    if samples.len() >= 6 {
        let third = samples.len() / 3;
        let early = samples[third].1;
        let late = samples[samples.len() - 1].1;
        let growth = late.saturating_sub(early);
        println!("  growth after warm-up: {:.1} MiB", growth as f64 / (1 << 20) as f64);
        ensure!(growth < 96 << 20, "RSS grew by {growth} bytes after warm-up");
    }
    ensure!(stats.swaps as usize == round && stats.traps > 0, "{stats:?}");
    Ok(())
}

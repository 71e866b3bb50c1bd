//! Phases A + C (one store, one handle) and B + D (a second, fresh store), one caller.
//!
//! Messages are generated, converted with `prepare` and grouped into each call's batch
//! before the loop; the timer brackets exactly one awaited store call. WAL headers are
//! read after each call, outside the timer, to attribute checkpoints to calls.

use std::path::Path;
use std::time::Instant;

use super::Scale;
use crate::error::{BenchError, Result};
use crate::machine::bytes_under;
use crate::report::{RunResult, key};
use crate::runner::{OpenFor, StoreKind, StoreRunner};
use crate::stats::{Latency, buckets, per_second};
use crate::walwatch::{WalWatch, checkpoint_calls};
use crate::workload::{DIGEST_A, DIGEST_B, Message, TURN, b_call_order, conv_id, conversation, digest, turn};

/// A call slower than this counts as an outlier in phase B.
const SLOW_NS: u64 = 5_000_000;

/// Untimed read-back checks.
pub struct Checks;

impl Checks {
    /// Fails unless `got` decodes to exactly the canonical bytes of `want`, in order.
    /// Passes without looking when the store keeps nothing ([`StoreRunner::keeps_messages`]).
    pub fn equal<R: StoreRunner>(store: &R, what: &str, got: &[R::Output], want: &[Message]) -> Result<()> {
        if !store.keeps_messages() {
            return Ok(());
        }
        if got.len() != want.len() {
            return Err(BenchError::Mismatch(format!("{what}: {} messages, expected {}", got.len(), want.len())));
        }
        for (i, (output, message)) in got.iter().zip(want).enumerate() {
            if store.canonical(output)? != message.canonical {
                return Err(BenchError::Mismatch(format!("{what}: message {i} (m = {}) differs", message.m)));
            }
        }
        Ok(())
    }
}

impl Checks {
    /// A check's description, marked as skipped when the store keeps nothing.
    pub fn noted<R: StoreRunner>(store: &R, check: String) -> String {
        if store.keeps_messages() { check } else { format!("{check} (skipped: the store keeps nothing)") }
    }
}

pub(crate) fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Phase A (one message per call) then, when `c` is set, phase C (loads) on the same
/// store and handle.
pub async fn phase_a_c<K: StoreKind>(kind: &K, dir: &Path, scale: &Scale, c: bool, out: &mut RunResult) -> Result<()> {
    let store = kind.open(dir, OpenFor::Sequential).await?;
    let conv = conv_id(0);
    store.open_conversation(&conv).await?;
    let messages = conversation(0, scale.a_messages);
    if scale.a_messages == 2000 {
        expect_digest("set A", &messages, DIGEST_A)?;
        out.checks.push("set A digest matches WORKLOAD.md".into());
    }
    let calls: Vec<Vec<_>> =
        messages.iter().map(|m| store.prepare(m).map(|input| vec![input])).collect::<Result<_>>()?;

    let mut watch = WalWatch::new(dir);
    let mut times = Vec::with_capacity(calls.len());
    let mut restarts = Vec::with_capacity(calls.len());
    for batch in calls {
        let start = Instant::now();
        store.append(&conv, batch).await?;
        times.push(elapsed_ns(start));
        restarts.push(watch.observe());
    }
    let a = Latency::of_ns(&times);
    let a_buckets = buckets(&times, scale.a_bucket);
    let metrics = &mut out.metrics;
    metrics.insert(key::A_MEDIAN.into(), a.median_us);
    metrics.insert(key::A_P99.into(), a.p99_us);
    metrics.insert(key::A_RATE.into(), per_second(times.len(), times.iter().sum()).unwrap_or(0.0));
    metrics.insert(key::A_FIRST_BUCKET_MEDIAN.into(), a_buckets.first().map_or(0.0, |b| b.median_us));
    metrics.insert(key::A_LAST_BUCKET_MEDIAN.into(), a_buckets.last().map_or(0.0, |b| b.median_us));
    metrics.insert(key::A_CHECKPOINTS.into(), checkpoint_calls(&restarts).len() as f64);
    out.a_buckets = a_buckets;
    drop(watch);
    if !c {
        return store.close().await;
    }

    // Phase C: newest N, then all, on the same handle.
    let newest_start = messages.len().saturating_sub(scale.c_newest);
    let mut newest_times = Vec::with_capacity(scale.c_newest_loads);
    for i in 0..scale.c_newest_loads {
        let start = Instant::now();
        let got = store.load_newest(&conv, scale.c_newest).await?;
        newest_times.push(elapsed_ns(start));
        if i == 0 || i + 1 == scale.c_newest_loads {
            Checks::equal(&store, "C newest", &got, &messages[newest_start..])?;
        }
    }
    let mut all_times = Vec::with_capacity(scale.c_all_loads);
    for i in 0..scale.c_all_loads {
        let start = Instant::now();
        let got = store.load_all(&conv).await?;
        all_times.push(elapsed_ns(start));
        if i == 0 || i + 1 == scale.c_all_loads {
            Checks::equal(&store, "C all", &got, &messages)?;
        }
    }
    out.checks.push(Checks::noted(
        &store,
        format!("C: newest {} and all {} read back equal", scale.c_newest, messages.len()),
    ));
    let newest = Latency::of_ns(&newest_times);
    out.metrics.insert(key::C_NEWEST_MEDIAN.into(), newest.median_us);
    out.metrics.insert(key::C_NEWEST_P99.into(), newest.p99_us);
    out.metrics.insert(key::C_ALL_MEDIAN.into(), Latency::of_ns(&all_times).median_us);
    store.close().await
}

/// Phase B (turns of 4 messages, round-robin over conversations) on a fresh store, its
/// read-back check, then phase D (bytes on disk before and after closing).
pub async fn phase_b_d<K: StoreKind>(kind: &K, dir: &Path, scale: &Scale, out: &mut RunResult) -> Result<()> {
    let store = kind.open(dir, OpenFor::Sequential).await?;
    let convs: Vec<String> = (0..scale.b_conversations).map(conv_id).collect();
    for conv in &convs {
        store.open_conversation(conv).await?;
    }
    let order = b_call_order(scale.b_conversations, scale.b_turns);
    let turns: Vec<(usize, Vec<Message>)> = order.iter().map(|&(c, t)| (c as usize, turn(c, t))).collect();
    if scale.b_conversations == 100 && scale.b_turns == 25 {
        let all: Vec<Message> = turns.iter().flat_map(|(_, batch)| batch.iter().cloned()).collect();
        expect_digest("set B", &all, DIGEST_B)?;
        out.checks.push("set B digest (append order) matches WORKLOAD.md".into());
    }
    let calls: Vec<(usize, Vec<_>)> = turns
        .iter()
        .map(|(c, batch)| Ok((*c, batch.iter().map(|m| store.prepare(m)).collect::<Result<Vec<_>>>()?)))
        .collect::<Result<_>>()?;
    drop(turns);

    let mut watch = WalWatch::new(dir);
    let mut times = Vec::with_capacity(calls.len());
    let mut restarts = Vec::with_capacity(calls.len());
    for (c, batch) in calls {
        let conv = &convs[c];
        let start = Instant::now();
        store.append(conv, batch).await?;
        times.push(elapsed_ns(start));
        restarts.push(watch.observe());
    }
    drop(watch);
    let b = Latency::of_ns(&times);
    let checkpoints = checkpoint_calls(&restarts);
    let slow: Vec<usize> = (0..times.len()).filter(|&i| times[i] > SLOW_NS).collect();
    let on_checkpoint = slow.iter().filter(|i| checkpoints.contains(i)).count();
    let messages = times.len() * TURN as usize;
    let metrics = &mut out.metrics;
    metrics.insert(key::B_RATE.into(), per_second(messages, times.iter().sum()).unwrap_or(0.0));
    metrics.insert(key::B_MEDIAN.into(), b.median_us);
    metrics.insert(key::B_P99.into(), b.p99_us);
    metrics.insert(key::B_CHECKPOINTS.into(), checkpoints.len() as f64);
    metrics.insert(key::B_SLOW.into(), slow.len() as f64);
    metrics.insert(key::B_SLOW_ON_CHECKPOINT.into(), on_checkpoint as f64);

    let mut checked = vec![0, scale.b_conversations / 2, scale.b_conversations.saturating_sub(1)];
    checked.dedup();
    for &c in &checked {
        let got = store.load_all(&conv_id(c)).await?;
        Checks::equal(&store, &format!("B {}", conv_id(c)), &got, &conversation(c, scale.b_turns * TURN))?;
    }
    out.checks.push(Checks::noted(&store, format!("B: conversations {checked:?} read back equal")));

    // A server-backed store's schema is measured while it is open (closing drops it).
    let server = store.server_bytes().await?.unwrap_or(0);
    out.metrics.insert(key::D_BYTES_OPEN.into(), (bytes_under(dir)? + server) as f64);
    store.close().await?;
    out.metrics.insert(key::D_BYTES.into(), (bytes_under(dir)? + server) as f64);
    Ok(())
}

fn expect_digest(what: &str, messages: &[Message], pinned: &str) -> Result<()> {
    let got = digest(messages.iter().map(|m| m.canonical.as_str()));
    if got != pinned {
        return Err(BenchError::Mismatch(format!("{what}: digest {got}, WORKLOAD.md pins {pinned}")));
    }
    Ok(())
}

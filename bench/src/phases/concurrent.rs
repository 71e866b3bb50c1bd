//! Phase E: concurrent agents. Each conversation is one agent's task: its turns (4
//! messages per call) in order, awaiting each call before the next. A point of the curve
//! runs `agents` tasks at once over a fixed set of conversations; each task takes the next
//! untouched conversation when it finishes one, so every point replays the same messages.
//! With as many agents as conversations this is exactly the workload's phase E (100 × 25
//! turns; 1,000 × 10 turns). Reported: messages / wall time, per-call median and p99.
//!
//! Every batch is prepared before the tasks are released from a barrier; the wall clock
//! runs from the first task's start after the release to the last task's end.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use tokio::sync::Barrier;

use super::sequential::{Checks, elapsed_ns};
use super::{Scale, fresh_dir, remove};
use crate::error::{BenchError, Result};
use crate::report::{CurvePoint, RunResult, key};
use crate::runner::{OpenFor, StoreKind, StoreRunner};
use crate::stats::{Latency, per_second};
use crate::workload::{TURN, conv_id, conversation, turn};

/// Runs phase E: the main point (all of B's conversations at once) and the large point,
/// plus, when `curve` is set, every other point of `scale.e_agents`.
pub async fn phase_e<K: StoreKind>(
    kind: &K,
    run_dir: &Path,
    scale: &Scale,
    curve: bool,
    out: &mut RunResult,
) -> Result<()> {
    let all = scale.b_conversations as usize;
    let mut agents: Vec<usize> = if curve { scale.e_agents.clone() } else { Vec::new() };
    if !agents.contains(&all) {
        agents.push(all);
    }
    let mut keeps = true;
    for agents in agents {
        let dir = fresh_dir(run_dir, &format!("e-{agents}"))?;
        let (point, kept) = run_point(kind, &dir, scale.b_conversations, scale.b_turns, agents).await?;
        keeps &= kept;
        remove(&dir)?;
        if agents == all {
            out.metrics.insert(key::E_MAIN_RATE.into(), point.msgs_per_s);
            out.metrics.insert(key::E_MAIN_MEDIAN.into(), point.median_us);
            out.metrics.insert(key::E_MAIN_P99.into(), point.p99_us);
        }
        out.e_curve.push(point);
    }
    let large = scale.e_large_conversations;
    let dir = fresh_dir(run_dir, "e-large")?;
    let (point, kept) = run_point(kind, &dir, large, scale.e_large_turns, large as usize).await?;
    keeps &= kept;
    remove(&dir)?;
    out.metrics.insert(key::E_LARGE_RATE.into(), point.msgs_per_s);
    out.metrics.insert(key::E_LARGE_MEDIAN.into(), point.median_us);
    out.metrics.insert(key::E_LARGE_P99.into(), point.p99_us);
    out.e_curve.push(point);
    let check = "E: every conversation of every point read back equal";
    out.checks.push(if keeps { check.into() } else { format!("{check} (skipped: the store keeps nothing)") });
    Ok(())
}

/// What the agent tasks share: conversation ids and their prepared turns, taken once each.
struct Work<I> {
    ids: Vec<String>,
    turns: Vec<std::sync::Mutex<Vec<Vec<I>>>>,
    next: AtomicUsize,
}

impl<I> Work<I> {
    /// Takes the next untouched conversation: its index and its turns.
    fn take(&self) -> Result<Option<(usize, Vec<Vec<I>>)>> {
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = self.turns.get(index) else { return Ok(None) };
        let turns = std::mem::take(&mut *slot.lock().map_err(|_| BenchError::Task("work slot poisoned".into()))?);
        Ok(Some((index, turns)))
    }
}

/// One point: a fresh store, `conversations × turns`, `agents` concurrent tasks; also
/// tells whether the store keeps messages (whether the read-back checks were made).
pub async fn run_point<K: StoreKind>(
    kind: &K,
    dir: &Path,
    conversations: u32,
    turns: u32,
    agents: usize,
) -> Result<(CurvePoint, bool)> {
    let store = Arc::new(kind.open(dir, OpenFor::Concurrent { agents }).await?);
    let ids: Vec<String> = (0..conversations).map(conv_id).collect();
    for id in &ids {
        store.open_conversation(id).await?;
    }
    let mut prepared = Vec::with_capacity(ids.len());
    for c in 0..conversations {
        let batches = (0..turns)
            .map(|t| turn(c, t).iter().map(|m| store.prepare(m)).collect::<Result<Vec<_>>>())
            .collect::<Result<Vec<_>>>()?;
        prepared.push(std::sync::Mutex::new(batches));
    }
    let work = Arc::new(Work { ids, turns: prepared, next: AtomicUsize::new(0) });
    let barrier = Arc::new(Barrier::new(agents + 1));
    let mut tasks = Vec::with_capacity(agents);
    for _ in 0..agents {
        let (store, work, barrier) = (store.clone(), work.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let began = Instant::now();
            let mut times = Vec::new();
            while let Some((index, batches)) = work.take()? {
                let conv = &work.ids[index];
                for batch in batches {
                    let start = Instant::now();
                    store.append(conv, batch).await?;
                    times.push(elapsed_ns(start));
                }
            }
            Ok::<_, BenchError>((began, Instant::now(), times))
        }));
    }
    barrier.wait().await;
    // The wall clock spans the earliest task start to the latest task end, as the tasks saw
    // them: the driver's own scheduling after the release cannot shorten or stretch it.
    let (mut first, mut last, mut times) = (None::<Instant>, None::<Instant>, Vec::new());
    for task in tasks {
        let (began, ended, mine) = task.await.map_err(|e| BenchError::Task(e.to_string()))??;
        first = Some(first.map_or(began, |f| f.min(began)));
        last = Some(last.map_or(ended, |l| l.max(ended)));
        times.extend(mine);
    }
    let wall = match (first, last) {
        (Some(first), Some(last)) => u64::try_from(last.duration_since(first).as_nanos()).unwrap_or(u64::MAX),
        _ => 0,
    };

    for c in 0..conversations {
        let got = store.load_all(&conv_id(c)).await?;
        Checks::equal(store.as_ref(), &format!("E {}", conv_id(c)), &got, &conversation(c, turns * TURN))?;
    }
    let latency = Latency::of_ns(&times);
    let messages = (conversations * turns * TURN) as usize;
    let store = Arc::into_inner(store).ok_or_else(|| BenchError::Task("store still shared after phase E".into()))?;
    let keeps = store.keeps_messages();
    store.close().await?;
    let point = CurvePoint {
        agents,
        conversations: conversations as usize,
        msgs_per_s: per_second(messages, wall).unwrap_or(0.0),
        median_us: latency.median_us,
        p99_us: latency.p99_us,
    };
    Ok((point, keeps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::{Durability, NativeKind};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_point_replays_every_turn_once() {
        let dir = tempfile::tempdir().unwrap();
        let kind = NativeKind { durability: Durability::Normal, e_pool: 2 };
        let (point, checked) = run_point(&kind, dir.path(), 6, 3, 4).await.unwrap();
        assert!(checked);
        assert_eq!((point.agents, point.conversations), (4, 6));
        assert!(point.msgs_per_s > 0.0);
    }
}

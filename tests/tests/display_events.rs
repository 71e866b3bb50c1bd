//! The display event stream: every persisted change reaches every subscriber
//! exactly once, in order per conversation; failures emit nothing and leave
//! nothing, wherever in the adapter's write they strike; a change whose caller
//! stops waiting still completes and is announced once; without persistence,
//! events still flow.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use stowage::{
    Builtin, Display, DisplayContext, DisplayEvent, DisplayOptions, Error, NewMessage, Part, Role, Scope, SqlFault,
    Store, StoreConfig, ToolInfo, ToolStatus,
};
use stowage_tests::shared_runtime;
use tokio::sync::broadcast;

fn calling(call_id: &str) -> NewMessage {
    NewMessage::new(Role::Assistant, vec![Part::text("working"), Part::tool_call(call_id, "tool", "{}")])
}

/// Receives exactly `n` events, then checks that nothing else arrives.
async fn receive(rx: &mut broadcast::Receiver<DisplayEvent>, n: usize) -> anyhow::Result<Vec<DisplayEvent>> {
    let mut events = Vec::with_capacity(n);
    while events.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .with_context(|| format!("only {} of {n} events arrived", events.len()))??;
        events.push(event);
    }
    ensure!(matches!(rx.try_recv(), Err(broadcast::error::TryRecvError::Empty)), "more events than changes");
    Ok(events)
}

fn nothing_emitted(rx: &mut broadcast::Receiver<DisplayEvent>, what: &str) -> anyhow::Result<()> {
    match rx.try_recv() {
        Err(broadcast::error::TryRecvError::Empty) => Ok(()),
        other => bail!("{what} emitted an event: {other:?}"),
    }
}

async fn sqlite_display(dir: &std::path::Path) -> anyhow::Result<(Store, Display)> {
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir)).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    Ok((store, display))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_subscriber_sees_every_change_once_in_order_per_conversation() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (_store, display) = sqlite_display(dir.path()).await?;
    let mut subscribers: Vec<_> = (0..3).map(|_| display.subscribe()).collect();
    let scope = Scope::new("t", "u");

    // 4 conversations × 3 concurrent callers, each saving a message with a tool
    // call and walking the card to completed: 2 saved + 2 updated events each.
    let mut tasks = Vec::new();
    for caller in 0..12 {
        let (display, scope) = (display.clone(), scope.clone());
        tasks.push(tokio::spawn(async move {
            let ctx = DisplayContext::new(Some("agent"), format!("c{}", caller % 4));
            let call = format!("call-{caller}");
            display.save_message(&scope, &calling(&call), &ctx).await?;
            display.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new(&call), &ctx).await?;
            display.update_tool_status(&scope, ToolStatus::Completed, ToolInfo::new(&call).result("ok"), &ctx).await?;
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }

    for (i, rx) in subscribers.iter_mut().enumerate() {
        let events = receive(rx, 12 * 4).await.with_context(|| format!("subscriber {i}"))?;
        let mut seen = HashSet::new();
        let mut last_saved: BTreeMap<String, u64> = BTreeMap::new();
        let mut card_history: BTreeMap<String, Vec<ToolStatus>> = BTreeMap::new();
        for event in &events {
            let record = event.record();
            let key = (
                record.conversation_id.clone(),
                record.seq,
                format!("{:?}", record.status),
                matches!(event, DisplayEvent::DisplayMessageSaved { .. }),
            );
            ensure!(seen.insert(key), "subscriber {i} got an event twice: {event:?}");
            if let DisplayEvent::DisplayMessageSaved { .. } = event {
                let last = last_saved.entry(record.conversation_id.clone()).or_default();
                ensure!(
                    record.seq == *last + 1,
                    "subscriber {i}: {} saved seq {} after {last}",
                    record.conversation_id,
                    record.seq
                );
                *last = record.seq;
            }
            if let (Some(call), Some(status)) = (&record.tool_call_id, record.status) {
                card_history.entry(call.clone()).or_default().push(status);
            }
        }
        for (call, history) in card_history {
            ensure!(
                history == [ToolStatus::Pending, ToolStatus::Executing, ToolStatus::Completed],
                "{call}: {history:?}"
            );
        }
        ensure!(last_saved.values().all(|&last| last == 6), "every conversation has 6 records: {last_saved:?}");
    }
    Ok(())
}

/// `Error::Storage` carrying the injected SQL failure, and its reason.
fn injected<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> anyhow::Result<Option<String>> {
    match result {
        Err(Error::Storage(reason)) if reason.contains("injected") => Ok(Some(reason)),
        Ok(_) => Ok(None),
        Err(other) => bail!("{what}: expected the injected storage failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_changes_emit_nothing_and_leave_nothing_wherever_the_fault_strikes() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (store, display) = sqlite_display(dir.path()).await?;
    let mut rx = display.subscribe();
    let scope = Scope::new("t", "u");
    let ctx = DisplayContext::new(None, "c");
    display.save_message(&scope, &calling("call-1"), &ctx).await?;
    receive(&mut rx, 2).await?;
    let count = |display: &Display| {
        let (display, scope) = (display.clone(), scope.clone());
        async move { anyhow::Ok(display.list(&scope, "c", 0, 100).await?.records) }
    };

    let bad_ctx = DisplayContext::new(None, "bad\0id");
    match display.save_message(&scope, &calling("x"), &bad_ctx).await {
        Err(Error::InvalidInput(_)) => {}
        other => bail!("a bad conversation id must be invalid input: {other:?}"),
    }
    let forbidden = display.update_tool_status(&scope, ToolStatus::Completed, ToolInfo::new("call-1"), &ctx).await;
    ensure!(matches!(forbidden, Err(Error::InvalidTransition { .. })), "{forbidden:?}");
    let noop = display.update_tool_status(&scope, ToolStatus::Pending, ToolInfo::new("call-1"), &ctx).await?;
    ensure!(!noop.changed);
    nothing_emitted(&mut rx, "a refused or no-op change")?;

    // Fail the k-th SQL statement of a save, for k = 0, 1, … until the save needs
    // fewer statements than k and succeeds: every statement it runs is hit once.
    let mut failures: Vec<(u32, String)> = Vec::new();
    let mut statements = None;
    for k in 0..64 {
        store.inject_sql_failure_after(k)?;
        let saved = display.save_message(&scope, &calling("call-2"), &ctx).await;
        match injected(saved, &format!("save with statement {k} failing"))? {
            Some(reason) => {
                nothing_emitted(&mut rx, &format!("the save failed at statement {k}"))?;
                let left = count(&display).await?;
                ensure!(left.len() == 2, "the save failed at statement {k} but left records: {left:?}");
                failures.push((k, reason));
            }
            None => {
                store.disarm_sql_fault();
                statements = Some(k);
                break;
            }
        }
    }
    let n = statements.context("the save never succeeded")?;
    println!("a save ran {n} statements; failures: {failures:#?}");
    ensure!(failures.iter().map(|(k, _)| *k).eq(0..n), "every statement's failure must fail the save: {failures:?}");
    // The save's last two statements store the records and commit them: the
    // faults there struck after the adapter had started writing.
    let reason = |k: u32| failures.get(k as usize).map(|(_, r)| r.as_str()).unwrap_or_default();
    ensure!(
        n >= 3 && reason(n - 2).contains("storing the records") && reason(n - 1).contains("committing"),
        "no fault struck mid-write: {failures:?}"
    );
    let saved = receive(&mut rx, 2).await?;
    ensure!(saved.iter().all(|e| matches!(e, DisplayEvent::DisplayMessageSaved { .. })), "{saved:?}");
    ensure!(count(&display).await?.len() == 4, "the successful save stored its two records once");

    // The same for a status update (its write is one statement after the read).
    let mut update_failures = 0;
    for k in 0..64 {
        store.inject_sql_failure_after(k)?;
        let update = display.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new("call-1"), &ctx).await;
        match injected(update, &format!("update with statement {k} failing"))? {
            Some(_) => {
                nothing_emitted(&mut rx, &format!("the update failed at statement {k}"))?;
                let card = count(&display).await?.into_iter().find(|r| r.tool_call_id.as_deref() == Some("call-1"));
                ensure!(card.and_then(|c| c.status) == Some(ToolStatus::Pending), "a failed update changed the card");
                update_failures += 1;
            }
            None => {
                store.disarm_sql_fault();
                break;
            }
        }
    }
    ensure!(update_failures >= 2, "the update's read and its write were both hit: {update_failures}");
    match &receive(&mut rx, 1).await?[..] {
        [DisplayEvent::DisplayMessageUpdated { record, .. }] => ensure!(record.status == Some(ToolStatus::Executing)),
        other => bail!("one update event expected: {other:?}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_caller_stops_waiting_completes_and_is_announced_once() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (store, display) = sqlite_display(dir.path()).await?;
    let mut rx = display.subscribe();
    let scope = Scope::new("t", "u");
    let ctx = DisplayContext::new(Some("agent"), "c");
    display.save_message(&scope, &calling("call-0"), &ctx).await?;
    receive(&mut rx, 2).await?;
    let stall = SqlFault::Stall(Duration::from_secs(2));

    // The caller gives up while the adapter's first statement stalls.
    store.inject_sql_fault(0, stall)?;
    let message = calling("call-1");
    let cancelled = tokio::time::timeout(Duration::from_millis(20), display.save_message(&scope, &message, &ctx));
    ensure!(cancelled.await.is_err(), "the save finished before its caller gave up: nothing was cancelled");
    let saved = receive(&mut rx, 2).await?;
    let seqs: Vec<u64> = saved.iter().map(|e| e.record().seq).collect();
    ensure!(seqs == [3, 4], "the cancelled save's records: {saved:?}");
    ensure!(saved.iter().all(|e| matches!(e, DisplayEvent::DisplayMessageSaved { .. })), "{saved:?}");

    // The same for an update whose future is dropped while it runs.
    store.inject_sql_fault(0, stall)?;
    let update = display.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new("call-1"), &ctx);
    ensure!(tokio::time::timeout(Duration::from_millis(20), update).await.is_err(), "the update was not cancelled");
    match &receive(&mut rx, 1).await?[..] {
        [DisplayEvent::DisplayMessageUpdated { record, .. }] => {
            ensure!(record.tool_call_id.as_deref() == Some("call-1") && record.status == Some(ToolStatus::Executing))
        }
        other => bail!("one update event expected: {other:?}"),
    }

    // Later changes of the conversation wait for it (they take its lock), and
    // nothing was announced twice.
    let records = display.list(&scope, "c", 0, 100).await?.records;
    ensure!(records.len() == 4, "{records:?}");
    ensure!(records[3].status == Some(ToolStatus::Executing), "the update was stored: {:?}", records[3]);
    nothing_emitted(&mut rx, "a completed cancelled change, a second time")?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_persistence_events_still_flow_and_nothing_is_stored() -> anyhow::Result<()> {
    let display = Display::ephemeral(DisplayOptions::default());
    ensure!(!display.is_persistent());
    let mut rx = display.subscribe();
    let scope = Scope::new("t", "u");
    let ctx = DisplayContext::new(Some("agent"), "c");
    let saved = display.save_message(&scope, &calling("call-1"), &ctx).await?;
    ensure!(saved.iter().map(|r| r.seq).eq(1..=2), "ephemeral seqs {saved:?}");
    display.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new("call-1"), &ctx).await?;
    display.update_tool_status(&scope, ToolStatus::Interrupted, ToolInfo::new("call-1"), &ctx).await?;
    match display.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new("call-1"), &ctx).await {
        Err(Error::InvalidTransition { from: ToolStatus::Interrupted, to: ToolStatus::Executing }) => {}
        other => bail!("transitions must be validated without persistence too: {other:?}"),
    }
    display.resolve_tool_result(&scope, "call-1", "done", &ctx).await?;
    let events = receive(&mut rx, 5).await?;
    let statuses: Vec<_> = events.iter().filter_map(|e| e.record().status).collect();
    ensure!(
        statuses == [ToolStatus::Pending, ToolStatus::Executing, ToolStatus::Interrupted, ToolStatus::Completed],
        "{statuses:?}"
    );
    ensure!(display.list(&scope, "c", 0, 10).await?.records.is_empty(), "ephemeral display stored records");
    let next = display.save_message(&scope, &NewMessage::text(Role::User, "more"), &ctx).await?;
    ensure!(next[0].seq == 3, "numbering continues: {}", next[0].seq);
    match display.update_tool_status(&scope, ToolStatus::Failed, ToolInfo::new("call-1"), &ctx).await {
        Err(Error::NotFound) => Ok(()),
        other => bail!("a finished ephemeral card is forgotten: expected not-found, got {other:?}"),
    }
}

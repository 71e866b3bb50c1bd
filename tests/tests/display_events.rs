//! The display event stream: every persisted change reaches every subscriber
//! exactly once, in order per conversation; failures emit nothing; without
//! persistence, events still flow.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use stowage::{
    Builtin, Display, DisplayContext, DisplayEvent, DisplayOptions, Error, NewMessage, Part, Role, Scope, StoreConfig,
    ToolInfo, ToolStatus,
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_subscriber_sees_every_change_once_in_order_per_conversation() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path())).await?;
    let display = Display::persistent(store, DisplayOptions::default());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_changes_emit_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, dir.path())).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let mut rx = display.subscribe();
    let scope = Scope::new("t", "u");
    let ctx = DisplayContext::new(None, "c");
    display.save_message(&scope, &calling("call-1"), &ctx).await?;
    receive(&mut rx, 2).await?;

    let bad_ctx = DisplayContext::new(None, "bad\0id");
    ensure!(matches!(display.save_message(&scope, &calling("x"), &bad_ctx).await, Err(Error::InvalidInput(_))));
    store.inject_sql_failure_after(0)?;
    ensure!(
        display.save_message(&scope, &calling("call-2"), &ctx).await.is_err(),
        "the injected failure did not fail the save"
    );
    store.inject_sql_failure_after(0)?;
    let update = display.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new("call-1"), &ctx).await;
    ensure!(update.is_err(), "the injected failure did not fail the update");
    let forbidden = display.update_tool_status(&scope, ToolStatus::Completed, ToolInfo::new("call-1"), &ctx).await;
    ensure!(matches!(forbidden, Err(Error::InvalidTransition { .. })), "{forbidden:?}");
    let noop = display.update_tool_status(&scope, ToolStatus::Pending, ToolInfo::new("call-1"), &ctx).await?;
    ensure!(!noop.changed);
    ensure!(
        matches!(rx.try_recv(), Err(broadcast::error::TryRecvError::Empty)),
        "a failed or no-op change emitted an event"
    );
    ensure!(display.list(&scope, "c", 0, 10).await?.records.len() == 2, "a failed save left records");
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
    expect_gone(display.update_tool_status(&scope, ToolStatus::Failed, ToolInfo::new("call-1"), &ctx).await)?;
    Ok(())
}

/// A finished card is forgotten by the ephemeral display: updating it is not-found.
fn expect_gone<T: std::fmt::Debug>(result: Result<T, Error>) -> anyhow::Result<()> {
    match result {
        Err(Error::NotFound) => Ok(()),
        other => bail!("expected not-found for a finished ephemeral card, got {other:?}"),
    }
}

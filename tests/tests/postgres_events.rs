//! Display events across hosts: three hosts on one PostgreSQL schema (each its
//! own runtime, store, connection pool and display; they share only the
//! database and the keys) change the same conversations concurrently.
//!
//! - A subscriber on any host receives every change made through every host,
//!   exactly once; per conversation, saved records arrive in seq order and each
//!   tool card's statuses in lifecycle order.
//! - Every host's subscribers see the same events in the same order.
//! - Journal entries that are forged, altered or replayed (by anyone who can
//!   write the schema, an adapter's SQL included) are dropped; with `seal =
//!   true` the journal holds no plaintext.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, ensure};
use stowage::{
    Builtin, Display, DisplayContext, DisplayEvent, DisplayOptions, Integrity, KeySource, NewMessage, Part, Role,
    Scope, SqlTarget, Store, StoreConfig, ToolInfo, ToolStatus,
};
use stowage_tests::fresh_runtime;
use stowage_tests::postgres::{self as pg, Schema};
use tokio::sync::broadcast;

/// The keys every host shares (a test key, not a secret).
const KEYS: &str = "1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const HOSTS: usize = 3;
const CONVERSATIONS: usize = 3;
const CALLS_PER_HOST: usize = 4;

async fn host(url: &str, dir: &Path, seal: bool) -> anyhow::Result<(Store, Display)> {
    let mut config = StoreConfig::builtin(Builtin::Sqlite, dir).with_keys(KeySource::Inline(KEYS.into()));
    config.sql = SqlTarget { url: Some(url.to_owned()) };
    config.integrity = Integrity { seal, ..Integrity::default() };
    let store = fresh_runtime()?.open_store(config).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    ensure!(display.is_shared(), "a store on a database server shares its display events");
    Ok((store, display))
}

fn calling(call_id: &str, words: &str) -> NewMessage {
    NewMessage::new(Role::Assistant, vec![Part::text(words), Part::tool_call(call_id, "tool", "{}")])
}

async fn receive(rx: &mut broadcast::Receiver<DisplayEvent>, n: usize, who: &str) -> anyhow::Result<Vec<DisplayEvent>> {
    let mut events = Vec::with_capacity(n);
    while events.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .with_context(|| format!("{who}: only {} of {n} events arrived", events.len()))??;
        events.push(event);
    }
    Ok(events)
}

/// Nothing more arrives within a few poll intervals.
async fn quiet(rx: &mut broadcast::Receiver<DisplayEvent>, who: &str) -> anyhow::Result<()> {
    match tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
        Err(_) => Ok(()),
        Ok(other) => anyhow::bail!("{who}: more events than changes: {other:?}"),
    }
}

/// One change through `display` (a change waits until the host's relay reads
/// the journal, so the host sees every change journaled after this one).
async fn warm_up(display: &Display, who: &str) -> anyhow::Result<()> {
    let ctx = DisplayContext::new(None, format!("warm-{who}"));
    let message = NewMessage::new(Role::User, vec![Part::text("hello")]);
    display.save_message(&Scope::new("t", "u"), &message, &ctx).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_host_sees_every_hosts_changes_once_in_order() -> anyhow::Result<()> {
    if !pg::available("every_host_sees_every_hosts_changes_once_in_order")? {
        return Ok(());
    }
    let schema = Schema::create("events")?;
    let dir = tempfile::tempdir()?;
    let mut hosts = Vec::new();
    for h in 0..HOSTS {
        hosts.push(host(&schema.url, &dir.path().join(format!("host-{h}")), false).await?);
    }
    let mut receivers: Vec<_> = hosts.iter().map(|(_, d)| d.subscribe()).collect();
    for (h, (_, display)) in hosts.iter().enumerate() {
        warm_up(display, &format!("host {h}")).await?;
    }
    // Every host was reading the journal before the last warm-up: drop the
    // warm-ups up to and including it.
    let last = format!("warm-host {}", HOSTS - 1);
    for (h, rx) in receivers.iter_mut().enumerate() {
        loop {
            let event = receive(rx, 1, &format!("host {h} warm-ups")).await?;
            if event[0].record().conversation_id == last {
                break;
            }
        }
    }

    // Each host saves calls on every conversation and walks each card to
    // completed: 2 saved + 2 updated events per call.
    let scope = Scope::new("t", "u");
    let mut tasks = Vec::new();
    for (h, (_, display)) in hosts.iter().enumerate() {
        for n in 0..CALLS_PER_HOST {
            let (display, scope) = (display.clone(), scope.clone());
            tasks.push(tokio::spawn(async move {
                let ctx = DisplayContext::new(Some("agent"), format!("c{}", n % CONVERSATIONS));
                let call = format!("h{h}-call-{n}");
                display.save_message(&scope, &calling(&call, "working"), &ctx).await?;
                display.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new(&call), &ctx).await?;
                display
                    .update_tool_status(&scope, ToolStatus::Completed, ToolInfo::new(&call).result("ok"), &ctx)
                    .await?;
                anyhow::Ok(())
            }));
        }
    }
    for task in tasks {
        task.await??;
    }

    let expected = HOSTS * CALLS_PER_HOST * 4;
    let mut orders = Vec::new();
    for (h, rx) in receivers.iter_mut().enumerate() {
        let who = format!("host {h}");
        let events = receive(rx, expected, &who).await?;
        quiet(rx, &who).await?;
        check_order(&events, &who)?;
        orders.push(events);
    }
    for (h, order) in orders.iter().enumerate().skip(1) {
        ensure!(order == &orders[0], "host {h} saw the events in another order than host 0");
    }
    Ok(())
}

/// Exactly once; saved seqs contiguous per conversation; each card's statuses in
/// lifecycle order; every host's calls present.
fn check_order(events: &[DisplayEvent], who: &str) -> anyhow::Result<()> {
    let mut seen = HashSet::new();
    let mut last_saved: BTreeMap<String, u64> = BTreeMap::new();
    let mut cards: BTreeMap<String, Vec<ToolStatus>> = BTreeMap::new();
    for event in events {
        let record = event.record();
        let saved = matches!(event, DisplayEvent::DisplayMessageSaved { .. });
        let key = (record.conversation_id.clone(), record.seq, format!("{:?}", record.status), saved);
        ensure!(seen.insert(key), "{who} got an event twice: {event:?}");
        if saved {
            let last = last_saved.entry(record.conversation_id.clone()).or_default();
            ensure!(record.seq == *last + 1, "{who}: {} saved seq {} after {last}", record.conversation_id, record.seq);
            *last = record.seq;
        }
        if let (Some(call), Some(status)) = (&record.tool_call_id, record.status) {
            cards.entry(call.clone()).or_default().push(status);
        }
    }
    ensure!(cards.len() == HOSTS * CALLS_PER_HOST, "{who}: cards of {} calls", cards.len());
    for (call, history) in cards {
        ensure!(
            history == [ToolStatus::Pending, ToolStatus::Executing, ToolStatus::Completed],
            "{who}: {call}: {history:?}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_altered_and_replayed_journal_entries_are_dropped() -> anyhow::Result<()> {
    if !pg::available("forged_altered_and_replayed_journal_entries_are_dropped")? {
        return Ok(());
    }
    let schema = Schema::create("forged_events")?;
    let dir = tempfile::tempdir()?;
    let (_a_store, a) = host(&schema.url, &dir.path().join("a"), true).await?;
    let (_b_store, b) = host(&schema.url, &dir.path().join("b"), true).await?;
    let mut rx = a.subscribe();
    warm_up(&a, "a").await?;
    warm_up(&b, "b").await?;
    receive(&mut rx, 2, "a warm-ups").await?;
    let scope = Scope::new("t", "u");
    let ctx = DisplayContext::new(None, "c");
    b.save_message(&scope, &calling("call-1", "confidential-words"), &ctx).await?;
    let genuine = receive(&mut rx, 2, "a").await?;

    // The journal holds ciphertext only.
    let journal = format!("{}.stowage_display_journal", schema.name);
    let plain = pg::admin_rows(&format!(
        "SELECT count(*) FROM {journal} WHERE position('confidential-words'::bytea IN payload) > 0"
    ))?;
    ensure!(plain == vec![vec![Some("0".to_owned())]], "plaintext in the journal: {plain:?}");

    // A replay of the newest entry, an altered copy, one moved to another
    // conversation, and one with a forged tag.
    let columns = "origin, counter, tenant, user_id, conversation_id, payload, tag";
    let newest = format!("FROM {journal} WHERE id = (SELECT max(id) FROM {journal})");
    pg::admin(&format!(
        "INSERT INTO {journal} ({columns}) SELECT {columns} {newest};
         INSERT INTO {journal} ({columns}) SELECT origin, counter + 1, tenant, user_id, conversation_id, payload, tag {newest};
         INSERT INTO {journal} ({columns}) SELECT origin, counter + 2, tenant, user_id, 'other', payload, tag {newest};
         INSERT INTO {journal} ({columns}) SELECT origin, counter + 3, tenant, user_id, conversation_id, \
             overlay(payload placing '\\x00'::bytea from 40 for 1), tag {newest};
         INSERT INTO {journal} ({columns}) SELECT 'forger', 1, tenant, user_id, conversation_id, payload, \
             '\\x01000000010000000000000000000000000000000000'::bytea {newest};"
    ))?;
    b.update_tool_status(&scope, ToolStatus::Executing, ToolInfo::new("call-1"), &ctx).await?;
    let next = receive(&mut rx, 1, "a").await?;
    match &next[0] {
        DisplayEvent::DisplayMessageUpdated { record, .. } if record.status == Some(ToolStatus::Executing) => {}
        other => anyhow::bail!("after the forgeries, expected the genuine update, got {other:?} (after {genuine:?})"),
    }
    quiet(&mut rx, "a").await?;
    Ok(())
}

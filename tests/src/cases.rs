//! The cases of the catalogue. Each states the guarantee it checks.

use anyhow::{Context, bail, ensure};
use stowage::{
    ConversationMeta, Display, DisplayContext, DisplayOptions, DisplayRecord, Error, JsonText, LoadRequest,
    MediaSource, Message, NewMessage, OrphanPolicy, Part, Role, Scope, StopReason, Store, SyntheticMessage, ToolInfo,
    ToolStatus, Usage,
};

use crate::{Case, CaseFuture, Ctx, FaultInjector};

macro_rules! catalogue {
    ($($name:ident),* $(,)?) => {
        /// Every case name, in catalogue order.
        pub const NAMES: &[&str] = &[$(stringify!($name)),*];

        /// The catalogue.
        pub fn catalogue() -> Vec<Case> {
            vec![$(Case { name: stringify!($name), run: |ctx| -> CaseFuture<'_> { Box::pin($name(ctx)) } }),*]
        }
    };
}

catalogue!(
    open_is_idempotent,
    missing_conversation_is_not_found,
    seqs_are_contiguous_and_ordered,
    append_is_idempotent_by_message_id,
    expected_version_conflicts,
    batch_rejected_by_validation_stores_nothing,
    batch_is_atomic_under_storage_faults,
    recent_n_in_chronological_order,
    paging_by_cursor_visits_every_message_once,
    invalid_cursors_are_refused,
    truncate_and_pop_last,
    replace_renumbers_history,
    delete_is_idempotent_and_isolated,
    list_is_scoped_ordered_and_paginated,
    scopes_are_isolated,
    unicode_and_one_mebibyte_messages,
    hostile_ids_are_rejected_or_stored_safely,
    every_part_type_round_trips_exactly,
    data_survives_a_host_restart,
    null_accepts_writes_and_keeps_nothing,
    display_splits_a_message_into_ordered_records,
    display_lifecycle_allows_exactly_the_documented_moves,
    display_repeats_are_noops_and_unknown_calls_are_not_found,
    display_metadata_merges_and_resolve_completes_an_interrupt,
    display_synthetic_records,
    display_scopes_are_isolated,
    display_sweep_interrupts_cards_left_by_a_crash,
    display_records_are_deleted_with_their_conversation,
    orphaned_tool_calls_are_repaired_on_load,
    cuts_never_separate_a_tool_call_from_its_result,
);

/// Cases that also apply to the null adapter.
pub const APPLY_TO_NULL: &[&str] = &[
    "batch_rejected_by_validation_stores_nothing",
    "invalid_cursors_are_refused",
    "null_accepts_writes_and_keeps_nothing",
];

fn scope() -> Scope {
    Scope::new("tenant-a", "user-1")
}

fn other_scope() -> Scope {
    Scope::new("tenant-b", "user-1")
}

fn text(role: Role, id: &str, body: &str) -> NewMessage {
    NewMessage::text(role, body).with_id(id)
}

/// `n` messages with ids `{prefix}{i}` and distinct bodies.
fn numbered(prefix: &str, n: usize) -> Vec<NewMessage> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            text(role, &format!("{prefix}{i}"), &format!("message {prefix}{i}"))
        })
        .collect()
}

async fn opened(store: &Store, scope: &Scope, id: &str) -> anyhow::Result<()> {
    store.open(scope, id, ConversationMeta::default()).await.with_context(|| format!("opening {id}"))?;
    Ok(())
}

async fn all_messages(store: &Store, scope: &Scope, id: &str) -> anyhow::Result<Vec<Message>> {
    Ok(store.load(scope, id, LoadRequest::after(0, 1000)).await?.messages)
}

fn seqs(messages: &[Message]) -> Vec<u64> {
    messages.iter().map(|m| m.seq).collect()
}

fn ids(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.id.clone()).collect()
}

fn expect_not_found<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> anyhow::Result<()> {
    match result {
        Err(Error::NotFound) => Ok(()),
        other => bail!("{what}: expected not-found, got {other:?}"),
    }
}

/// open (find-or-create) is idempotent: the second open returns the first's info.
async fn open_is_idempotent(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    let meta = ConversationMeta {
        agent_id: Some("agent-7".into()),
        title: Some("Trip planning".into()),
        metadata: Some(JsonText::parse(r#"{"channel": "web",  "n": 1.50}"#)?),
    };
    let first = s.open(&scope(), "c", meta.clone()).await?;
    ensure!(first.meta == meta, "meta not kept: {:?}", first.meta);
    ensure!(
        first.message_count == 0 && first.last_seq == 0 && first.version == 0,
        "new conversation not empty: {first:?}"
    );
    let second = s.open(&scope(), "c", ConversationMeta { title: Some("other".into()), ..Default::default() }).await?;
    ensure!(second == first, "second open changed the conversation: {second:?} vs {first:?}");
    ensure!(s.info(&scope(), "c").await? == first, "info differs from open");
    Ok(())
}

/// A conversation that was never opened is `not-found` everywhere.
async fn missing_conversation_is_not_found(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    expect_not_found(s.info(&scope(), "nope").await, "info")?;
    expect_not_found(s.load(&scope(), "nope", LoadRequest::latest(10)).await, "load")?;
    expect_not_found(s.append(&scope(), "nope", numbered("m", 1), None).await, "append")?;
    expect_not_found(s.truncate_after(&scope(), "nope", 0, None).await, "truncate")?;
    ensure!(!s.delete(&scope(), "nope").await?, "delete of a missing conversation reported a deletion");
    Ok(())
}

/// Seqs are contiguous from 1, in append order, across batches.
async fn seqs_are_contiguous_and_ordered(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    let mut expected_ids = Vec::new();
    let mut next = 1;
    for (batch, size) in [1usize, 3, 5, 2].into_iter().enumerate() {
        let messages = numbered(&format!("b{batch}-"), size);
        expected_ids.extend(messages.iter().filter_map(|m| m.id.clone()));
        let out = s.append(&scope(), "c", messages, None).await?;
        let want: Vec<u64> = (next..next + size as u64).collect();
        ensure!(out.seqs == want, "batch {batch}: seqs {:?}, want {want:?}", out.seqs);
        ensure!(out.stored as usize == size, "batch {batch}: stored {}", out.stored);
        next += size as u64;
    }
    let all = all_messages(s, &scope(), "c").await?;
    ensure!(seqs(&all) == (1..next).collect::<Vec<_>>(), "loaded seqs {:?}", seqs(&all));
    ensure!(ids(&all) == expected_ids, "loaded order differs from append order");
    let info = s.info(&scope(), "c").await?;
    ensure!(info.message_count == next - 1 && info.last_seq == next - 1 && info.version == 4, "info {info:?}");
    Ok(())
}

/// A message id already stored is not stored twice and keeps its seq; a retry of
/// an acknowledged batch succeeds with the same seqs even with a stale version.
async fn append_is_idempotent_by_message_id(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    let batch = vec![text(Role::User, "a", "first"), text(Role::Assistant, "b", "second")];
    let first = s.append(&scope(), "c", batch.clone(), Some(0)).await?;
    let retry = s.append(&scope(), "c", batch, Some(0)).await?;
    ensure!(
        retry.seqs == first.seqs && retry.stored == 0 && retry.version == first.version,
        "retry {retry:?} vs {first:?}"
    );
    let mixed =
        s.append(&scope(), "c", vec![text(Role::User, "b", "changed"), text(Role::User, "c", "third")], None).await?;
    ensure!(mixed.seqs == vec![2, 3] && mixed.stored == 1, "mixed batch {mixed:?}");
    let all = all_messages(s, &scope(), "c").await?;
    ensure!(ids(&all) == ["a", "b", "c"], "ids {:?}", ids(&all));
    ensure!(all[1].parts == vec![Part::text("second")], "a duplicate overwrote the original");
    Ok(())
}

/// `expected_version` guards against lost updates; a conflicting append stores nothing.
async fn expected_version_conflicts(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    let out = s.append(&scope(), "c", numbered("x", 2), Some(0)).await?;
    ensure!(out.version == 1, "version after first append: {}", out.version);
    match s.append(&scope(), "c", numbered("y", 2), Some(0)).await {
        Err(Error::Conflict { expected: 0, actual: 1 }) => {}
        other => bail!("stale append: expected conflict(0, 1), got {other:?}"),
    }
    match s.truncate_after(&scope(), "c", 0, Some(0)).await {
        Err(Error::Conflict { .. }) => {}
        other => bail!("stale truncate: expected conflict, got {other:?}"),
    }
    ensure!(seqs(&all_messages(s, &scope(), "c").await?) == [1, 2], "a conflicting write changed the history");
    ensure!(s.append(&scope(), "c", numbered("y", 1), Some(1)).await?.seqs == [3], "append at the current version");
    Ok(())
}

/// A batch with one invalid message (or a duplicate id) is refused whole.
async fn batch_rejected_by_validation_stores_nothing(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    let mut batch = numbered("v", 4);
    batch[2].id = Some("bad\u{0}id".into());
    match s.append(&scope(), "c", batch, None).await {
        Err(Error::InvalidInput(reason)) => {
            ensure!(reason.contains("message 2"), "reason does not name the message: {reason}")
        }
        other => bail!("expected invalid-input, got {other:?}"),
    }
    let duplicate = vec![text(Role::User, "d", "1"), text(Role::User, "e", "2"), text(Role::User, "d", "3")];
    match s.append(&scope(), "c", duplicate, None).await {
        Err(Error::InvalidInput(reason)) => {
            ensure!(reason.contains("more than once"), "reason: {reason}")
        }
        other => bail!("expected invalid-input for a duplicate id, got {other:?}"),
    }
    let mut costly = numbered("w", 1);
    costly[0].usage = Some(Usage { cost: Some(f64::NAN), ..Usage::default() });
    ensure!(matches!(s.append(&scope(), "c", costly, None).await, Err(Error::InvalidInput(_))), "NaN cost accepted");
    let info = s.info(&scope(), "c").await;
    if let Ok(info) = info {
        ensure!(info.message_count == 0 && info.version == 0, "a refused batch changed the conversation: {info:?}");
    }
    Ok(())
}

/// All messages of a batch commit or none, when storage fails part-way.
async fn batch_is_atomic_under_storage_faults(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("keep", 3), None).await?;
    let before = all_messages(s, &scope(), "c").await?;
    let info_before = s.info(&scope(), "c").await?;
    match ctx.subject.faults {
        FaultInjector::Sql => {
            // Fail the 1st, 2nd, … statement of the append until it gets through.
            let mut failures = 0;
            for k in 0..200 {
                s.inject_sql_failure_after(k)?;
                match s.append(&scope(), "c", numbered("batch", 5), None).await {
                    Err(_) => {
                        failures += 1;
                        ensure!(
                            all_messages(s, &scope(), "c").await? == before,
                            "failure after {k} statements left a partial batch"
                        );
                        ensure!(
                            s.info(&scope(), "c").await? == info_before,
                            "failure after {k} statements changed info"
                        );
                    }
                    Ok(out) => {
                        ensure!(out.seqs == [4, 5, 6, 7, 8], "seqs after recovery: {:?}", out.seqs);
                        ensure!(failures >= 5, "only {failures} injected failures hit the batch");
                        return Ok(());
                    }
                }
            }
            bail!("append never succeeded")
        }
        FaultInjector::TornFiles => {
            let log = find_file(&ctx.data_dir(), "messages.log")?;
            let intact = std::fs::read(&log)?;
            s.append(&scope(), "c", numbered("batch", 5), None).await?;
            let full = std::fs::read(&log)?;
            ensure!(full.len() > intact.len(), "the append did not grow the log");
            // Every possible torn write of the batch: the batch is absent, the rest intact.
            for cut in (intact.len()..full.len()).step_by(((full.len() - intact.len()) / 64).max(1)) {
                std::fs::write(&log, &full[..cut])?;
                let reopened = ctx.reopened_store().await?;
                let seen = all_messages(&reopened, &scope(), "c").await?;
                ensure!(seen == before, "torn at byte {cut}: {:?}", seqs(&seen));
            }
            // The next writer repairs the torn tail and continues.
            let restarted = ctx.restarted_store().await?;
            let out = restarted.append(&scope(), "c", numbered("again", 2), None).await?;
            ensure!(out.seqs == [4, 5], "append after a torn write: {:?}", out.seqs);
            ensure!(seqs(&all_messages(&restarted, &scope(), "c").await?) == [1, 2, 3, 4, 5], "history after repair");
            Ok(())
        }
        FaultInjector::None => bail!("no fault injector for this adapter"),
    }
}

fn find_file(dir: &std::path::Path, name: &str) -> anyhow::Result<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if let Ok(found) = find_file(&path, name) {
                return Ok(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Ok(path);
        }
    }
    bail!("no {name} under {}", dir.display())
}

/// "Recent N" returns the newest N in chronological order; its cursor walks back.
async fn recent_n_in_chronological_order(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("m", 25), None).await?;
    let page = s.load(&scope(), "c", LoadRequest::latest(10)).await?;
    ensure!(seqs(&page.messages) == (16..=25).collect::<Vec<_>>(), "latest 10: {:?}", seqs(&page.messages));
    let cursor = page.next_cursor.context("no cursor to older messages")?;
    let older = s.load(&scope(), "c", LoadRequest::cursor(cursor, 10)).await?;
    ensure!(seqs(&older.messages) == (6..=15).collect::<Vec<_>>(), "older page: {:?}", seqs(&older.messages));
    let oldest = s.load(&scope(), "c", LoadRequest::cursor(older.next_cursor.context("no second cursor")?, 10)).await?;
    ensure!(seqs(&oldest.messages) == (1..=5).collect::<Vec<_>>(), "oldest page: {:?}", seqs(&oldest.messages));
    ensure!(oldest.next_cursor.is_none(), "a cursor past the first message");
    let all = s.load(&scope(), "c", LoadRequest::latest(100)).await?;
    ensure!(all.messages.len() == 25 && all.next_cursor.is_none(), "latest(100) of 25");
    let before = s.load(&scope(), "c", LoadRequest::before(3, 10)).await?;
    ensure!(seqs(&before.messages) == [1, 2], "before(3): {:?}", seqs(&before.messages));
    Ok(())
}

/// Forward paging by cursor returns each message exactly once, in order.
async fn paging_by_cursor_visits_every_message_once(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("m", 23), None).await?;
    let mut seen = Vec::new();
    let mut request = LoadRequest::after(0, 7);
    let mut pages = 0;
    loop {
        let page = s.load(&scope(), "c", request).await?;
        seen.extend(seqs(&page.messages));
        pages += 1;
        ensure!(pages <= 10, "paging does not end");
        match page.next_cursor {
            Some(cursor) => request = LoadRequest::cursor(cursor, 7),
            None => break,
        }
    }
    ensure!(seen == (1..=23).collect::<Vec<_>>(), "visited {seen:?}");
    ensure!(pages == 4, "{pages} pages for 23 messages at 7 per page");
    let tail = s.load(&scope(), "c", LoadRequest::after(23, 5)).await?;
    ensure!(tail.messages.is_empty() && tail.next_cursor.is_none(), "after the last message");
    Ok(())
}

/// Malformed, edited or foreign cursors are `invalid-cursor`.
async fn invalid_cursors_are_refused(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    opened(s, &scope(), "d").await?;
    s.append(&scope(), "c", numbered("m", 5), None).await?;
    // A real cursor of conversation `d` (none exists when the adapter keeps nothing).
    let foreign = foreign_cursor(s, "d").await?;
    let mut bad_cursors = vec!["".to_owned(), "garbage".to_owned(), "m1.b3.0000000000000000".to_owned()];
    bad_cursors.extend(foreign);
    for bad in &bad_cursors {
        match s.load(&scope(), "c", LoadRequest::cursor(bad.clone(), 2)).await {
            Err(Error::InvalidCursor) => {}
            other => bail!("cursor {bad:?}: expected invalid-cursor, got {other:?}"),
        }
    }
    ensure!(
        matches!(s.list(&scope(), Some("l1.zz.00"), 5).await, Err(Error::InvalidCursor)),
        "bad list cursor accepted"
    );
    ensure!(
        matches!(s.load(&scope(), "c", LoadRequest::latest(0)).await, Err(Error::InvalidInput(_))),
        "limit 0 accepted"
    );
    Ok(())
}

/// A valid cursor of conversation `id`, after appending there.
async fn foreign_cursor(s: &Store, id: &str) -> anyhow::Result<Option<String>> {
    s.append(&scope(), id, numbered("n", 3), None).await?;
    Ok(s.load(&scope(), id, LoadRequest::latest(1)).await?.next_cursor)
}

/// truncate-after removes the tail atomically and numbering continues after it;
/// pop-last removes exactly the newest message.
async fn truncate_and_pop_last(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("m", 10), None).await?;
    let out = s.truncate_after(&scope(), "c", 6, Some(1)).await?;
    ensure!(out.removed == 4 && out.version == 2, "truncate outcome {out:?}");
    ensure!(seqs(&all_messages(s, &scope(), "c").await?) == [1, 2, 3, 4, 5, 6], "after truncate");
    let noop = s.truncate_after(&scope(), "c", 100, None).await?;
    ensure!(noop.removed == 0 && noop.version == 2, "no-op truncate {noop:?}");
    let next = s.append(&scope(), "c", vec![text(Role::User, "m9", "re-added id")], None).await?;
    ensure!(next.seqs == [7] && next.stored == 1, "a truncated id can be appended again at seq 7: {next:?}");
    let popped = s.pop_last(&scope(), "c").await?.context("pop on a non-empty conversation")?;
    ensure!(popped.seq == 7 && popped.id == "m9", "popped {popped:?}");
    ensure!(s.info(&scope(), "c").await?.last_seq == 6, "last seq after pop");
    s.truncate_after(&scope(), "c", 0, None).await?;
    ensure!(s.pop_last(&scope(), "c").await?.is_none(), "pop on an empty conversation");
    ensure!(s.info(&scope(), "c").await?.message_count == 0, "truncate to 0 left messages");
    Ok(())
}

/// replace swaps the whole history atomically and renumbers from 1.
async fn replace_renumbers_history(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("old", 5), None).await?;
    let version = s.replace(&scope(), "c", numbered("new", 3), Some(1)).await?;
    ensure!(version == 2, "version after replace: {version}");
    let all = all_messages(s, &scope(), "c").await?;
    ensure!(seqs(&all) == [1, 2, 3] && ids(&all) == ["new0", "new1", "new2"], "after replace: {:?}", ids(&all));
    let again = s.append(&scope(), "c", numbered("old", 1), None).await?;
    ensure!(again.seqs == [4] && again.stored == 1, "a replaced-away id is new again: {again:?}");
    ensure!(matches!(s.replace(&scope(), "c", vec![], Some(0)).await, Err(Error::Conflict { .. })), "stale replace");
    Ok(())
}

/// delete is idempotent and touches nothing else.
async fn delete_is_idempotent_and_isolated(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    for (sc, id) in [(scope(), "c1"), (scope(), "c2"), (other_scope(), "c1")] {
        opened(s, &sc, id).await?;
        s.append(&sc, id, numbered(id, 2), None).await?;
    }
    ensure!(s.delete(&scope(), "c1").await?, "first delete reported nothing deleted");
    ensure!(!s.delete(&scope(), "c1").await?, "second delete reported a deletion");
    expect_not_found(s.info(&scope(), "c1").await, "info after delete")?;
    expect_not_found(s.load(&scope(), "c1", LoadRequest::latest(5)).await, "load after delete")?;
    ensure!(all_messages(s, &scope(), "c2").await?.len() == 2, "sibling conversation damaged");
    ensure!(all_messages(s, &other_scope(), "c1").await?.len() == 2, "same id in another scope damaged");
    let reopened = s.open(&scope(), "c1", ConversationMeta::default()).await?;
    ensure!(reopened.message_count == 0 && reopened.version == 0, "re-created conversation is not empty: {reopened:?}");
    Ok(())
}

/// list returns exactly the scope's conversations, ordered by id, in pages.
async fn list_is_scoped_ordered_and_paginated(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    let mut mine: Vec<String> = ["k", "b", "ä", "a", "z", "m", "B"].iter().map(|x| format!("conv-{x}")).collect();
    for id in &mine {
        opened(s, &scope(), id).await?;
    }
    s.append(&scope(), "conv-m", numbered("m", 3), None).await?;
    for id in ["theirs-1", "theirs-2"] {
        opened(s, &other_scope(), id).await?;
    }
    mine.sort();
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = s.list(&scope(), cursor.as_deref(), 3).await?;
        ensure!(page.conversations.len() <= 3, "page larger than the limit");
        for c in &page.conversations {
            ensure!(c.scope == scope(), "listed a conversation of scope {:?}", c.scope);
            if c.id == "conv-m" {
                ensure!(c.message_count == 3 && c.last_seq == 3, "counts in listing: {c:?}");
            }
        }
        listed.extend(page.conversations.into_iter().map(|c| c.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    ensure!(listed == mine, "listed {listed:?}, want {mine:?}");
    let theirs = s.list(&other_scope(), None, 10).await?;
    ensure!(theirs.conversations.len() == 2 && theirs.next_cursor.is_none(), "other scope sees {theirs:?}");
    ensure!(s.list(&Scope::new("nobody", ""), None, 10).await?.conversations.is_empty(), "empty scope lists something");
    Ok(())
}

/// Another scope's conversation looks exactly like a missing one.
async fn scopes_are_isolated(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "shared-id").await?;
    s.append(&scope(), "shared-id", numbered("mine", 3), None).await?;
    let intruder = other_scope();
    expect_not_found(s.info(&intruder, "shared-id").await, "info")?;
    expect_not_found(s.load(&intruder, "shared-id", LoadRequest::latest(10)).await, "load")?;
    expect_not_found(s.append(&intruder, "shared-id", numbered("x", 1), None).await, "append")?;
    expect_not_found(s.truncate_after(&intruder, "shared-id", 0, None).await, "truncate")?;
    expect_not_found(s.replace(&intruder, "shared-id", vec![], None).await, "replace")?;
    ensure!(!s.delete(&intruder, "shared-id").await?, "another scope deleted the conversation");
    // A user of the same tenant is another scope too.
    expect_not_found(s.info(&Scope::new("tenant-a", "user-2"), "shared-id").await, "same tenant, other user")?;
    let theirs = s.open(&intruder, "shared-id", ConversationMeta::default()).await?;
    ensure!(theirs.message_count == 0, "the intruder's own conversation is not fresh");
    s.append(&intruder, "shared-id", numbered("theirs", 1), None).await?;
    ensure!(
        ids(&all_messages(s, &scope(), "shared-id").await?) == ["mine0", "mine1", "mine2"],
        "history leaked across scopes"
    );
    Ok(())
}

/// Unicode everywhere and a 1 MiB message survive byte for byte.
async fn unicode_and_one_mebibyte_messages(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    let sc = Scope::new("租户-🏢", "utilisateur-é");
    let id = "会話-🚀-עברית-e\u{301}";
    opened(s, &sc, id).await?;
    let unicode = "Grüße, 世界! مرحبا 🧑‍🚀 \u{200d}\u{fe0f} e\u{301} \u{10FFFF}";
    let big: String = "🦀 stowage ".chars().cycle().take(1 << 20).collect();
    ensure!(big.len() > 1 << 20, "test message is not over 1 MiB");
    let messages = vec![text(Role::User, "ü-1", unicode), text(Role::Assistant, "big", &big)];
    s.append(&sc, id, messages, None).await?;
    let all = all_messages(s, &sc, id).await?;
    ensure!(all.len() == 2, "loaded {} messages", all.len());
    ensure!(all[0].parts == vec![Part::text(unicode)], "unicode text changed");
    ensure!(all[1].parts == vec![Part::text(big.clone())], "1 MiB message changed");
    ensure!(s.list(&sc, None, 10).await?.conversations[0].id == id, "unicode id not listed as given");
    Ok(())
}

/// Ids that look like paths or are oversized are stored safely or rejected clearly,
/// and nothing is written outside the store's data directory.
async fn hostile_ids_are_rejected_or_stored_safely(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    let max = "i".repeat(stowage::MAX_ID_BYTES);
    let safe = [
        "../x",
        "a/b",
        "..",
        ".",
        "/etc/passwd",
        "a\\b",
        "C:\\x",
        "%2F",
        "c-x",
        "h-x",
        "CON",
        " ",
        "A",
        "a",
        max.as_str(),
    ];
    for (i, id) in safe.iter().enumerate() {
        opened(s, &scope(), id).await.with_context(|| format!("id {i}"))?;
        s.append(&scope(), id, vec![text(Role::User, &format!("for-{i}"), id)], None).await?;
    }
    for (i, id) in safe.iter().enumerate() {
        let all = all_messages(s, &scope(), id).await?;
        ensure!(all.len() == 1 && all[0].id == format!("for-{i}"), "id {id:?} shares storage with another id");
    }
    let listed = s.list(&scope(), None, 100).await?.conversations.len();
    ensure!(listed == safe.len(), "listed {listed} of {} conversations", safe.len());
    let ten_kb = "x".repeat(10 * 1024);
    for (bad, expected) in [("nul\0byte", "control character"), (ten_kb.as_str(), "the limit is"), ("", "empty")] {
        match s.open(&scope(), bad, ConversationMeta::default()).await {
            Err(Error::InvalidInput(reason)) => {
                ensure!(reason.contains(expected), "reason {reason:?} lacks {expected:?}")
            }
            other => bail!("hostile id accepted: {other:?}"),
        }
    }
    let outside: Vec<_> = std::fs::read_dir(ctx.scratch_dir())?.filter_map(Result::ok).map(|e| e.file_name()).collect();
    ensure!(outside == [std::ffi::OsString::from("data")], "files appeared outside the data directory: {outside:?}");
    Ok(())
}

/// Every part type, usage, stop reason and metadata come back exactly as given.
async fn every_part_type_round_trips_exactly(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    let metadata = JsonText::parse("{\"z\": [1.50, 2e3],\n  \"a\": {\"nested\": null}, \"s\": \"\\u00e9\"}")?;
    let assistant = NewMessage::new(
        Role::Assistant,
        vec![
            Part::thinking("Let me check the weather first.", Some("sig-AbC123+/=".into())),
            Part::Thinking { text: "ZW5jcnlwdGVk".into(), signature: None, redacted: true },
            Part::text("Checking…"),
            Part::tool_call("call_1", "get_weather", r#"{"city": "Paris", "units": ["C"]}"#),
            Part::tool_call("call_2", "broken_args", r#"{"unterminated": "#),
            Part::Media {
                mime_type: "image/png".into(),
                source: MediaSource::Inline((0..=255).collect()),
                name: Some("chart.png".into()),
            },
            Part::Media {
                mime_type: "application/pdf".into(),
                source: MediaSource::Url("https://example.com/a.pdf".into()),
                name: None,
            },
        ],
    )
    .with_id("assistant-1")
    .with_usage(Usage { input_tokens: 1234, output_tokens: 56, cached_tokens: 1000, cost: Some(0.001_234_5) })
    .with_stop_reason(StopReason::ToolUse)
    .with_metadata(metadata.clone())
    .with_created_at(1_700_000_000_123);
    let tool = NewMessage::new(
        Role::Tool,
        vec![
            Part::tool_result("call_1", r#"{"temp": 21.5}"#, false),
            Part::tool_result("call_2", "invalid JSON arguments", true),
        ],
    )
    .with_id("tool-1")
    .with_stop_reason(StopReason::Other("pause_turn".into()));
    let system = NewMessage::text(Role::System, "You are terse.").with_id("sys");
    let developer = NewMessage::new(Role::Developer, vec![]).with_id("dev-empty");
    let input = vec![system, developer, assistant, tool];
    s.append(&scope(), "c", input.clone(), None).await?;
    let loaded = all_messages(s, &scope(), "c").await?;
    ensure!(loaded.len() == input.len(), "loaded {} of {}", loaded.len(), input.len());
    for (got, want) in loaded.iter().zip(&input) {
        ensure!(Some(&got.id) == want.id.as_ref(), "id {} vs {:?}", got.id, want.id);
        ensure!(got.role == want.role, "role of {}", got.id);
        ensure!(got.parts == want.parts, "parts of {} changed: {:?}", got.id, got.parts);
        ensure!(got.usage == want.usage, "usage of {} changed: {:?}", got.id, got.usage);
        ensure!(got.stop_reason == want.stop_reason, "stop reason of {} changed", got.id);
        ensure!(got.metadata == want.metadata, "metadata of {} changed: {:?}", got.id, got.metadata);
        if let Some(at) = want.created_at {
            ensure!(got.created_at == at, "created_at of {} changed", got.id);
        }
    }
    ensure!(
        loaded[2].metadata.as_ref().map(JsonText::as_str) == Some(metadata.as_str()),
        "metadata text not byte-identical"
    );
    Ok(())
}

/// Everything acknowledged is there after the host is dropped and rebuilt.
async fn data_survives_a_host_restart(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("m", 12), None).await?;
    s.truncate_after(&scope(), "c", 10, None).await?;
    let before = all_messages(s, &scope(), "c").await?;
    let info = s.info(&scope(), "c").await?;
    let restarted = ctx.restarted_store().await?;
    ensure!(all_messages(&restarted, &scope(), "c").await? == before, "history differs after restart");
    ensure!(restarted.info(&scope(), "c").await? == info, "info differs after restart");
    ensure!(
        restarted.append(&scope(), "c", numbered("m", 12), None).await?.seqs[..10] == (1..=10).collect::<Vec<_>>()[..],
        "dedup after restart"
    );
    Ok(())
}

/// The null adapter's own contract: writes succeed, reads are empty.
async fn null_accepts_writes_and_keeps_nothing(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    let out = s.append(&scope(), "c", numbered("m", 3), None).await?;
    ensure!(out.stored == 3, "null must accept writes: {out:?}");
    let page = s.load(&scope(), "c", LoadRequest::latest(10)).await?;
    ensure!(page.messages.is_empty() && page.next_cursor.is_none(), "null returned data");
    ensure!(s.list(&scope(), None, 10).await?.conversations.is_empty(), "null listed something");
    expect_not_found(s.info(&scope(), "c").await, "null info")?;
    Ok(())
}

// ---- display persistence ----

fn display(ctx: &Ctx) -> Display {
    Display::persistent(ctx.store.clone(), DisplayOptions::default())
}

fn dctx(conversation_id: &str) -> DisplayContext {
    DisplayContext::new(Some("agent-1"), conversation_id)
}

/// An assistant message calling tools `ids`.
fn calling(ids: &[&str]) -> NewMessage {
    let mut parts = vec![Part::thinking("plan", Some("sig".into())), Part::text("Let me look that up.")];
    parts.extend(ids.iter().map(|id| Part::tool_call(*id, "search", r#"{"q":"x"}"#)));
    NewMessage::new(Role::Assistant, parts).with_id("assistant-1").with_stop_reason(StopReason::ToolUse)
}

async fn all_records(d: &Display, scope: &Scope, conversation_id: &str) -> anyhow::Result<Vec<DisplayRecord>> {
    Ok(d.list(scope, conversation_id, 0, 1000).await?.records)
}

async fn card(d: &Display, conversation_id: &str, call_id: &str) -> anyhow::Result<DisplayRecord> {
    all_records(d, &scope(), conversation_id)
        .await?
        .into_iter()
        .find(|r| r.content_type == stowage::content_type::TOOL_CALL && r.tool_call_id.as_deref() == Some(call_id))
        .with_context(|| format!("no card for {call_id}"))
}

/// One record per part, in order and contiguously numbered across messages; tool
/// calls become `pending` cards; the stop reason is on the last record only.
async fn display_splits_a_message_into_ordered_records(ctx: &Ctx) -> anyhow::Result<()> {
    let d = display(ctx);
    let user = d.save_message(&scope(), &NewMessage::text(Role::User, "find x").with_id("u1"), &dctx("c")).await?;
    let saved = d.save_message(&scope(), &calling(&["call-a", "call-b"]), &dctx("c")).await?;
    let tool = NewMessage::new(Role::Tool, vec![Part::tool_result("call-a", "found", false)]).with_id("t1");
    let result = d.save_message(&scope(), &tool, &dctx("c")).await?;
    ensure!(user.len() == 1 && user[0].seq == 1, "user message: {user:?}");
    let kinds: Vec<&str> = saved.iter().map(|r| r.content_type.as_str()).collect();
    ensure!(kinds == ["thinking", "text", "tool_call", "tool_call"], "split: {kinds:?}");
    ensure!(saved.iter().map(|r| r.seq).eq(2..=5), "seqs {:?}", saved.iter().map(|r| r.seq).collect::<Vec<_>>());
    for card in &saved[2..] {
        ensure!(card.status == Some(ToolStatus::Pending) && card.tool_call_id.is_some(), "card {card:?}");
    }
    let stop = |r: &DisplayRecord| r.metadata.as_ref().is_some_and(|m| m.as_str().contains("tool_use"));
    ensure!(stop(&saved[3]) && !saved[..3].iter().any(stop), "stop reason must be on the last record only");
    ensure!(result[0].content_type == "tool_result" && result[0].seq == 6, "tool result {result:?}");
    let listed = all_records(&d, &scope(), "c").await?;
    ensure!(listed.len() == 6 && listed[1..5] == saved[..], "listing differs from what was saved");
    let page = d.list(&scope(), "c", 0, 4).await?;
    ensure!(page.records.len() == 4 && page.next_after == Some(4), "first page {:?}", page.next_after);
    let rest = d.list(&scope(), "c", 4, 4).await?;
    ensure!(rest.records.iter().map(|r| r.seq).eq(5..=6) && rest.next_after.is_none(), "second page");
    Ok(())
}

/// Every allowed transition works; every other move is refused and changes nothing.
async fn display_lifecycle_allows_exactly_the_documented_moves(ctx: &Ctx) -> anyhow::Result<()> {
    use stowage::ToolStatus::*;
    let d = display(ctx);
    let paths: [&[ToolStatus]; 6] = [
        &[Executing, Completed],
        &[Executing, Failed],
        &[Executing, Interrupted],
        &[Executing, Cancelled],
        &[Cancelled],
        &[Executing],
    ];
    for (i, path) in paths.iter().enumerate() {
        let call = format!("call-{i}");
        d.save_message(&scope(), &calling(&[call.as_str()]), &dctx("c")).await?;
        let mut current = Pending;
        for &next in *path {
            let update = d.update_tool_status(&scope(), next, ToolInfo::new(&call), &dctx("c")).await?;
            ensure!(update.changed && update.card.status == Some(next), "{current}→{next}");
            current = next;
        }
        for to in ToolStatus::ALL {
            let allowed = matches!(
                (current, to),
                (Pending, Executing | Cancelled) | (Executing, Completed | Failed | Interrupted | Cancelled)
            );
            if to == current || allowed {
                continue;
            }
            match d.update_tool_status(&scope(), to, ToolInfo::new(&call), &dctx("c")).await {
                Err(Error::InvalidTransition { from, to: t }) => {
                    ensure!(from == current && t == to, "reported {from}→{t}")
                }
                other => bail!("{current}→{to} must be refused, got {other:?}"),
            }
            ensure!(card(&d, "c", &call).await?.status == Some(current), "a refused move changed the card");
        }
    }
    Ok(())
}

/// Repeating the current status is a no-op; an unknown call id is not-found.
async fn display_repeats_are_noops_and_unknown_calls_are_not_found(ctx: &Ctx) -> anyhow::Result<()> {
    let d = display(ctx);
    d.save_message(&scope(), &calling(&["call-1"]), &dctx("c")).await?;
    let first = d.update_tool_status(&scope(), ToolStatus::Executing, ToolInfo::new("call-1"), &dctx("c")).await?;
    let again = d
        .update_tool_status(
            &scope(),
            ToolStatus::Executing,
            ToolInfo::new("call-1").display_text("ignored"),
            &dctx("c"),
        )
        .await?;
    ensure!(first.changed && !again.changed, "repeat reported a change");
    ensure!(card(&d, "c", "call-1").await? == first.card, "a repeat changed the card");
    expect_not_found(
        d.update_tool_status(&scope(), ToolStatus::Executing, ToolInfo::new("nope"), &dctx("c")).await,
        "unknown call",
    )?;
    expect_not_found(d.resolve_tool_result(&scope(), "nope", "x", &dctx("c")).await, "resolve unknown call")?;
    expect_not_found(
        d.update_tool_status(&scope(), ToolStatus::Executing, ToolInfo::new("call-1"), &dctx("other")).await,
        "other conversation",
    )?;
    Ok(())
}

fn metadata(record: &DisplayRecord) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    match record.metadata.as_ref().map(JsonText::to_value).transpose()? {
        Some(serde_json::Value::Object(map)) => Ok(map),
        None => Ok(serde_json::Map::new()),
        Some(other) => bail!("metadata is not an object: {other}"),
    }
}

/// Status updates merge into metadata; resolve clears an interrupt, completes the
/// card and replaces the placeholder result.
async fn display_metadata_merges_and_resolve_completes_an_interrupt(ctx: &Ctx) -> anyhow::Result<()> {
    let d = display(ctx);
    d.save_message(&scope(), &calling(&["call-1"]), &dctx("c")).await?;
    let info = ToolInfo::new("call-1").name("search").display_text("Searching the web");
    d.update_tool_status(&scope(), ToolStatus::Executing, info, &dctx("c")).await?;
    let mut extra = ToolInfo::new("call-1");
    extra.metadata = Some(JsonText::parse(r#"{"approval":"needed"}"#)?);
    let interrupted = d.update_tool_status(&scope(), ToolStatus::Interrupted, extra, &dctx("c")).await?.card;
    let meta = metadata(&interrupted)?;
    for key in ["name", "display_text", "approval"] {
        ensure!(meta.contains_key(key), "merge lost `{key}`: {meta:?}");
    }
    let placeholder = NewMessage::new(Role::Tool, vec![Part::tool_result("call-1", "awaiting approval…", false)]);
    d.save_message(&scope(), &placeholder, &dctx("c")).await?;
    match d.update_tool_status(&scope(), ToolStatus::Completed, ToolInfo::new("call-1"), &dctx("c")).await {
        Err(Error::InvalidTransition { from: ToolStatus::Interrupted, to: ToolStatus::Completed }) => {}
        other => bail!("interrupted→completed must go through resolve, got {other:?}"),
    }
    let resolved = d.resolve_tool_result(&scope(), "call-1", "42 results", &dctx("c")).await?;
    ensure!(resolved.changed && resolved.card.status == Some(ToolStatus::Completed), "resolve: {resolved:?}");
    let meta = metadata(&resolved.card)?;
    ensure!(meta.get("result").and_then(|v| v.as_str()) == Some("42 results") && meta.contains_key("name"), "{meta:?}");
    let result = all_records(&d, &scope(), "c")
        .await?
        .into_iter()
        .find(|r| r.content_type == "tool_result")
        .context("result")?;
    ensure!(
        result.content.as_str().contains("42 results") && !result.content.as_str().contains("awaiting"),
        "placeholder kept"
    );
    ensure!(
        !d.resolve_tool_result(&scope(), "call-1", "again", &dctx("c")).await?.changed,
        "second resolve changed something"
    );
    d.save_message(&scope(), &calling(&["call-2"]), &dctx("c")).await?;
    ensure!(
        matches!(
            d.resolve_tool_result(&scope(), "call-2", "x", &dctx("c")).await,
            Err(Error::InvalidTransition { .. })
        ),
        "resolve of a pending card"
    );
    Ok(())
}

/// Synthetic records are stored verbatim among the others.
async fn display_synthetic_records(ctx: &Ctx) -> anyhow::Result<()> {
    let d = display(ctx);
    d.save_message(&scope(), &NewMessage::text(Role::User, "hi"), &dctx("c")).await?;
    let content = JsonText::parse(r#"{"question": "Which city?", "answer":"Paris"}"#)?;
    let saved = d
        .save_synthetic_message(
            &scope(),
            SyntheticMessage {
                message_type: "user".into(),
                content_type: "ask_user_answer".into(),
                content: content.clone(),
                metadata: Some(JsonText::parse(r#"{"source":"ask_user"}"#)?),
            },
            &dctx("c"),
        )
        .await?;
    ensure!(saved.seq == 2 && saved.message_id.is_none() && saved.content == content, "synthetic {saved:?}");
    let cancelled = SyntheticMessage {
        message_type: "system".into(),
        content_type: "notification".into(),
        content: JsonText::parse(r#"{"text":"user cancelled"}"#)?,
        metadata: None,
    };
    d.save_synthetic_message(&scope(), cancelled, &dctx("c")).await?;
    let listed = all_records(&d, &scope(), "c").await?;
    ensure!(listed.len() == 3 && listed[1] == saved && listed[2].content_type == "notification", "listing {listed:?}");
    let bad = SyntheticMessage { metadata: Some(JsonText::parse("[1]")?), ..saved_synthetic() };
    ensure!(
        matches!(d.save_synthetic_message(&scope(), bad, &dctx("c")).await, Err(Error::InvalidInput(_))),
        "array metadata accepted"
    );
    Ok(())
}

fn saved_synthetic() -> SyntheticMessage {
    SyntheticMessage {
        message_type: "system".into(),
        content_type: "notification".into(),
        content: JsonText::from_value(&serde_json::json!({"text": "x"})),
        metadata: None,
    }
}

/// Another scope can neither see nor update a conversation's records.
async fn display_scopes_are_isolated(ctx: &Ctx) -> anyhow::Result<()> {
    let d = display(ctx);
    d.save_message(&scope(), &calling(&["call-1"]), &dctx("c")).await?;
    ensure!(all_records(&d, &other_scope(), "c").await?.is_empty(), "another scope sees records");
    expect_not_found(
        d.update_tool_status(&other_scope(), ToolStatus::Executing, ToolInfo::new("call-1"), &dctx("c")).await,
        "update",
    )?;
    expect_not_found(d.resolve_tool_result(&other_scope(), "call-1", "x", &dctx("c")).await, "resolve")?;
    ensure!(card(&d, "c", "call-1").await?.status == Some(ToolStatus::Pending), "another scope changed the card");
    let theirs = d.save_message(&other_scope(), &calling(&["call-1"]), &dctx("c")).await?;
    ensure!(theirs[0].seq == 1, "the other scope's records share numbering");
    Ok(())
}

/// After a crash, the start-up sweep marks `pending`/`executing` cards interrupted.
async fn display_sweep_interrupts_cards_left_by_a_crash(ctx: &Ctx) -> anyhow::Result<()> {
    {
        let d = display(ctx);
        d.save_message(&scope(), &calling(&["p", "e", "done"]), &dctx("c1")).await?;
        d.save_message(&other_scope(), &calling(&["e2"]), &dctx("c2")).await?;
        for (sc, conversation, call) in [(scope(), "c1", "e"), (scope(), "c1", "done"), (other_scope(), "c2", "e2")] {
            d.update_tool_status(&sc, ToolStatus::Executing, ToolInfo::new(call), &dctx(conversation)).await?;
        }
        d.update_tool_status(&scope(), ToolStatus::Completed, ToolInfo::new("done"), &dctx("c1")).await?;
    } // the process "dies" with p pending and e, e2 executing
    let (d, report) = Display::open(ctx.restarted_store().await?, DisplayOptions::default()).await?;
    ensure!(report.interrupted == 3, "sweep reported {}", report.interrupted);
    for (conversation, call, want) in [
        ("c1", "p", ToolStatus::Interrupted),
        ("c1", "e", ToolStatus::Interrupted),
        ("c1", "done", ToolStatus::Completed),
    ] {
        ensure!(card(&d, conversation, call).await?.status == Some(want), "{call} after the sweep");
    }
    ensure!(
        all_records(&d, &other_scope(), "c2").await?[2].status == Some(ToolStatus::Interrupted),
        "other scope's card not swept"
    );
    let (_, second) = Display::open(ctx.store.clone(), DisplayOptions::default()).await?;
    ensure!(second.interrupted == 0, "a second sweep found {}", second.interrupted);
    ensure!(
        d.resolve_tool_result(&scope(), "e", "late result", &dctx("c1")).await?.changed,
        "swept card cannot be resolved"
    );
    Ok(())
}

/// Deleting a conversation deletes its display records, and only its.
async fn display_records_are_deleted_with_their_conversation(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    let d = display(ctx);
    for id in ["c1", "c2"] {
        opened(s, &scope(), id).await?;
        d.save_message(&scope(), &calling(&["call"]), &dctx(id)).await?;
    }
    d.save_message(&scope(), &calling(&["call"]), &dctx("display-only")).await?;
    ensure!(s.delete(&scope(), "c1").await?, "delete reported nothing");
    ensure!(all_records(&d, &scope(), "c1").await?.is_empty(), "records survived their conversation");
    ensure!(all_records(&d, &scope(), "c2").await?.len() == 3, "a sibling lost its records");
    ensure!(s.delete(&scope(), "display-only").await?, "display-only records were not deleted");
    ensure!(all_records(&d, &scope(), "display-only").await?.is_empty(), "display-only records survived");
    Ok(())
}

// ---- crash repair ----

/// A turn the agent died in: two tool calls, one result.
async fn crashed_turn(s: &Store) -> anyhow::Result<()> {
    opened(s, &scope(), "c").await?;
    let call = NewMessage::new(
        Role::Assistant,
        vec![Part::text("checking"), Part::tool_call("done", "f", "{}"), Part::tool_call("lost", "g", "{}")],
    )
    .with_id("a1");
    let result = NewMessage::new(Role::Tool, vec![Part::tool_result("done", "ok", false)]).with_id("t1");
    s.append(&scope(), "c", vec![text(Role::User, "u1", "go"), call, result], None).await?;
    Ok(())
}

/// Tool calls without results are kept, stripped or answered with a synthesized
/// `interrupted` result, as asked, and reported; storage is unchanged.
async fn orphaned_tool_calls_are_repaired_on_load(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    crashed_turn(s).await?;
    let kept = s.load(&scope(), "c", LoadRequest::latest(10)).await?;
    ensure!(kept.repairs.is_none() && kept.messages.len() == 3, "keep is the default and does nothing");
    let stripped = s.load(&scope(), "c", LoadRequest::latest(10).with_orphans(OrphanPolicy::Strip)).await?;
    let report = stripped.repairs.context("no report")?;
    ensure!(report.orphaned_calls.len() == 1 && report.orphaned_calls[0].call_id == "lost", "{report:?}");
    ensure!(!stripped.messages[1].parts.iter().any(|p| matches!(p, Part::ToolCall { id, .. } if id == "lost")));
    let synthesized =
        s.load(&scope(), "c", LoadRequest::latest(10).with_orphans(OrphanPolicy::SynthesizeInterrupted)).await?;
    ensure!(synthesized.messages.len() == 4, "one synthesized tool message");
    ensure!(
        synthesized.messages[3].parts == vec![Part::tool_result("lost", stowage::INTERRUPTED_RESULT, true)],
        "{:?}",
        synthesized.messages[3]
    );
    // A result beyond the page still counts.
    let page = s.load(&scope(), "c", LoadRequest::after(0, 2).with_orphans(OrphanPolicy::Strip)).await?;
    ensure!(page.repairs.context("report")?.orphaned_calls.len() == 1, "`done` has its result on the next page");
    ensure!(all_messages(s, &scope(), "c").await?.len() == 3, "repairs must not change storage");
    Ok(())
}

/// truncate-after and pop-last refuse to keep a call and drop its result.
async fn cuts_never_separate_a_tool_call_from_its_result(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    crashed_turn(s).await?;
    match s.truncate_after(&scope(), "c", 2, None).await {
        Err(Error::InvalidInput(reason)) => ensure!(reason.contains("done"), "{reason}"),
        other => bail!("a cut between a call and its result must be refused: {other:?}"),
    }
    ensure!(matches!(s.pop_last(&scope(), "c").await, Err(Error::InvalidInput(_))), "pop-last would orphan `done`");
    ensure!(all_messages(s, &scope(), "c").await?.len() == 3, "a refused cut changed the history");
    ensure!(s.truncate_after(&scope(), "c", 1, None).await?.removed == 2, "cutting before the call is fine");
    Ok(())
}

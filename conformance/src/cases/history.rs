//! Appending, idempotency, versions, truncation, replacement, exact round trips, restarts.

use anyhow::{Context, bail, ensure};
use stowage::{
    ConversationMeta, Error, JsonText, LoadRequest, MediaSource, NewMessage, Part, Role, Scope, StopReason, Usage,
};

use super::{all_messages, expect_not_found, ids, numbered, opened, other_scope, scope, seqs, text};
use crate::{Ctx, Need};

/// open (find-or-create) is idempotent: the second open returns the first's info.
pub(crate) async fn open_is_idempotent(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    let meta = ConversationMeta {
        agent_id: Some("agent-7".into()),
        title: Some("Trip planning".into()),
        metadata: Some(JsonText::parse(r#"{"channel": "web",  "n": 1.50}"#)?),
        extra: None,
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
pub(crate) async fn missing_conversation_is_not_found(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    expect_not_found(s.info(&scope(), "nope").await, "info")?;
    expect_not_found(s.load(&scope(), "nope", LoadRequest::latest(10)).await, "load")?;
    expect_not_found(s.append(&scope(), "nope", numbered("m", 1), None).await, "append")?;
    expect_not_found(s.truncate_after(&scope(), "nope", 0, None).await, "truncate")?;
    ensure!(!s.delete(&scope(), "nope").await?, "delete of a missing conversation reported a deletion");
    Ok(())
}

/// Seqs are contiguous from 1, in append order, across batches.
pub(crate) async fn seqs_are_contiguous_and_ordered(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn append_is_idempotent_by_message_id(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn expected_version_conflicts(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn batch_rejected_by_validation_stores_nothing(ctx: &Ctx) -> anyhow::Result<()> {
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
    match s.append(&scope(), "c", costly, None).await {
        Err(Error::InvalidInput(reason)) => ensure!(reason.contains("finite"), "reason: {reason}"),
        other => bail!("expected invalid-input for a NaN cost, got {other:?}"),
    }
    match s.info(&scope(), "c").await {
        Ok(info) => {
            ensure!(info.message_count == 0 && info.version == 0, "a refused batch changed the conversation: {info:?}")
        }
        // The null adapter keeps nothing, not even the conversation.
        Err(Error::NotFound) if ctx.subject.provides.contains(&Need::KeepsNothing) => {}
        Err(e) => bail!("info after refused batches failed: {e}"),
    }
    Ok(())
}

/// truncate-after removes the tail atomically and numbering continues after it;
/// pop-last removes exactly the newest message.
pub(crate) async fn truncate_and_pop_last(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn replace_renumbers_history(ctx: &Ctx) -> anyhow::Result<()> {
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

/// Unicode everywhere and a 1 MiB message survive byte for byte.
pub(crate) async fn unicode_and_one_mebibyte_messages(ctx: &Ctx) -> anyhow::Result<()> {
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

/// Every part type, usage, stop reason and metadata come back exactly as given.
pub(crate) async fn every_part_type_round_trips_exactly(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    let metadata = JsonText::parse("{\"z\": [1.50, 2e3],\n  \"a\": {\"nested\": null}, \"s\": \"\\u00e9\"}")?;
    let assistant = NewMessage::new(
        Role::Assistant,
        vec![
            Part::thinking("Let me check the weather first.", Some("sig-AbC123+/=".into())),
            Part::Thinking { text: "ZW5jcnlwdGVk".into(), signature: None, redacted: true, extra: None },
            Part::text("Checking…"),
            Part::tool_call("call_1", "get_weather", r#"{"city": "Paris", "units": ["C"]}"#),
            Part::tool_call("call_2", "broken_args", r#"{"unterminated": "#),
            Part::media("image/png", MediaSource::Inline((0..=255).collect()), Some("chart.png".into())),
            Part::media("application/pdf", MediaSource::Url("https://example.com/a.pdf".into()), None),
            Part::Provider {
                format: "anthropic".into(),
                value: JsonText::parse(
                    r#"{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"q":"x","n":1.50}}"#,
                )?,
                extra: None,
            },
        ],
    )
    .with_id("assistant-1")
    .with_usage(Usage { input_tokens: 1234, output_tokens: 56, cached_tokens: 1000, cost: Some(0.001_234_5) })
    .with_stop_reason(StopReason::ToolUse)
    .with_metadata(metadata.clone())
    .with_created_at(1_700_000_000_123);
    let mut assistant = assistant;
    assistant.extra = Some(JsonText::parse(r#"{"openai": {"refusal": null, "annotations": []}}"#)?);
    if let Part::Text { extra, .. } = &mut assistant.parts[2] {
        *extra = Some(JsonText::parse(r#"{"anthropic":{"cache_control":{"type":"ephemeral"}}}"#)?);
    }
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
        ensure!(got.extra == want.extra, "provider fields of {} changed: {:?}", got.id, got.extra);
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
pub(crate) async fn data_survives_a_host_restart(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("m", 12), None).await?;
    s.truncate_after(&scope(), "c", 10, None).await?;
    let before = all_messages(s, &scope(), "c").await?;
    let info = s.info(&scope(), "c").await?;
    // A restart: the first store is closed and a new engine opens the data.
    let restarted = ctx.restarted_store().await?;
    ensure!(matches!(s.info(&scope(), "c").await, Err(Error::Closed { .. })), "the first store still serves");
    ensure!(all_messages(&restarted, &scope(), "c").await? == before, "history differs after restart");
    ensure!(restarted.info(&scope(), "c").await? == info, "info differs after restart");
    ensure!(
        restarted.append(&scope(), "c", numbered("m", 12), None).await?.seqs[..10] == (1..=10).collect::<Vec<_>>()[..],
        "dedup after restart"
    );
    Ok(())
}

/// Appending to a conversation that does not exist yet creates it (with
/// `append_creating`), as session APIs expect; plain `append` still reports it
/// missing.
pub(crate) async fn append_can_create_the_conversation(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    expect_not_found(s.append(&scope(), "new", numbered("m", 1), None).await, "plain append")?;
    let meta = ConversationMeta { title: Some("made by append".into()), ..ConversationMeta::default() };
    let out = s.append_creating(&scope(), "new", meta, numbered("m", 2)).await?;
    ensure!(out.seqs == [1, 2] && out.stored == 2, "append_creating: {out:?}");
    let info = s.info(&scope(), "new").await?;
    ensure!(info.meta.title.as_deref() == Some("made by append") && info.last_seq == 2, "info {info:?}");
    let again = s.append_creating(&scope(), "new", ConversationMeta::default(), numbered("n", 1)).await?;
    ensure!(again.seqs == [3], "a second append_creating appends: {again:?}");
    ensure!(s.info(&scope(), "new").await?.meta.title.as_deref() == Some("made by append"), "meta kept");
    Ok(())
}

/// `update-meta` replaces the title and metadata and nothing else: the history,
/// its version and `updated_at` stay; a missing conversation is not found.
pub(crate) async fn meta_updates_keep_the_history(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    let meta = ConversationMeta { title: Some("first".into()), ..ConversationMeta::default() };
    s.append_creating(&scope(), "c", meta, numbered("m", 3)).await?;
    let before = s.info(&scope(), "c").await?;
    let title = ConversationMeta {
        title: Some("renamed ✓".into()),
        agent_id: Some("agent-7".into()),
        metadata: Some(JsonText::parse(r#"{"pinned": true}"#.to_owned())?),
        ..ConversationMeta::default()
    };
    match s.update_meta(&scope(), "c", title.clone()).await {
        Err(Error::Unsupported(_)) if s.contract_version() == "0.1.0" => return Ok(()),
        other => ensure!(other?.meta == title, "update_meta answers with the new meta"),
    }
    let after = s.info(&scope(), "c").await?;
    ensure!(after.meta == title, "info after update: {:?}", after.meta);
    ensure!(
        (after.version, after.last_seq, after.updated_at, after.created_at)
            == (before.version, before.last_seq, before.updated_at, before.created_at),
        "the history is untouched: {before:?} -> {after:?}"
    );
    ensure!(all_messages(s, &scope(), "c").await?.len() == 3, "messages kept");
    ensure!(s.update_meta(&scope(), "c", title.clone()).await?.meta == title, "idempotent");
    let listed = s.list(&scope(), None, 10).await?.conversations;
    ensure!(listed.iter().any(|c| c.id == "c" && c.meta == title), "list shows the new meta: {listed:?}");
    expect_not_found(s.update_meta(&scope(), "missing", title.clone()).await.map(|_| ()), "missing conversation")?;
    expect_not_found(s.update_meta(&other_scope(), "c", title).await.map(|_| ()), "another scope's conversation")?;
    Ok(())
}

/// The null adapter's own contract: writes succeed, reads are empty.
pub(crate) async fn null_accepts_writes_and_keeps_nothing(ctx: &Ctx) -> anyhow::Result<()> {
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

//! Display persistence: records, the tool-card lifecycle, the sweep.

use anyhow::{Context, bail, ensure};
use stowage::{
    Display, DisplayContext, DisplayOptions, DisplayRecord, Error, JsonText, NewMessage, Part, Role, Scope, StopReason,
    SyntheticMessage, ToolInfo, ToolStatus,
};

use super::{expect_not_found, opened, other_scope, scope};
use crate::Ctx;

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
pub(crate) async fn display_splits_a_message_into_ordered_records(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn display_lifecycle_allows_exactly_the_documented_moves(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn display_repeats_are_noops_and_unknown_calls_are_not_found(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn display_metadata_merges_and_resolve_completes_an_interrupt(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn display_synthetic_records(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn display_scopes_are_isolated(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn display_sweep_interrupts_cards_left_by_a_crash(ctx: &Ctx) -> anyhow::Result<()> {
    {
        let d = display(ctx);
        d.save_message(&scope(), &calling(&["p", "e", "done"]), &dctx("c1")).await?;
        d.save_message(&other_scope(), &calling(&["e2"]), &dctx("c2")).await?;
        for (sc, conversation, call) in [(scope(), "c1", "e"), (scope(), "c1", "done"), (other_scope(), "c2", "e2")] {
            d.update_tool_status(&sc, ToolStatus::Executing, ToolInfo::new(call), &dctx(conversation)).await?;
        }
        d.update_tool_status(&scope(), ToolStatus::Completed, ToolInfo::new("done"), &dctx("c1")).await?;
    } // the process "dies" with p pending and e, e2 executing
    let restarted = ctx.restarted_store().await?;
    let (d, report) = Display::open(restarted.clone(), DisplayOptions::default()).await?;
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
    let (_, second) = Display::open(restarted, DisplayOptions::default()).await?;
    ensure!(second.interrupted == 0, "a second sweep found {}", second.interrupted);
    ensure!(
        d.resolve_tool_result(&scope(), "e", "late result", &dctx("c1")).await?.changed,
        "swept card cannot be resolved"
    );
    Ok(())
}

/// Deleting a conversation deletes its display records, and only its.
pub(crate) async fn display_records_are_deleted_with_their_conversation(ctx: &Ctx) -> anyhow::Result<()> {
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

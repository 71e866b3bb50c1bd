//! Crash repair: orphaned tool calls, and cuts that keep calls with results.

use anyhow::{Context, bail, ensure};
use stowage::{Error, LoadRequest, NewMessage, OrphanPolicy, Part, Role, Store};

use super::{all_messages, opened, scope, text};
use crate::Ctx;

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
pub(crate) async fn orphaned_tool_calls_are_repaired_on_load(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn cuts_never_separate_a_tool_call_from_its_result(ctx: &Ctx) -> anyhow::Result<()> {
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

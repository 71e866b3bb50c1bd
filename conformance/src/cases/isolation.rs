//! Scopes, deletes and hostile ids: nothing reaches what it should not.

use anyhow::{Context, bail, ensure};
use stowage::{ConversationMeta, Error, LoadRequest, Scope};

use super::{all_messages, expect_not_found, ids, numbered, opened, other_scope, scope, text};
use crate::Ctx;
use stowage::Role;

/// delete is idempotent and touches nothing else.
pub(crate) async fn delete_is_idempotent_and_isolated(ctx: &Ctx) -> anyhow::Result<()> {
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

/// Another scope's conversation looks exactly like a missing one.
pub(crate) async fn scopes_are_isolated(ctx: &Ctx) -> anyhow::Result<()> {
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

/// Ids that look like paths or are oversized are stored safely or rejected clearly,
/// and nothing is written outside the store's data directory.
pub(crate) async fn hostile_ids_are_rejected_or_stored_safely(ctx: &Ctx) -> anyhow::Result<()> {
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

//! Recent-N, cursors, whole loads and listing.

use anyhow::{Context, bail, ensure};
use stowage::{Error, LoadRequest, Scope, Store};

use super::{ids, numbered, opened, other_scope, scope, seqs};
use crate::Ctx;

/// "Recent N" returns the newest N in chronological order; its cursor walks back.
pub(crate) async fn recent_n_in_chronological_order(ctx: &Ctx) -> anyhow::Result<()> {
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
pub(crate) async fn paging_by_cursor_visits_every_message_once(ctx: &Ctx) -> anyhow::Result<()> {
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

/// `load_all` returns the whole history however long, past the largest page.
pub(crate) async fn load_all_reads_past_one_page(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    for batch in 0..3 {
        s.append(&scope(), "c", numbered(&format!("b{batch}-"), 500), None).await?;
    }
    s.append(&scope(), "c", numbered("tail-", 7), None).await?;
    let all = s.load_all(&scope(), "c").await?;
    ensure!(seqs(&all) == (1..=1507).collect::<Vec<_>>(), "load_all returned {} messages", all.len());
    ensure!(ids(&all).iter().filter(|id| id.starts_with("tail-")).count() == 7, "the tail is missing");
    Ok(())
}

/// Malformed, edited or foreign cursors are `invalid-cursor`.
pub(crate) async fn invalid_cursors_are_refused(ctx: &Ctx) -> anyhow::Result<()> {
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

/// list returns exactly the scope's conversations, ordered by id, in pages.
pub(crate) async fn list_is_scoped_ordered_and_paginated(ctx: &Ctx) -> anyhow::Result<()> {
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

//! Torn and damaged files: a filesystem log cut at every byte of a multi-batch
//! history, a zero-filled tail after power loss, damage in the middle of a log,
//! and a corrupted SQLite page. A torn tail is a write that never completed and
//! is ignored; damage is reported, naming what is damaged, and never skipped.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail, ensure};
use stowage::{Builtin, ConversationMeta, Error, LoadRequest, NewMessage, Role, Store, StoreConfig};
use stowage_tests::{fresh_runtime, shared_runtime};
use support::{all, file_grown_by, scope, text};

/// Conversation `c` of a fresh filesystem store, written in `batches` appends of
/// 1–3 messages, and conversation `other` with one message. Returns the store,
/// `c`'s log, and the log's length after each batch with the messages it holds.
async fn filesystem_history(
    dir: &Path,
    batches: usize,
) -> anyhow::Result<(Store, std::path::PathBuf, Vec<(u64, usize)>)> {
    let store = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Filesystem, dir)).await?;
    for id in ["c", "other"] {
        store.open(&scope(), id, ConversationMeta::default()).await?;
    }
    store.append(&scope(), "other", vec![text("o1")], None).await?;
    let mut log = None;
    let (mut ends, mut count) = (Vec::new(), 0);
    for b in 0..batches {
        let batch: Vec<NewMessage> = (0..1 + b % 3).map(|i| text(format!("b{b}-{i}"))).collect();
        count += batch.len();
        let grown = file_grown_by(dir, async {
            store.append(&scope(), "c", batch, None).await?;
            Ok(())
        })
        .await?;
        ensure!(log.get_or_insert_with(|| grown.clone()) == &grown, "batch {b} grew another file: {}", grown.display());
        ends.push((std::fs::metadata(&grown)?.len(), count));
    }
    Ok((store, log.context("no batch written")?, ends))
}

/// How many messages the intact batches of a log cut at `cut` hold.
fn intact_messages(ends: &[(u64, usize)], cut: u64) -> usize {
    ends.iter().take_while(|(end, _)| *end <= cut).last().map_or(0, |(_, count)| *count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_torn_at_any_byte_reads_back_exactly_its_intact_batches() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (store, log, ends) = filesystem_history(dir.path(), 8).await?;
    let full = std::fs::read(&log)?;
    let original = all(&store, "c").await?;
    ensure!(original.len() == ends[ends.len() - 1].1 && full.len() as u64 == ends[ends.len() - 1].0);
    // Every cut, shortest first, on the same store: the adapter re-validates its
    // cached index by the file's length on every call, so each read sees the cut.
    let restarts: BTreeMap<u64, &str> =
        [(0, "empty log"), (ends[3].0 - 1, "torn mid-frame"), (ends[3].0, "cut at a frame boundary")].into();
    for cut in 0..=full.len() as u64 {
        std::fs::write(&log, &full[..cut as usize])?;
        let want = intact_messages(&ends, cut);
        let stored = all(&store, "c").await.with_context(|| format!("cut at byte {cut} of {}", full.len()))?;
        ensure!(stored[..] == original[..want], "cut at byte {cut}: {} messages read back, want {want}", stored.len());
        if let Some(what) = restarts.get(&cut) {
            // A host restart sees the same, and other conversations are untouched.
            let restarted = fresh_runtime()?.open_store(StoreConfig::builtin(Builtin::Filesystem, dir.path())).await?;
            ensure!(all(&restarted, "c").await?[..] == original[..want], "{what}, after a restart");
            ensure!(all(&restarted, "other").await?.len() == 1, "{what}: another conversation was affected");
            restarted.close().await;
        }
    }
    ensure!(all(&store, "c").await? == original, "the whole log reads back whole");
    // The next writer cuts a torn tail and continues after the intact batches.
    let cut = ends[4].0 + 5;
    std::fs::write(&log, &full[..cut as usize])?;
    let out = store.append(&scope(), "c", vec![text("after-tear")], None).await?;
    let kept = intact_messages(&ends, cut);
    ensure!(out.seqs == [kept as u64 + 1], "append after a torn write: {out:?}");
    let stored = all(&store, "c").await?;
    ensure!(stored[..kept] == original[..kept] && stored.len() == kept + 1, "history after repair");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_filled_tail_after_power_loss_is_a_torn_write_not_damage() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (store, log, ends) = filesystem_history(dir.path(), 1).await?;
    store.close().await;
    // The file was extended but its new blocks never written.
    let mut bytes = std::fs::read(&log)?;
    bytes.extend([0u8; 4096]);
    std::fs::write(&log, &bytes)?;
    let reopened = shared_runtime()?.open_store(StoreConfig::builtin(Builtin::Filesystem, dir.path())).await?;
    ensure!(all(&reopened, "c").await?.len() == ends[0].1, "the intact message must load");
    let next = reopened.append(&scope(), "c", vec![text("after")], None).await?;
    ensure!(next.seqs == [2], "the next writer cuts the torn tail and continues: {:?}", next.seqs);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damage_in_the_middle_of_a_log_is_reported_with_its_offset_and_the_prefix_stays_listed() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (store, log, ends) = filesystem_history(dir.path(), 5).await?;
    // A flipped byte inside the third batch's frame, with intact frames after it.
    let (damaged_at, prefix) = ends[1];
    let mut bytes = std::fs::read(&log)?;
    bytes[damaged_at as usize + 20] ^= 0xff;
    std::fs::write(&log, &bytes)?;
    let names_the_damage =
        |reason: &str| reason.contains("messages.log") && reason.contains(&format!("damaged at byte {damaged_at}"));
    // The running host's adapter keeps an index of the log, valid while the file
    // keeps its length; every record it reads is still checked, so the damage is
    // reported as soon as it is read.
    match store.load(&scope(), "c", LoadRequest::latest(100)).await {
        Err(Error::Storage(reason)) if names_the_damage(&reason) => {}
        other => bail!("loading a damaged log must report the file and byte: {other:?}"),
    }
    store.close().await;
    // A restarted host finds the damage when it reads the log.
    let s = fresh_runtime()?.open_store(StoreConfig::builtin(Builtin::Filesystem, dir.path())).await?;
    match s.load(&scope(), "c", LoadRequest::latest(100)).await {
        Err(Error::Storage(reason)) if names_the_damage(&reason) => {}
        other => bail!("loading a damaged log must report the file and byte: {other:?}"),
    }
    match s.info(&scope(), "c").await {
        Err(Error::Storage(reason)) if names_the_damage(&reason) => {}
        other => bail!("info on a damaged log must report it: {other:?}"),
    }
    // What precedes the damage is still listed (the documented prefix), and other
    // conversations are unaffected.
    let listed = s.list(&scope(), None, 10).await?.conversations;
    let ids: Vec<(&str, u64)> = listed.iter().map(|c| (c.id.as_str(), c.message_count)).collect();
    ensure!(ids == [("c", prefix as u64), ("other", 1)], "listing: {ids:?}, want c with {prefix} messages");
    ensure!(all(&s, "other").await?.len() == 1, "another conversation was affected");
    // No write goes past damage: the log is left exactly as found.
    match s.append(&scope(), "c", vec![text("over-damage")], None).await {
        Err(Error::Storage(reason)) if names_the_damage(&reason) => {}
        other => bail!("appending to a damaged log must be refused: {other:?}"),
    }
    ensure!(std::fs::read(&log)? == bytes, "a refused append changed the damaged log");
    Ok(())
}

/// True if the error reports SQLite damage or a record whose tag no longer
/// matches, naming what is damaged.
fn names_sqlite_damage(error: &Error, conversation: &str) -> bool {
    match error {
        Error::Storage(reason) => ["malformed", "corrupt"].iter().any(|w| reason.contains(w)),
        Error::Integrity { conversation: c, .. } => c == conversation,
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_sqlite_page_is_reported_and_intact_data_still_loads() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::builtin(Builtin::Sqlite, dir.path());
    let mut originals = BTreeMap::new();
    let store = shared_runtime()?.open_store(config.clone()).await?;
    for c in 0..30 {
        let id = format!("c{c:02}");
        store.open(&scope(), &id, ConversationMeta::default()).await?;
        let batch = (0..20).map(|i| {
            NewMessage::text(Role::User, format!("{id} message {i}: {}", "x".repeat(300))).with_id(format!("{id}-{i}"))
        });
        store.append(&scope(), &id, batch.collect(), None).await?;
        originals.insert(id.clone(), all(&store, &id).await?);
    }
    // Every connection closes: the WAL is checkpointed into the main file.
    store.close().await;
    drop(store);
    let db = stowage::sql_database_path(dir.path());
    let wal = db.with_extension("sqlite3-wal");
    ensure!(std::fs::metadata(&wal).map_or(true, |m| m.len() == 0), "the WAL was not checkpointed: {}", wal.display());
    let mut bytes = std::fs::read(&db)?;
    let page = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        size => usize::from(size),
    };
    // The page holding a message of c15 (content is stored unsealed by default).
    let needle = b"c15 message 10: ";
    let at = bytes.windows(needle.len()).position(|w| w == needle).context("c15's message 10 is not in the file")?;
    let victim = at / page;
    ensure!(victim > 0, "the message sits on the header page");
    bytes[victim * page + 100..(victim + 1) * page].fill(0xa5);
    std::fs::write(&db, &bytes)?;

    let store = fresh_runtime()?.open_store(config.clone()).await?;
    let (mut intact, mut reported) = (Vec::new(), Vec::new());
    for (id, original) in &originals {
        match all(&store, id).await {
            Ok(loaded) if &loaded == original => intact.push(id.as_str()),
            Ok(loaded) => {
                let seqs: Vec<u64> = loaded.iter().map(|m| m.seq).collect();
                let differs: Vec<u64> =
                    loaded.iter().zip(original).filter(|(a, b)| a != b).map(|(a, _)| a.seq).collect();
                bail!("{id}: damaged data was returned as if intact: seqs {seqs:?}, differing {differs:?}")
            }
            Err(e) => match e.downcast_ref::<Error>() {
                Some(error) if names_sqlite_damage(error, id) => reported.push(format!("{id}: {error}")),
                _ => bail!("{id}: the failure does not name the damage: {e:#}"),
            },
        }
    }
    println!(
        "after corrupting page {victim}: {} conversations intact; reported:\n{}",
        intact.len(),
        reported.join("\n")
    );
    ensure!(reported.iter().any(|r| r.starts_with("c15:")), "the damaged conversation c15 was not reported");
    ensure!(!intact.is_empty(), "nothing intact survived one corrupted page");
    // Ranges that start in c15's intact rows: SQLite's scan of them can stop at
    // the damaged page without noticing it (a plain rowid range scan for
    // `after(5)` does), so each page is checked against the conversation's newest
    // seq: by the host on the load plan's rows, and by the adapter itself when
    // plans are off. A damaged history fails; it never comes back cut short.
    ranges_fail_naming_the_damage(&store, "load plans on").await?;
    store.close().await;
    drop(store);
    let mut plans_off = config;
    plans_off.limits.load_plans = false;
    let store = fresh_runtime()?.open_store(plans_off).await?;
    ranges_fail_naming_the_damage(&store, "load plans off").await?;
    ensure!(store.stats().planned_loads == 0, "{:?}", store.stats());
    Ok(())
}

async fn ranges_fail_naming_the_damage(store: &Store, how: &str) -> anyhow::Result<()> {
    for request in [LoadRequest::after(5, 1000), LoadRequest::after(0, 12), LoadRequest::latest(1000)] {
        match store.load(&scope(), "c15", request.clone()).await {
            Err(error) if names_sqlite_damage(&error, "c15") => {}
            Err(error) => bail!("{how}: c15, {request:?}: the failure does not name the damage: {error}"),
            Ok(page) => {
                let seqs: Vec<u64> = page.messages.iter().map(|m| m.seq).collect();
                bail!("{how}: c15, {request:?}: damaged data was returned as if intact: seqs {seqs:?}")
            }
        }
    }
    Ok(())
}

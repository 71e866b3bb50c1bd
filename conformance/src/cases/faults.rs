//! Batches are atomic when storage fails part-way: a failing SQL statement at
//! every position of an append, and a log cut at every byte of the last write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure};

use super::{all_messages, numbered, opened, scope, seqs};
use crate::Ctx;

/// All messages of a batch commit or none when any SQL statement of the append
/// fails: the 1st, the 2nd, … until the append gets through.
pub(crate) async fn batch_is_atomic_under_sql_faults(ctx: &Ctx) -> anyhow::Result<()> {
    #[cfg(feature = "fault-injection")]
    {
        let s = &ctx.store;
        opened(s, &scope(), "c").await?;
        s.append(&scope(), "c", numbered("keep", 3), None).await?;
        let before = all_messages(s, &scope(), "c").await?;
        let info_before = s.info(&scope(), "c").await?;
        let mut failures = 0;
        for k in 0..200 {
            s.inject_sql_failure_after(k)?;
            let result = s.append(&scope(), "c", numbered("batch", 5), None).await;
            s.disarm_sql_fault();
            match result {
                Err(stowage::Error::Storage(reason)) => {
                    ensure!(reason.contains("injected"), "failure after {k} statements: {reason}");
                    failures += 1;
                    ensure!(
                        all_messages(s, &scope(), "c").await? == before,
                        "failure after {k} statements left a partial batch"
                    );
                    ensure!(s.info(&scope(), "c").await? == info_before, "failure after {k} statements changed info");
                }
                Err(e) => bail!("failure after {k} statements: unexpected error {e}"),
                Ok(out) => {
                    ensure!(out.seqs == [4, 5, 6, 7, 8], "seqs after recovery: {:?}", out.seqs);
                    // The adapter's reads, its writes and its commit each took a fault.
                    ensure!(failures >= 3, "only {failures} injected failures hit the batch");
                    return Ok(());
                }
            }
        }
        bail!("append never succeeded")
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = ctx;
        bail!("this build cannot inject SQL faults")
    }
}

/// Every file under `dir` with its length.
fn files(dir: &Path, out: &mut BTreeMap<PathBuf, u64>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            files(&path, out)?;
        } else if meta.is_file() {
            out.insert(path, meta.len());
        }
    }
    Ok(())
}

/// A write cut at any byte (a crash mid-write) leaves the batch wholly absent and
/// everything before it intact; the next writer repairs the tail and continues.
/// Every byte offset of the last write is tried.
pub(crate) async fn a_torn_last_write_is_absent_at_every_byte(ctx: &Ctx) -> anyhow::Result<()> {
    let s = &ctx.store;
    opened(s, &scope(), "c").await?;
    s.append(&scope(), "c", numbered("keep", 3), None).await?;
    let before = all_messages(s, &scope(), "c").await?;
    let mut lengths = BTreeMap::new();
    files(&ctx.data_dir(), &mut lengths)?;
    s.append(&scope(), "c", numbered("batch", 5), None).await?;
    let mut after = BTreeMap::new();
    files(&ctx.data_dir(), &mut after)?;
    // The append's log is the file that grew.
    let grown: Vec<(&PathBuf, u64, u64)> = after
        .iter()
        .filter_map(|(path, len)| lengths.get(path).filter(|old| *len > **old).map(|old| (path, *old, *len)))
        .collect();
    let [(log, intact, full)] = grown[..] else { bail!("expected one log to grow with the append, found {grown:?}") };
    let bytes = std::fs::read(log)?;
    let mut cuts = 0;
    for cut in intact..full {
        std::fs::write(log, &bytes[..cut as usize])?;
        let seen = all_messages(s, &scope(), "c").await?;
        ensure!(seen == before, "torn at byte {cut} of {full}: read back seqs {:?}", seqs(&seen));
        cuts += 1;
    }
    ensure!(cuts == full - intact && cuts > 100, "only {cuts} cuts were tried");
    // A restarted host sees the same, and its next write repairs the tail.
    std::fs::write(log, &bytes[..(intact + (full - intact) / 2) as usize])?;
    let restarted = ctx.restarted_store().await?;
    ensure!(all_messages(&restarted, &scope(), "c").await? == before, "after a restart");
    let out = restarted.append(&scope(), "c", numbered("again", 2), None).await?;
    ensure!(out.seqs == [4, 5], "append after a torn write: {:?}", out.seqs);
    ensure!(seqs(&all_messages(&restarted, &scope(), "c").await?) == [1, 2, 3, 4, 5], "history after repair");
    Ok(())
}

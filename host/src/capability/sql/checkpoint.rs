//! A background checkpoint of a SQLite database in WAL mode, started by
//! [`Durability`](super::Durability) when the WAL is long.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::gate::WriteGate;

/// Why a background checkpoint stopped (it is retried after a later commit).
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("flushing the database file: {0}")]
    Flush(#[from] std::io::Error),
}

/// A checkpoint through a short-lived connection of the host's own: a passive
/// one beside the writers, then, holding `writers` off, one copying what they
/// committed meanwhile, so that the next commit starts the WAL over (unless a
/// reader still uses it). Without the turn (busy), the WAL stays as it is and
/// the next commit's checkpoint tries again.
///
/// SQLite flushes the database file only at the end of a checkpoint that
/// reached the WAL's last frame. The passive copy, overtaken by the writers,
/// does not, so the pages it wrote (up to
/// [`CHECKPOINT_FRAMES`](super::durability::CHECKPOINT_FRAMES) of them) would
/// all be flushed by the catch-up, with every writer held off for it. They are
/// flushed here first, beside the writers; the catch-up then flushes only what
/// it copied itself (phase E with 1,000 conversations, two runs each: p99 187
/// against 260–265 ms, 24,800–27,800 against 21,300–22,500 msgs/s).
pub fn checkpoint(db: &Path, writers: Option<&Arc<WriteGate>>, busy_timeout: Duration) -> Result<(), CheckpointError> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = rusqlite::Connection::open_with_flags(db, flags)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // (busy, frames in the WAL, frames copied so far); -1s outside WAL mode.
    let (_, frames, copied) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    })?;
    if copied > 0 && copied < frames {
        File::open(db)?.sync_data()?;
    }
    if let Some(Ok(_turn)) = writers.map(|gate| gate.enter(busy_timeout)) {
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint copies as far as a reader's snapshot allows (the partial copy
    /// is flushed beside the writers) and, once no reader holds it back, all of
    /// it: the next commit then writes the WAL over from its start.
    #[test]
    fn a_checkpoint_lets_the_next_commit_start_the_wal_over() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("t.db");
        let wal = dir.path().join("t.db-wal");
        let writer = rusqlite::Connection::open(&db)?;
        writer.pragma_update(None, "journal_mode", "WAL")?;
        writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        writer.execute_batch("CREATE TABLE t (x BLOB)")?;
        let insert = |n: usize| -> rusqlite::Result<()> {
            for _ in 0..n {
                writer.execute("INSERT INTO t VALUES (zeroblob(3000))", [])?;
            }
            Ok(())
        };
        insert(50)?;
        let reader = rusqlite::Connection::open(&db)?;
        reader.execute_batch("BEGIN")?;
        let seen: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
        insert(50)?;
        let gate = Arc::new(WriteGate::default());
        checkpoint(&db, Some(&gate), Duration::from_secs(1))?;
        let progress = |c: &rusqlite::Connection| -> rusqlite::Result<(i64, i64)> {
            c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?)))
        };
        let (frames, copied) = progress(&writer)?;
        assert!(0 < copied && copied < frames, "copied up to the reader's snapshot: {copied} of {frames}");
        reader.execute_batch("COMMIT")?;
        assert_eq!(seen, 50, "the reader kept its snapshot");
        checkpoint(&db, Some(&gate), Duration::from_secs(1))?;
        let (frames, copied) = progress(&writer)?;
        assert_eq!(copied, frames, "everything copied once the reader let go");
        let long = std::fs::metadata(&wal)?.len();
        insert(1)?;
        assert_eq!(std::fs::metadata(&wal)?.len(), long, "the next commit wrote the WAL over from its start");
        let (frames, _) = progress(&writer)?;
        assert!(frames < 10, "the WAL holds only the new commit: {frames} frames");
        let rows: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
        assert_eq!(rows, 101);
        Ok(())
    }
}

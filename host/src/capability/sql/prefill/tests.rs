use super::*;

/// Zeros past the WAL's end change nothing SQLite reads, before a restart,
/// after one, and when another connection recovers the WAL from the file.
#[test]
fn zeros_ahead_of_the_wal_are_ignored_and_overwritten() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let wal = dir.path().join("t.db-wal");
    let writer = rusqlite::Connection::open(&db)?;
    writer.pragma_update(None, "journal_mode", "WAL")?;
    writer.pragma_update(None, "wal_autocheckpoint", 0)?;
    writer.execute_batch("CREATE TABLE t (x BLOB)")?;
    let before = std::fs::metadata(&wal)?.len();
    let (measured, room) = prefill(&db, &wal, 128, true, None, Duration::from_secs(1))?.ok_or("a WAL")?;
    assert_eq!(room, 128);
    assert_eq!(measured, identity::of_path(&wal)?, "the WAL on disk was filled");
    let filled = std::fs::metadata(&wal)?.len();
    assert_eq!(filled, 32 + 128 * 4120, "the WAL now has room for 128 frames (it had {before} bytes)");
    for i in 0..40 {
        writer.execute("INSERT INTO t VALUES (randomblob(100 + ?1))", [i])?;
    }
    assert_eq!(std::fs::metadata(&wal)?.len(), filled, "the commits overwrote zeros, the file did not grow");
    // Another connection reads every commit, and recovers the same from the file alone.
    let reader = rusqlite::Connection::open(&db)?;
    let count: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(count, 40);
    let room = |frames| prefill(&db, &wal, frames, true, None, Duration::from_secs(1)).map(|r| r.map(|(_, room)| room));
    assert_eq!(room(10)?, Some(128), "room is never taken back");
    assert_eq!(room(u64::MAX)?, Some(MAX_FRAMES), "capped");
    let copy = dir.path().join("copy.db");
    std::fs::copy(&db, &copy)?;
    std::fs::copy(&wal, dir.path().join("copy.db-wal"))?;
    let recovered = rusqlite::Connection::open(&copy)?;
    let count: i64 = recovered.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(count, 40, "recovery stops at the first frame of zeros");
    let check: String = recovered.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(check, "ok");
    Ok(())
}

/// Waits for the prefill under way, if any.
async fn settled(prefiller: &Prefiller) {
    while prefiller.running() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A connection to a new database in WAL mode, with one table.
fn wal_writer(db: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let writer = rusqlite::Connection::open(db)?;
    writer.pragma_update(None, "journal_mode", "WAL")?;
    writer.execute_batch("CREATE TABLE t (x)")?;
    Ok(writer)
}

/// Unflushed commits get room too, and a WAL made anew (its frame count went
/// down) is looked up again instead of counting the old file's room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unflushed_commits_follow_the_wal_file() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let wal = dir.path().join("t.db-wal");
    let chunk = 32 + CHUNK_FRAMES * 4120;
    let refused = Arc::new(AtomicBool::new(false));
    let prefiller = Arc::new(Prefiller::new(&db, &wal, false, None, Duration::from_secs(1), refused));
    let writer = wal_writer(&db)?;
    prefiller.after_unflushed_commit(FIRST_FRAMES - 1);
    settled(&prefiller).await;
    assert!(std::fs::metadata(&wal)?.len() < chunk, "too few frames to prefill");
    prefiller.after_unflushed_commit(FIRST_FRAMES);
    settled(&prefiller).await;
    assert_eq!(std::fs::metadata(&wal)?.len(), chunk, "one chunk of room");
    // The last connection to close deletes the WAL; the next one makes another.
    drop(writer);
    assert!(!wal.exists());
    let writer = rusqlite::Connection::open(&db)?;
    writer.execute_batch("INSERT INTO t VALUES (1)")?;
    prefiller.after_unflushed_commit(2);
    prefiller.after_unflushed_commit(FIRST_FRAMES);
    settled(&prefiller).await;
    assert_eq!(std::fs::metadata(&wal)?.len(), chunk, "the new file got its own room");
    let count: i64 = writer.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(count, 1);
    Ok(())
}

/// A failed flush of the room written ahead refuses flushes (shared with the
/// store's `Durability`), and no prefill runs after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_flush_of_the_room_refuses_flushes() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let wal = dir.path().join("t.db-wal");
    let refused = Arc::new(AtomicBool::new(false));
    let prefiller = Arc::new(Prefiller::new(&db, &wal, true, None, Duration::from_secs(1), Arc::clone(&refused)));
    let _writer = wal_writer(&db)?;
    let file = identity::of_path(&wal)?;
    prefiller.fail_flush.store(true, Ordering::Release);
    prefiller.after_commit(FIRST_FRAMES, Some(file));
    settled(&prefiller).await;
    assert!(refused.load(Ordering::Acquire), "flushes are refused");
    assert!(!prefiller.fail_flush.load(Ordering::Acquire), "the prefill ran");
    let length = std::fs::metadata(&wal)?.len();
    prefiller.after_commit(FIRST_FRAMES + CHUNK_FRAMES, Some(file));
    settled(&prefiller).await;
    assert_eq!(std::fs::metadata(&wal)?.len(), length, "no prefill once refused");
    Ok(())
}

#[test]
fn room_comes_in_whole_chunks_at_least_one_ahead() {
    assert_eq!(target(256), CHUNK_FRAMES);
    assert_eq!(target(CHUNK_FRAMES / 2 + 1), 2 * CHUNK_FRAMES);
    assert_eq!(target(3 * CHUNK_FRAMES), 4 * CHUNK_FRAMES);
}

/// A prefill creates nothing where there is no WAL, and waits for SQLite's
/// write lock.
#[test]
fn no_wal_no_prefill_and_a_held_write_lock_is_waited_out() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let wal = dir.path().join("t.db-wal");
    assert!(prefill(&db, &wal, 64, false, None, Duration::from_secs(1))?.is_none());
    assert!(!wal.exists() && !db.exists(), "nothing was created");
    let writer = rusqlite::Connection::open(&db)?;
    writer.pragma_update(None, "journal_mode", "WAL")?;
    writer.execute_batch("CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")?;
    let busy = prefill(&db, &wal, 64, false, None, Duration::from_millis(50));
    assert!(matches!(busy, Err(PrefillError::Sqlite(_))), "the writer holds the lock: {busy:?}");
    writer.execute_batch("COMMIT")?;
    let room = prefill(&db, &wal, 64, false, None, Duration::from_millis(50))?.map(|(_, room)| room);
    assert_eq!(room, Some(64));
    Ok(())
}

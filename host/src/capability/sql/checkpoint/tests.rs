use super::*;

type Setup = (tempfile::TempDir, std::path::PathBuf, rusqlite::Connection, rusqlite::Connection);

/// A database whose WAL holds 100 rows of 3 KB, the first 50 of them in the
/// snapshot of a reader that holds it (returned: dir, db, writer, reader).
fn held_back() -> Result<Setup, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let writer = rusqlite::Connection::open(&db)?;
    writer.pragma_update(None, "journal_mode", "WAL")?;
    writer.pragma_update(None, "wal_autocheckpoint", 0)?;
    writer.execute_batch("CREATE TABLE t (x BLOB)")?;
    insert(&writer, 50)?;
    let reader = rusqlite::Connection::open(&db)?;
    reader.execute_batch("BEGIN")?;
    let seen: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(seen, 50);
    insert(&writer, 50)?;
    Ok((dir, db, writer, reader))
}

fn insert(writer: &rusqlite::Connection, n: usize) -> rusqlite::Result<()> {
    for _ in 0..n {
        writer.execute("INSERT INTO t VALUES (zeroblob(3000))", [])?;
    }
    Ok(())
}

/// (frames in the WAL, frames copied), by a passive checkpoint of `c`'s.
fn progress(c: &rusqlite::Connection) -> rusqlite::Result<(i64, i64)> {
    c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?)))
}

/// A checkpoint copies as far as a reader's snapshot allows (the partial copy
/// is flushed beside the writers) and, once no reader holds it back, all of
/// it: the next commit then writes the WAL over from its start.
#[test]
fn a_checkpoint_lets_the_next_commit_start_the_wal_over() -> Result<(), Box<dyn std::error::Error>> {
    let (dir, db, writer, reader) = held_back()?;
    let wal = dir.path().join("t.db-wal");
    let (gate, refused) = (Arc::new(WriteGate::default()), AtomicBool::new(false));
    checkpoint(&db, Some(&gate), Duration::from_secs(1), &refused)?;
    let (frames, copied) = progress(&writer)?;
    assert!(0 < copied && copied < frames, "copied up to the reader's snapshot: {copied} of {frames}");
    reader.execute_batch("COMMIT")?;
    checkpoint(&db, Some(&gate), Duration::from_secs(1), &refused)?;
    let (frames, copied) = progress(&writer)?;
    assert_eq!(copied, frames, "everything copied once the reader let go");
    let long = std::fs::metadata(&wal)?.len();
    insert(&writer, 1)?;
    assert_eq!(std::fs::metadata(&wal)?.len(), long, "the next commit wrote the WAL over from its start");
    let (frames, _) = progress(&writer)?;
    assert!(frames < 10, "the WAL holds only the new commit: {frames} frames");
    let rows: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(rows, 101);
    assert!(!refused.load(Ordering::Acquire));
    Ok(())
}

/// A copy that reached the WAL's end is left to SQLite's own flush (one
/// stopped short is flushed here: the next tests).
#[test]
fn a_copy_that_reached_the_end_is_not_flushed_again() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, db, writer, reader) = held_back()?;
    reader.execute_batch("COMMIT")?;
    let conn = open_aside(&db)?;
    let refused = AtomicBool::new(false);
    FAIL_SYNC_AFTER.set(Some(0));
    let copied = copy(&conn, &refused, None)?;
    assert!(copied.copied && copied.flushed && !copied.short, "{copied:?}");
    drop(conn);
    insert(&writer, 20)?;
    checkpoint(&db, None, Duration::from_secs(1), &refused)?;
    assert_eq!(FAIL_SYNC_AFTER.replace(None), Some(0), "no flush of a copy that reached the end");
    assert!(!refused.load(Ordering::Acquire));
    drop(writer);
    Ok(())
}

/// The catch-up copy, under the write gate, stopped short by a reader, is
/// flushed too when it copied anything (its failed flush refuses flushes),
/// and not when it copied nothing.
#[test]
fn a_partial_catch_up_is_flushed_if_it_copied_anything() -> Result<(), Box<dyn std::error::Error>> {
    let gate = Arc::new(WriteGate::default());
    for moved in [false, true] {
        let (_dir, db, writer, reader) = held_back()?;
        let (writer, reader) = (std::rc::Rc::new(writer), std::rc::Rc::new(reader));
        let (w, r) = (std::rc::Rc::clone(&writer), std::rc::Rc::clone(&reader));
        // Between the copies: the reader moves to a later snapshot, more is
        // committed past it (or nothing happens).
        BETWEEN_COPIES.set(Some(Box::new(move || {
            if moved {
                let advanced = r.execute_batch("COMMIT; BEGIN; SELECT count(*) FROM t").and_then(|()| insert(&w, 20));
                assert!(advanced.is_ok(), "{advanced:?}");
            }
        })));
        let refused = AtomicBool::new(false);
        // The first copy's flush works; the catch-up's, if any, fails.
        FAIL_SYNC_AFTER.set(Some(1));
        let outcome = checkpoint(&db, Some(&gate), Duration::from_secs(1), &refused);
        if moved {
            assert!(matches!(outcome, Err(CheckpointError::Flush(_))), "{outcome:?}");
            assert!(refused.load(Ordering::Acquire), "flushes are refused");
            let (frames, copied) = progress(&writer)?;
            assert!(copied < frames, "the catch-up stopped at the reader: {copied} of {frames}");
        } else {
            assert!(outcome.is_ok(), "{outcome:?}");
            assert_eq!(FAIL_SYNC_AFTER.replace(None), Some(0), "one flush: the first copy's");
        }
        drop(reader);
    }
    Ok(())
}

/// A copy that commits overtook (SQLite does not flush it) is left to the
/// catch-up when that reaches the end (SQLite's flush covers it); it is
/// flushed before the checkpoint returns when there is no catch-up, or when
/// a reader holds the catch-up at the first copy's end.
#[test]
fn an_overtaken_copy_is_flushed_by_the_catch_up_or_before_the_checkpoint_returns()
-> Result<(), Box<dyn std::error::Error>> {
    let gate = Arc::new(WriteGate::default());
    for (catch_up, pinned) in [(false, false), (true, false), (true, true)] {
        let (_dir, db, writer, reader) = held_back()?;
        reader.execute_batch("COMMIT")?;
        let (writer, reader) = (std::rc::Rc::new(writer), std::rc::Rc::new(reader));
        let (w, r) = (std::rc::Rc::clone(&writer), std::rc::Rc::clone(&reader));
        // Right after the first copy: commits overtake it (a reader may
        // first take a snapshot at its end).
        AFTER_COPY.set(Some(Box::new(move || {
            let pin = if pinned { r.execute_batch("BEGIN; SELECT count(*) FROM t") } else { Ok(()) };
            let overtaken = pin.and_then(|()| insert(&w, 5));
            assert!(overtaken.is_ok(), "{overtaken:?}");
        })));
        // Any flush of the host's fails, so it shows.
        FAIL_SYNC_AFTER.set(Some(0));
        let refused = AtomicBool::new(false);
        let outcome = checkpoint(&db, catch_up.then_some(&gate), Duration::from_secs(1), &refused);
        assert!(AFTER_COPY.take().is_none(), "the hook ran");
        if catch_up && !pinned {
            assert!(outcome.is_ok(), "{outcome:?}");
            assert_eq!(FAIL_SYNC_AFTER.replace(None), Some(0), "no flush of the host's");
            let (frames, copied) = progress(&writer)?;
            assert_eq!(copied, frames, "the catch-up reached the end");
        } else {
            assert!(matches!(outcome, Err(CheckpointError::Flush(_))), "{catch_up} {pinned}: {outcome:?}");
            assert!(refused.load(Ordering::Acquire));
        }
        if pinned {
            reader.execute_batch("COMMIT")?;
        }
    }
    Ok(())
}

/// A catch-up that fails still flushes what the first copy left (one that
/// commits overtook) before the checkpoint returns; after a first copy that
/// SQLite flushed, it flushes nothing more.
#[test]
fn a_failed_catch_up_flushes_what_the_first_copy_left() -> Result<(), Box<dyn std::error::Error>> {
    let gate = Arc::new(WriteGate::default());
    for overtaken in [true, false] {
        let (_dir, db, writer, reader) = held_back()?;
        reader.execute_batch("COMMIT")?;
        let writer = std::rc::Rc::new(writer);
        let w = std::rc::Rc::clone(&writer);
        AFTER_COPY.set(Some(Box::new(move || {
            let committed = if overtaken { insert(&w, 5) } else { Ok(()) };
            assert!(committed.is_ok(), "{committed:?}");
        })));
        BETWEEN_COPIES.set(Some(Box::new(|| FAIL_NEXT_COPY.set(true))));
        // Any flush of the host's fails, so it shows.
        FAIL_SYNC_AFTER.set(Some(0));
        let refused = AtomicBool::new(false);
        let outcome = checkpoint(&db, Some(&gate), Duration::from_secs(1), &refused);
        assert!(!FAIL_NEXT_COPY.replace(false), "the catch-up ran");
        if overtaken {
            assert!(matches!(outcome, Err(CheckpointError::Flush(_))), "the first copy flushed: {outcome:?}");
            assert!(refused.load(Ordering::Acquire), "flushes are refused");
        } else {
            assert!(matches!(outcome, Err(CheckpointError::Sqlite(_))), "the catch-up's own error: {outcome:?}");
            assert_eq!(FAIL_SYNC_AFTER.replace(None), Some(0), "no flush of the host's");
            assert!(!refused.load(Ordering::Acquire));
        }
    }
    Ok(())
}

/// No copy runs once flushes are refused: neither a checkpoint's first nor
/// a copy (the catch-up's) that finds them refused after its wait.
#[test]
fn no_copy_runs_once_refused() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, db, writer, reader) = held_back()?;
    reader.execute_batch("COMMIT")?;
    let refused = AtomicBool::new(true);
    checkpoint(&db, None, Duration::from_secs(1), &refused)?;
    assert_eq!(wal_state(&writer).map(|(_, copied)| copied), Some(0), "nothing copied");
    assert!(!copy(&open_aside(&db)?, &refused, None)?.copied);
    assert_eq!(wal_state(&writer).map(|(_, copied)| copied), Some(0), "nothing copied");
    refused.store(false, Ordering::Release);
    checkpoint(&db, None, Duration::from_secs(1), &refused)?;
    let (frames, copied) = wal_state(&writer).ok_or("the WAL's state")?;
    assert!(copied > 0 && copied == frames, "copied once let: {copied} of {frames}");
    Ok(())
}

/// A failed flush of a partial copy (which SQLite counts as done already)
/// refuses flushes; the host's own connection does not checkpoint as it
/// closes, even as the database's last.
#[test]
fn a_failed_flush_of_a_partial_copy_refuses_flushes() -> Result<(), Box<dyn std::error::Error>> {
    let (dir, db, writer, reader) = held_back()?;
    let refused = AtomicBool::new(false);
    FAIL_SYNC_AFTER.set(Some(0));
    let failed = checkpoint(&db, None, Duration::from_secs(1), &refused);
    assert!(matches!(failed, Err(CheckpointError::Flush(_))), "{failed:?}");
    assert!(refused.load(Ordering::Acquire), "flushes are refused");
    let (frames, copied) = progress(&writer)?;
    assert!(0 < copied && copied < frames, "SQLite counts the partial copy as done: {copied} of {frames}");
    let aside = open_aside(&db)?;
    // A connection takes part in the WAL (and holds its share of the
    // database) from its first read on.
    aside.query_row("SELECT count(*) FROM t", [], |_| Ok(()))?;
    drop((reader, writer));
    drop(aside);
    assert!(dir.path().join("t.db-wal").exists(), "the last connection, the host's own, left the WAL alone");
    Ok(())
}

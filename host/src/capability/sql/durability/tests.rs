use super::*;

/// A commit that wrote to the WAL, as a connection's WAL hook reports it: its ticket.
fn commit(durability: &Durability) -> Option<u64> {
    let reserved = durability.reserve();
    durability.wal_commits.fetch_add(1, Ordering::AcqRel);
    durability.committed(reserved)
}

/// A database in WAL mode with one table, its connection, and its durability at full sync.
fn wal_database(
    dir: &tempfile::TempDir,
) -> Result<(PathBuf, rusqlite::Connection, Arc<Durability>), Box<dyn std::error::Error>> {
    let db = dir.path().join("t.db");
    let conn = rusqlite::Connection::open(&db)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.execute_batch("CREATE TABLE t (x)")?;
    let durability = Arc::new(Durability::new(&db, true, None, Duration::from_secs(1)));
    Ok((db, conn, durability))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_share_flushes_and_all_become_durable() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (db, _conn, durability) = wal_database(&dir)?;
    let mut waiters = Vec::new();
    for _ in 0..32 {
        let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
        let d = Arc::clone(&durability);
        waiters.push(tokio::spawn(async move { d.durable(ticket, ticket % 2 == 0).await }));
    }
    for waiter in waiters {
        waiter.await?.map_err(|e| format!("{e:?}"))?;
    }
    assert_eq!(*durability.durable.borrow(), 32, "every ticket is durable");
    let normal = Durability::new(&db, false, None, Duration::from_secs(1));
    assert!(commit(&normal).is_none(), "normal sync waits for nothing");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_flushes_are_refused_no_commit_is_reported_durable() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (_db, conn, durability) = wal_database(&dir)?;
    let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
    durability.durable(ticket, true).await.map_err(|e| format!("{e:?}"))?;
    durability.refuse_flushes();
    conn.execute_batch("INSERT INTO t VALUES (1)")?;
    let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
    let flushed = durability.durable(ticket, true).await;
    assert!(matches!(flushed, Err(SqlErrorKind::Io(_))), "{flushed:?}");
    Ok(())
}

/// After a failed flush of the WAL's data, no later flush reports success, even
/// one the disk would take: the failed one's pages may be marked clean, off the
/// disk. Both paths: the WAL's first flush (beside its directory's) and a later one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_flush_refuses_every_later_one() -> Result<(), Box<dyn std::error::Error>> {
    for fail_first in [true, false] {
        let dir = tempfile::tempdir()?;
        let (_db, conn, durability) = wal_database(&dir)?;
        if !fail_first {
            let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
            durability.durable(ticket, true).await.map_err(|e| format!("{e:?}"))?;
        }
        conn.execute_batch("INSERT INTO t VALUES (1)")?;
        let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
        durability.fail_next_flush.store(true, Ordering::Release);
        let failed = durability.durable(ticket, true).await;
        assert!(matches!(failed, Err(SqlErrorKind::Io(_))), "{failed:?}");
        for _ in 0..2 {
            conn.execute_batch("INSERT INTO t VALUES (2)")?;
            let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
            let later = durability.durable(ticket, true).await;
            assert!(matches!(later, Err(SqlErrorKind::Io(_))), "a later flush is refused ({fail_first}): {later:?}");
        }
    }
    Ok(())
}

/// A writer alone has its flush handed to the flusher thread; one with another
/// commit under way, or beside a checkpoint, flushes on its own thread, and a
/// refused store refuses either way.
#[test]
fn only_a_writer_alone_hands_its_flush_off() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (_db, conn, durability) = wal_database(&dir)?;
    // Long enough that the flusher never sleeps between these flushes.
    durability.set_flush_spin(Duration::from_secs(30));
    let first = commit(&durability).ok_or("full sync hands out tickets")?;
    // The WAL's first flush (with its directory's) stays on this thread.
    durability.durable_here(first).ok_or("nobody else flushes")?.map_err(|e| format!("{e:?}"))?;
    assert_eq!(durability.handoff.flushes(), 0);
    // A flush goes to the flusher once it spins on another CPU than this
    // thread's (a flush on this thread wakes it; the scheduler moves it).
    for _ in 0..200 {
        conn.execute_batch("INSERT INTO t VALUES (1)")?;
        let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
        durability.durable_here(ticket).ok_or("nobody else flushes")?.map_err(|e| format!("{e:?}"))?;
        assert!(*durability.durable.borrow() >= ticket);
        if durability.handoff.flushes() >= 3 {
            break;
        }
    }
    assert!(durability.handoff.flushes() >= 3, "a writer alone hands its flush off");
    let handed = durability.handoff.flushes();
    conn.execute_batch("INSERT INTO t VALUES (2)")?;
    let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
    let under_way = durability.reserve();
    durability.durable_here(ticket).ok_or("nobody else flushes")?.map_err(|e| format!("{e:?}"))?;
    assert_eq!(durability.handoff.flushes(), handed, "another commit under way: flushed here");
    assert_eq!(durability.committed(under_way), None, "it wrote nothing");
    // A checkpoint's thread needs a core: no handoff while it runs.
    durability.checkpointing.store(true, Ordering::Release);
    conn.execute_batch("INSERT INTO t VALUES (2)")?;
    let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
    durability.durable_here(ticket).ok_or("nobody else flushes")?.map_err(|e| format!("{e:?}"))?;
    assert_eq!(durability.handoff.flushes(), handed, "a checkpoint runs: flushed here");
    durability.checkpointing.store(false, Ordering::Release);
    durability.refuse_flushes();
    conn.execute_batch("INSERT INTO t VALUES (3)")?;
    let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
    let refused = durability.durable_here(ticket).ok_or("nobody else flushes")?;
    assert!(matches!(refused, Err(SqlErrorKind::Io(_))), "{refused:?}");
    Ok(())
}

/// When every connection closes, SQLite checkpoints the WAL and deletes it; the
/// next connection makes a new file. A flush must reach that file, not the
/// deleted one the handle still points at.
#[test]
fn a_flush_follows_the_wal_file_sqlite_uses_now() -> Result<(), Box<dyn std::error::Error>> {
    use std::os::unix::fs::MetadataExt as _;
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let wal = dir.path().join("t.db-wal");
    let durability = Durability::new(&db, true, None, Duration::from_secs(1));
    durability.set_flush_spin(Duration::from_micros(100));
    let conn = rusqlite::Connection::open(&db)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1)")?;
    durability.flush_wal(true).map_err(|e| format!("{e:?}"))?;
    let first = durability.state().wal.as_ref().ok_or("the WAL is held")?.0.metadata()?.ino();
    drop(conn);
    assert!(!wal.exists(), "the last connection to close removes the WAL");
    let conn = rusqlite::Connection::open(&db)?;
    conn.execute_batch("INSERT INTO t VALUES (2)")?;
    durability.flush_wal(true).map_err(|e| format!("{e:?}"))?;
    let held = durability.state().wal.as_ref().ok_or("the new WAL is held")?.0.metadata()?.ino();
    assert_eq!(held, std::fs::metadata(&wal)?.ino(), "the flush went to the WAL on disk");
    // A WAL seen before may be flushed on the flusher thread (a writer alone).
    conn.execute_batch("INSERT INTO t VALUES (3)")?;
    durability.flush_wal(true).map_err(|e| format!("{e:?}"))?;
    // The old handle kept the deleted file's inode allocated, so a new WAL has another.
    assert_ne!(first, held, "a new WAL file, not the deleted one");
    // With no WAL at all, everything was checkpointed (and synced) on close.
    drop(conn);
    durability.flush_wal(true).map_err(|e| format!("{e:?}"))?;
    Ok(())
}

/// Holds flushes of the WAL's data until the test lets them go.
pub(super) struct Hold {
    started: std::sync::mpsc::Sender<()>,
    release: std::sync::mpsc::Receiver<()>,
}

impl Hold {
    /// Tells the test this flush started, then waits for its go.
    pub(super) fn wait(self) {
        let _ = self.started.send(());
        let _ = self.release.recv();
    }
}

/// A caller that stops waiting while the flush it leads runs on the blocking
/// pool does not hand the lead on before that flush is over (a second flush
/// beside it could succeed before a failure of the first refuses); the flush
/// still makes its commits durable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_keeps_the_lead_when_its_caller_stops_waiting() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (_db, _conn, durability) = wal_database(&dir)?;
    let (started_tx, started) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    *durability.hold_flushes.lock().map_err(|e| e.to_string())? =
        Some(Hold { started: started_tx, release: release_rx });
    let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
    let d = Arc::clone(&durability);
    let waiter = tokio::spawn(async move { d.durable(ticket, false).await });
    tokio::task::spawn_blocking(move || started.recv()).await??;
    waiter.abort();
    assert!(waiter.await.is_err_and(|e| e.is_cancelled()), "the caller stopped waiting");
    assert!(durability.state().syncing, "the lead stays with the flush under way");
    assert_eq!(durability.unflushed(), Some(ticket), "the commit is not durable yet");
    release.send(())?;
    let mut durable = durability.durable.subscribe();
    durable.wait_for(|d| *d >= ticket).await?;
    assert!(!durability.state().syncing, "the lead is handed back once the flush is over");
    assert_eq!(durability.unflushed(), None, "every commit is durable");
    // A flush led on the blocking pool that worked lets go of the coordinator.
    let ticket = commit(&durability).ok_or("full sync hands out tickets")?;
    durability.durable(ticket, false).await.map_err(|e| format!("{e:?}"))?;
    // (The blocking tasks drop their references as they end, maybe after the wake-up.)
    for _ in 0..5000 {
        if Arc::strong_count(&durability) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(Arc::strong_count(&durability), 1, "the flush tasks kept no reference");
    Ok(())
}

/// Once flushes are refused, checkpoints stop and a store's connection closes
/// without one, even as the database's last: the WAL may hold the only copy on
/// disk of what a failed flush lost.
#[test]
fn a_refused_store_neither_checkpoints_nor_closes_with_a_checkpoint() -> Result<(), Box<dyn std::error::Error>> {
    for refuse in [false, true] {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("t.db");
        let durability = Durability::new(&db, true, None, Duration::from_secs(1));
        let mut conn = super::super::sqlite::open(
            &db,
            Duration::from_secs(1),
            durability.wal_frames(),
            durability.wal_commits(),
            durability.refusal(),
        )
        .map_err(|e| format!("{e:?}"))?;
        use super::super::Connection as _;
        conn.execute("CREATE TABLE t (x)", &[]).map_err(|e| format!("{e:?}"))?;
        if refuse {
            durability.refuse_flushes();
        }
        let before = std::fs::metadata(&db)?.len();
        durability.wal_frames.store(CHECKPOINT_FRAMES, Ordering::Release);
        durability.maybe_checkpoint();
        assert!(!durability.checkpointing.load(Ordering::Acquire), "no checkpoint left running");
        // The table's page reaches the database file only by a checkpoint.
        let copied = std::fs::metadata(&db)?.len() > before;
        assert_eq!(copied, !refuse, "checkpointed: {copied}, refused: {refuse}");
        drop(conn);
        let wal = dir.path().join("t.db-wal");
        assert_eq!(wal.exists(), refuse, "refused: {refuse}");
    }
    Ok(())
}

/// A read that saw a commit under way (its ticket reserved, the commit not yet
/// returned) waits for the commit to return, with no flush meanwhile, then for
/// its flush; a commit that wrote nothing is durable as soon as the one before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_waits_for_a_commit_under_way_then_its_flush() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (_db, _conn, durability) = wal_database(&dir)?;
    let first = commit(&durability).ok_or("full sync hands out tickets")?;
    durability.durable(first, true).await.map_err(|e| format!("{e:?}"))?;
    let reserved = durability.reserve();
    let read = durability.unflushed().ok_or("a read waits for the commit under way")?;
    assert!(durability.durable_here(read).is_none(), "no flush leads for a commit under way");
    // A flush started now would fail (and refuse every later one).
    durability.fail_next_flush.store(true, Ordering::Release);
    let d = Arc::clone(&durability);
    let waiter = tokio::spawn(async move { d.durable(read, false).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished(), "no answer before the commit returns");
    assert!(durability.fail_next_flush.swap(false, Ordering::AcqRel), "no flush while the commit was under way");
    durability.wal_commits.fetch_add(1, Ordering::AcqRel);
    assert_eq!(durability.committed(reserved), Some(read));
    waiter.await?.map_err(|e| format!("{e:?}"))?;
    assert!(*durability.durable.borrow() >= read, "flushed once the commit returned");
    // A commit that wrote nothing needs no flush (one would fail).
    durability.fail_next_flush.store(true, Ordering::Release);
    let reserved = durability.reserve();
    let read = durability.unflushed().ok_or("a read waits for the commit under way")?;
    assert_eq!(durability.committed(reserved), None, "it wrote nothing");
    assert!(durability.unflushed().is_none(), "durable with the commit before it");
    durability.durable(read, true).await.map_err(|e| format!("{e:?}"))?;
    assert!(durability.fail_next_flush.swap(false, Ordering::AcqRel), "no flush ran");
    // One that wrote nothing after one not yet flushed: a read waits for both,
    // and the return of the second wakes it to flush them.
    let wrote = commit(&durability).ok_or("full sync hands out tickets")?;
    let reserved = durability.reserve();
    let read = durability.unflushed().ok_or("a read waits for the commits")?;
    assert!(read > wrote);
    let d = Arc::clone(&durability);
    let waiter = tokio::spawn(async move { d.durable(read, false).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(durability.committed(reserved), None, "it wrote nothing");
    assert_eq!(durability.unflushed(), Some(read), "the commit before it is not flushed");
    let woken = tokio::time::timeout(Duration::from_secs(10), waiter).await;
    woken.map_err(|_| "the waiter was never woken")??.map_err(|e| format!("{e:?}"))?;
    assert!(durability.unflushed().is_none(), "both flushed");
    Ok(())
}

/// A database file put in place without flushing it or its directory has both
/// flushed by the next flush of the WAL: with no WAL at all (everything
/// checkpointed into the file), and with a WAL held from an earlier flush; one
/// that fails owes it again.
#[test]
fn a_database_placed_unflushed_is_flushed_with_its_directory_by_the_next_flush()
-> Result<(), Box<dyn std::error::Error>> {
    let owed = |d: &Durability| d.placed_unflushed.load(Ordering::Acquire);
    let dir = tempfile::tempdir()?;
    let no_wal = Durability::new(&dir.path().join("none.db"), true, None, Duration::from_secs(1));
    no_wal.placed_unflushed();
    no_wal.started().map_err(|e| format!("{e:?}"))?;
    assert!(!owed(&no_wal), "flushed without a WAL");
    let (_db, conn, held) = wal_database(&dir)?;
    held.started().map_err(|e| format!("{e:?}"))?;
    assert!(held.state().wal.is_some(), "the WAL is held after its first flush");
    held.placed_unflushed();
    conn.execute_batch("INSERT INTO t VALUES (1)")?;
    held.started().map_err(|e| format!("{e:?}"))?;
    assert!(!owed(&held), "flushed beside the held WAL's data");
    let gone = Durability::new(&dir.path().join("missing").join("t.db"), true, None, Duration::from_secs(1));
    gone.placed_unflushed();
    assert!(gone.started().is_err(), "a directory that cannot be flushed fails the flush");
    assert!(owed(&gone), "and is owed to the next one");
    Ok(())
}

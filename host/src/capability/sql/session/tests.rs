use std::time::Duration;

use super::super::SqlSync;
use super::*;

fn session(dir: &tempfile::TempDir) -> SqlSession {
    let db = SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
    SqlSession::new(Arc::new(db))
}

fn ok<T>(result: Result<T, SqlErrorKind>) -> Result<T, String> {
    result.map_err(|e| format!("{e:?}"))
}

#[test]
fn attach_vacuum_into_and_dangerous_pragmas_are_denied() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut s = session(&dir);
    let outside = dir.path().join("outside.db");
    let attach = s.execute(&format!("ATTACH DATABASE '{}' AS x", outside.display()), &[]);
    assert!(matches!(attach, Err(SqlErrorKind::AccessDenied(_))), "{attach:?}");
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    let vacuum = s.execute(&format!("VACUUM INTO '{}'", outside.display()), &[]);
    assert!(vacuum.is_err(), "VACUUM INTO must fail: {vacuum:?}");
    assert!(!outside.exists(), "no file may be written outside the database");
    for pragma in ["PRAGMA journal_mode = DELETE", "PRAGMA writable_schema = ON"] {
        assert!(
            matches!(s.execute(pragma, &[]), Err(SqlErrorKind::AccessDenied(_)))
                && matches!(s.query(pragma, &[]), Err(SqlErrorKind::AccessDenied(_))),
            "{pragma} allowed"
        );
    }
    ok(s.execute("PRAGMA user_version = 3", &[]))?;
    let version = ok(s.query("PRAGMA user_version", &[]))?;
    assert!(matches!(version.rows[0][..], [Value::Integer(3)]));
    Ok(())
}

#[test]
fn loading_an_extension_is_denied_even_when_the_library_exists() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut s = session(&dir);
    // A real shared library: the denial must not depend on the path being bad.
    let library = ["/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .ok_or("no shared library to try loading")?;
    let result = s.query(&format!("SELECT load_extension('{library}')"), &[]);
    assert!(matches!(result, Err(SqlErrorKind::AccessDenied(_))), "{result:?}");
    Ok(())
}

#[test]
fn a_symlink_in_place_of_the_database_is_refused() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let elsewhere = dir.path().join("elsewhere.db");
    ok(session_at(&elsewhere).execute("CREATE TABLE secret (x)", &[]))?;
    std::os::unix::fs::symlink(&elsewhere, dir.path().join("t.db"))?;
    let mut s = session(&dir);
    let result = s.query("SELECT name FROM sqlite_master", &[]);
    assert!(matches!(result, Err(SqlErrorKind::Io(_)) | Err(SqlErrorKind::InvalidStatement(_))), "{result:?}");
    Ok(())
}

fn session_at(path: &std::path::Path) -> SqlSession {
    let db = SqlDatabase::sqlite(path.to_path_buf(), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
    SqlSession::new(Arc::new(db))
}

#[test]
fn writers_wait_their_turn_and_a_dropped_session_lets_the_next_in() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("t.db");
    let db = Arc::new(SqlDatabase::sqlite(path, 1 << 20, Duration::from_millis(50), SqlSync::Normal));
    let (mut a, mut b) = (SqlSession::new(Arc::clone(&db)), SqlSession::new(Arc::clone(&db)));
    ok(a.execute("CREATE TABLE t (x)", &[]))?;
    ok(a.begin())?;
    let blocked = b.execute("INSERT INTO t VALUES (1)", &[]);
    assert!(matches!(blocked, Err(SqlErrorKind::Busy)), "the second writer waits, then is busy: {blocked:?}");
    ok(b.query("SELECT count(*) FROM t", &[]))?;
    drop(a);
    ok(b.execute("INSERT INTO t VALUES (1)", &[]))?;
    ok(b.begin())?;
    ok(b.commit())?;
    Ok(())
}

#[test]
fn results_over_the_cap_are_refused() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut s = session(&dir);
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    for _ in 0..3 {
        ok(s.execute("INSERT INTO t VALUES (?1)", &[Value::Blob(vec![0; 400 << 10])]))?;
    }
    assert!(matches!(s.query("SELECT x FROM t", &[]), Err(SqlErrorKind::TooLarge(_))));
    Ok(())
}

#[test]
fn a_failed_batch_leaves_nothing_and_an_abandoned_transaction_is_rolled_back() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    let mut s = session(&dir);
    ok(s.execute("CREATE TABLE t (x UNIQUE)", &[]))?;
    let insert = |x| Statement { sql: "INSERT INTO t VALUES (?1)".into(), params: vec![Value::Integer(x)] };
    let batch = s.execute_batch(&[insert(1), insert(2), insert(1)]);
    assert!(matches!(batch, Err(SqlErrorKind::Constraint(_))), "{batch:?}");
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (9)", &[]))?;
    assert!(matches!(s.reset(), Ok(true)), "the open transaction is reported");
    let rows = ok(s.query("SELECT count(*) FROM t", &[]))?;
    assert!(matches!(rows.rows[0][..], [Value::Integer(0)]));
    Ok(())
}

fn count(s: &mut SqlSession) -> Result<i64, String> {
    match ok(s.query("SELECT count(*) FROM t", &[]))?.rows[0][..] {
        [Value::Integer(n)] => Ok(n),
        ref other => Err(format!("{other:?}")),
    }
}

#[test]
fn a_commit_group_commits_its_calls_once_and_a_call_that_fails_undoes_only_its_own_writes()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Full));
    let (mut s, mut reader) = (SqlSession::new(Arc::clone(&db)), SqlSession::new(Arc::clone(&db)));
    ok(s.execute("CREATE TABLE t (x UNIQUE)", &[]))?;
    s.take_ticket();
    assert!(s.open_group(), "a SQLite session groups");
    assert!(!s.group_pending(), "nothing written yet");
    // Call 1: a transaction of its own, committed.
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (1)", &[]))?;
    ok(s.commit())?;
    assert!(s.group_pending() && s.take_ticket().is_none(), "no ticket before the group commits");
    // Call 2: rolls back. Call 3: a failing statement inside its transaction, then
    // abandoned (the host's reset after the call). Call 4: a lone statement.
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (2)", &[]))?;
    ok(s.rollback())?;
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (3)", &[]))?;
    assert!(matches!(s.execute("INSERT INTO t VALUES (1)", &[]), Err(SqlErrorKind::Constraint(_))));
    assert!(matches!(s.begin(), Err(SqlErrorKind::Transaction(_))), "one transaction per call");
    assert!(matches!(s.reset(), Ok(true)), "the open transaction is reported");
    ok(s.execute("INSERT INTO t VALUES (4)", &[]))?;
    assert_eq!(count(&mut s)?, 2, "the group sees its own writes");
    assert_eq!(count(&mut reader)?, 0, "nobody else sees them before the commit");
    let ticket = ok(s.close_group())?;
    assert!(ticket.is_some(), "full sync: one ticket for the whole group");
    assert_eq!(count(&mut reader)?, 2, "calls 1 and 4 committed; 2 and 3 left nothing");
    assert!(ok(s.close_group())?.is_none(), "closing twice is a no-op");
    // Out of the group, the session is back to a transaction per call.
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (5)", &[]))?;
    ok(s.commit())?;
    assert!(s.take_ticket().is_some());
    assert_eq!(count(&mut reader)?, 3);
    Ok(())
}

#[test]
fn a_group_closed_mid_call_keeps_the_calls_before_it_and_holds_the_write_turn_until_then()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("t.db");
    let db = Arc::new(SqlDatabase::sqlite(path, 1 << 20, Duration::from_millis(50), SqlSync::Normal));
    let (mut s, mut other) = (SqlSession::new(Arc::clone(&db)), SqlSession::new(Arc::clone(&db)));
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    assert!(s.open_group());
    ok(s.execute_batch(&[Statement { sql: "INSERT INTO t VALUES (1)".into(), params: vec![] }]))?;
    let blocked = other.execute("INSERT INTO t VALUES (9)", &[]);
    assert!(matches!(blocked, Err(SqlErrorKind::Busy)), "the group holds the write turn: {blocked:?}");
    // A call that traps mid-transaction: the pool closes the group from its session.
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (2)", &[]))?;
    ok(s.close_group())?;
    assert_eq!(count(&mut other)?, 1, "the call before it kept its write; its own is gone");
    ok(other.execute("INSERT INTO t VALUES (9)", &[]))?;
    Ok(())
}

#[test]
fn an_adapter_statement_cannot_run_transaction_control_in_or_out_of_a_group() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal));
    let (mut s, mut reader) = (SqlSession::new(Arc::clone(&db)), SqlSession::new(Arc::clone(&db)));
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    // The host keeps its own savepoints prepared; an adapter's same text is still refused.
    let control = [
        "BEGIN",
        "BEGIN IMMEDIATE",
        "COMMIT",
        "END",
        "ROLLBACK",
        "SAVEPOINT x",
        "RELEASE x",
        "SAVEPOINT stowage_call",
        "RELEASE stowage_call",
        "SAVEPOINT stowage_batch",
        "RELEASE stowage_batch",
    ];
    for statement in control {
        assert!(matches!(s.execute(statement, &[]), Err(SqlErrorKind::AccessDenied(_))), "{statement} allowed");
    }
    // In a group, committing or rolling back early would take other calls' writes with it.
    assert!(s.open_group());
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (1)", &[]))?;
    ok(s.commit())?;
    ok(s.begin())?;
    ok(s.execute_batch(&[Statement { sql: "INSERT INTO t VALUES (2)".into(), params: vec![] }]))?;
    for statement in control {
        let denied = (s.execute(statement, &[]), s.query(statement, &[]));
        assert!(
            matches!(denied, (Err(SqlErrorKind::AccessDenied(_)), Err(SqlErrorKind::AccessDenied(_)))),
            "{statement} allowed in a group: {denied:?}"
        );
    }
    assert_eq!(count(&mut reader)?, 0, "nothing committed early");
    ok(s.close_group())?;
    assert_eq!(count(&mut reader)?, 1, "the first call's write, committed with its group; the open call's undone");
    Ok(())
}

/// An empty WAL gets its first frame (and, at `full`, its flush) when a store
/// opens its database ahead, and nothing the adapter sees changes.
#[test]
fn a_database_opened_ahead_starts_its_empty_wal_and_changes_nothing() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("t.db");
    let wal = dir.path().join("t.db-wal");
    let db = Arc::new(SqlDatabase::sqlite(path.clone(), 1 << 20, Duration::from_secs(1), SqlSync::Full));
    db.open_ahead();
    // The first session's connection is the one opened ahead, its WAL started.
    let mut s = SqlSession::new(Arc::clone(&db));
    let version = ok(s.query("PRAGMA user_version", &[]))?;
    assert!(matches!(version.rows[0][..], [Value::Integer(0)]), "{version:?}");
    // A header, one frame (of page 1), then zeros: room for the first commits.
    let (frame, room) = (32 + 24 + 4096, 32 + crate::capability::sql::prefill::FIRST_ROOM_FRAMES * (24 + 4096));
    let bytes = std::fs::read(&wal)?;
    assert_eq!(bytes.len() as u64, room, "the WAL holds a header, one frame and its room");
    assert_eq!(bytes[32..36], [0, 0, 0, 1], "the first frame is page 1's");
    assert!(bytes[frame as usize..].iter().all(|&b| b == 0), "the room is zeros");
    let tables = ok(s.query("SELECT count(*) FROM sqlite_master", &[]))?;
    assert!(matches!(tables.rows[0][..], [Value::Integer(0)]), "{tables:?}");
    ok(s.begin())?;
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    ok(s.commit())?;
    // The commit wrote over the room, and a connection that recovers the WAL
    // anew reads it.
    let bytes = std::fs::read(&wal)?;
    assert_eq!(bytes.len() as u64, room, "the commit's frames went into the room");
    assert_ne!(bytes[frame as usize..frame as usize + 4], [0, 0, 0, 0], "the commit's first frame");
    let fresh = rusqlite::Connection::open(&path)?;
    assert_eq!(fresh.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get::<_, i64>(0))?, 1);
    drop(fresh);
    // A WAL with frames (kept while a connection is open) is left alone by the
    // next open.
    let other = SqlDatabase::sqlite(path, 1 << 20, Duration::from_secs(1), SqlSync::Full);
    let before = std::fs::metadata(&wal)?.len();
    other.open_ahead();
    other.close_ahead();
    assert_eq!(std::fs::metadata(&wal)?.len(), before);
    drop(s);
    Ok(())
}

/// At full sync, a call that committed nothing answers only once every commit it
/// may have read is durable: it takes the ticket that covers them while one is
/// not (a retried create would otherwise find, and acknowledge, what a failed
/// flush left off the disk).
#[test]
fn a_call_that_read_an_unflushed_commit_waits_for_its_flush() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Full));
    let (mut writer, mut reader) = (SqlSession::new(Arc::clone(&db)), SqlSession::new(Arc::clone(&db)));
    ok(writer.execute("CREATE TABLE t (x)", &[]))?;
    ok(writer.execute("INSERT INTO t VALUES (0)", &[]))?;
    let (_, ticket) = writer.take_ticket().ok_or("a commit's ticket")?;
    ok(reader.query("SELECT count(*) FROM t", &[]))?;
    let (_, read) = reader.take_ticket().ok_or("the read waits for the commit it may have seen")?;
    assert_eq!(read, ticket);
    // In a commit group that has not begun (a queued call that only read), too.
    assert!(reader.open_group());
    ok(reader.query("SELECT count(*) FROM t", &[]))?;
    assert_eq!(reader.take_ticket().map(|(_, t)| t), Some(ticket), "a read in a group not begun waits too");
    assert!(ok(reader.close_group())?.is_none(), "the group wrote nothing");
    // A call that committed, then read a later commit, waits for the later one.
    ok(reader.execute("INSERT INTO t VALUES (1)", &[]))?;
    ok(writer.execute("INSERT INTO t VALUES (2)", &[]))?;
    let (_, later) = writer.take_ticket().ok_or("a commit's ticket")?;
    ok(reader.query("SELECT count(*) FROM t", &[]))?;
    assert_eq!(reader.take_ticket().map(|(_, t)| t), Some(later), "the newer of its own and what it read");
    ok(db.durability().durable_here(later).ok_or("nobody else flushes")?)?;
    ok(reader.query("SELECT count(*) FROM t", &[]))?;
    assert!(reader.take_ticket().is_none(), "nothing to wait for once every commit is durable");
    // A commit whose flush failed: every later call waits for it, and fails.
    db.durability().refuse_flushes();
    ok(writer.execute("INSERT INTO t VALUES (1)", &[]))?;
    let (_, failed) = writer.take_ticket().ok_or("a commit's ticket")?;
    assert!(db.durability().durable_here(failed).ok_or("nobody else flushes")?.is_err());
    ok(reader.query("SELECT count(*) FROM t", &[]))?;
    let (_, read) = reader.take_ticket().ok_or("the read waits for the commit whose flush failed")?;
    assert!(db.durability().durable_here(read).ok_or("nobody else flushes")?.is_err());
    Ok(())
}

/// A commit waits for a flush if it wrote to the WAL, whatever rows it changed:
/// a lone DDL statement does (it changes none); a transaction that only read
/// does not.
#[test]
fn a_commit_waits_for_a_flush_if_it_wrote() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Full));
    let mut s = SqlSession::new(Arc::clone(&db));
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    let (_, ddl) = s.take_ticket().ok_or("a lone DDL statement wrote")?;
    ok(db.durability().durable_here(ddl).ok_or("nobody else flushes")?)?;
    ok(s.begin())?;
    ok(s.query("SELECT count(*) FROM t", &[]))?;
    ok(s.commit())?;
    assert!(s.take_ticket().is_none(), "a transaction that only read waits for nothing");
    Ok(())
}

/// A statement that writes through `query` outside a transaction commits on its
/// own, with a ticket, as one through `execute` does; one that reads takes none.
#[test]
fn a_write_through_query_commits_like_one_through_execute() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Full));
    let mut s = SqlSession::new(Arc::clone(&db));
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    let flush = |s: &mut SqlSession| -> Result<(), String> {
        let (_, ticket) = s.take_ticket().ok_or("a ticket")?;
        ok(db.durability().durable_here(ticket).ok_or("nobody else flushes")?)
    };
    flush(&mut s)?;
    let returned = ok(s.query("INSERT INTO t VALUES (7) RETURNING x", &[]))?;
    assert!(matches!(returned.rows[..], [ref row] if matches!(row[..], [Value::Integer(7)])));
    assert!(s.turn.is_none() && !ok(s.conn())?.in_transaction(), "committed on its own");
    flush(&mut s)?;
    ok(s.query("PRAGMA user_version = 3", &[]))?;
    flush(&mut s)?;
    ok(s.query("SELECT count(*) FROM t", &[]))?;
    assert!(s.take_ticket().is_none(), "a read of durable commits waits for nothing");
    Ok(())
}

/// A commit that panics still counts its reserved ticket as returned: no read
/// waits for it forever.
#[test]
fn a_commit_that_panics_leaves_no_read_waiting() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Full));
    let mut s = SqlSession::new(Arc::clone(&db));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.commit_with(|_| -> () { panic!("a commit that panics (expected by this test)") })
    }));
    assert!(panicked.is_err());
    assert!(db.durability().unflushed().is_none(), "nothing left to wait for");
    Ok(())
}

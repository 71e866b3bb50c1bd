use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A connection through the shim, set up as the adapters' are (WAL, commits not
/// flushed, no automatic checkpoint), with a page cache of `cache_pages`.
fn through_shim(db: &Path, cache_pages: i64) -> Result<Connection, Box<dyn std::error::Error>> {
    let vfs = vfs().ok_or("the shim is registered on Linux")?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(db, flags, vfs)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    conn.pragma_update(None, "cache_size", cache_pages)?;
    Ok(conn)
}

fn writes() -> u64 {
    WRITES.with(std::cell::Cell::get)
}

/// Every row's (id, length, first byte), read by `conn`.
fn rows(conn: &Connection) -> rusqlite::Result<Vec<(i64, usize, u8)>> {
    let mut statement = conn.prepare("SELECT id, body FROM t ORDER BY id")?;
    let rows = statement.query_map([], |row| {
        let body: Vec<u8> = row.get(1)?;
        Ok((row.get(0)?, body.len(), body.first().copied().unwrap_or(0)))
    })?;
    rows.collect()
}

/// A database with table `t` in `dir`: its writer through the shim (a page
/// cache of `cache_pages`), and a reader on the default VFS.
fn table(dir: &Path, cache_pages: i64) -> Result<(Connection, Connection), Box<dyn std::error::Error>> {
    let db = dir.join("t.db");
    let writer = through_shim(&db, cache_pages)?;
    writer.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")?;
    let reader = Connection::open(&db)?;
    Ok((writer, reader))
}

/// A copy of `dir`'s database and WAL as they are now, the writer still open
/// (nothing checkpointed: what a crash leaves), recovers exactly `expected`.
fn assert_recovers(dir: &Path, expected: &[(i64, usize, u8)]) -> TestResult {
    std::fs::copy(dir.join("t.db"), dir.join("copy.db"))?;
    std::fs::copy(dir.join("t.db-wal"), dir.join("copy.db-wal"))?;
    let recovered = Connection::open(dir.join("copy.db"))?;
    assert_eq!(rows(&recovered)?, expected, "the WAL alone recovers every commit");
    let check: String = recovered.query_row("PRAGMA integrity_check", [], |row| row.get(0))?;
    assert_eq!(check, "ok");
    Ok(())
}

#[test]
fn a_commit_of_many_pages_is_one_write_and_every_reader_sees_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (mut writer, reader) = table(dir.path(), 2000)?;
    for round in 0..20u8 {
        let before = writes();
        let tx = writer.transaction()?;
        for i in 0..10 {
            tx.execute("INSERT INTO t (body) VALUES (?1)", params![vec![round; 3000 + i]])?;
        }
        tx.commit()?;
        // Ten rows of 3 KB: ten pages and more, each frame two writes before.
        assert_eq!(writes() - before, 1, "round {round}: the commit's frames went in one write");
        let seen = rows(&reader)?;
        assert_eq!(seen.len(), usize::from(round + 1) * 10, "a reader on the default VFS sees each commit");
        assert!(seen.iter().rev().take(10).all(|&(_, len, byte)| byte == round && len >= 3000));
    }
    // A one-page commit: its frame's header, then its page, as SQLite wrote them.
    let before = writes();
    writer.execute("UPDATE t SET body = x'01' WHERE id = 1", [])?;
    assert!(writes() - before <= 2);
    // A commit of ~450 KB, more than is held: a write for each share of it.
    let before = writes();
    let tx = writer.transaction()?;
    for _ in 0..150 {
        tx.execute("INSERT INTO t (body) VALUES (?1)", params![vec![9u8; 3000]])?;
    }
    tx.commit()?;
    let made = writes() - before;
    assert!((4..=8).contains(&made), "{made} writes for ~450 KB");
    assert_eq!(rows(&reader)?.len(), 350);
    // Checkpointed by another connection, the WAL starts over at its header.
    let (busy, _, _): (i64, i64, i64) =
        reader.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    assert_eq!(busy, 0);
    let before = writes();
    let tx = writer.transaction()?;
    for _ in 0..5 {
        tx.execute("INSERT INTO t (body) VALUES (?1)", params![vec![10u8; 3000]])?;
    }
    tx.commit()?;
    assert!(writes() - before <= 2, "the new header and the commit's frames");
    assert_eq!(rows(&reader)?.len(), 355);
    assert_eq!(late_writes(), 0);
    Ok(())
}

#[test]
fn spills_rewritten_frames_big_commits_and_rollbacks_read_back_and_recover() -> TestResult {
    let dir = tempfile::tempdir()?;
    // A 10-page cache: a transaction of more spills its pages to the WAL before it
    // commits, and a page changed again after its spill is written over in place
    // (SQLite then rewrites the transaction's frame headers at commit).
    let (mut writer, reader) = table(dir.path(), 10)?;
    let mut expected = Vec::new();
    let mut next_id = 1i64;
    for round in 0..6u8 {
        let tx = writer.transaction()?;
        // Round 2 commits ~3 MiB, many times what the shim holds.
        let count = if round == 2 { 1000 } else { 60 };
        for _ in 0..count {
            tx.execute("INSERT INTO t (id, body) VALUES (?1, ?2)", params![next_id, vec![round; 3000]])?;
            expected.push((next_id, 3000, round));
            next_id += 1;
        }
        // Pages spilled above, changed again.
        tx.execute("UPDATE t SET body = ?1 WHERE id % 7 = 0", params![vec![round; 2000]])?;
        for row in expected.iter_mut().filter(|(id, _, _)| id % 7 == 0) {
            *row = (row.0, 2000, round);
        }
        if round == 4 {
            // Spilled, then rolled back: none of it is ever read.
            tx.execute("DELETE FROM t", [])?;
            tx.rollback()?;
            expected.retain(|&(id, _, _)| id < next_id - count);
            next_id -= count;
            for row in expected.iter_mut().filter(|(id, _, _)| id % 7 == 0) {
                *row = (row.0, 2000, 3);
            }
        } else {
            tx.commit()?;
        }
        assert_eq!(rows(&reader)?, expected, "round {round}: a reader sees exactly what was committed");
    }
    assert_recovers(dir.path(), &expected)?;
    assert_eq!(late_writes(), 0, "every commit was written before SQLite published it");
    drop(writer);
    assert_eq!(rows(&reader)?, expected, "closing (a checkpoint) keeps it all");
    Ok(())
}

#[test]
fn a_held_write_that_fails_fails_its_transaction_and_keeps_no_lock() -> TestResult {
    let dir = tempfile::tempdir()?;
    // A 10-page cache: the transaction below spills, and its commit is held too.
    let (writer, reader) = table(dir.path(), 10)?;
    writer.execute("INSERT INTO t (id, body) VALUES (0, x'00')", [])?;
    let before = rows(&reader)?;
    writer.execute_batch("BEGIN IMMEDIATE")?;
    FAIL_HELD.with(|fail| fail.set(true));
    let inserted = (1..=60i64).try_for_each(|id| {
        writer.execute("INSERT INTO t (id, body) VALUES (?1, ?2)", params![id, vec![7u8; 3000]]).map(drop)
    });
    let committed = inserted.and_then(|()| writer.execute_batch("COMMIT"));
    FAIL_HELD.with(|fail| fail.set(false));
    assert!(committed.is_err(), "a transaction that lost frames does not commit");
    // SQLite may have rolled it back already.
    let _ = writer.execute_batch("ROLLBACK");
    assert_eq!(rows(&reader)?, before, "a reader sees none of it");
    // No lock was kept: another connection writes at once, and so does the writer.
    let other = Connection::open(dir.path().join("t.db"))?;
    other.busy_timeout(std::time::Duration::ZERO)?;
    other.execute_batch("BEGIN IMMEDIATE; INSERT INTO t (id, body) VALUES (100, x'01'); COMMIT")?;
    writer.execute("INSERT INTO t (id, body) VALUES (101, x'02')", [])?;
    let expected = [before, vec![(100, 1, 1), (101, 1, 2)]].concat();
    assert_eq!(rows(&reader)?, expected);
    // Spilled frames still held when the transaction is rolled back, and their
    // write fails: the rollback's lock releases still reach SQLite's file.
    writer.execute_batch("BEGIN IMMEDIATE")?;
    let mut id = 200i64;
    while HELD.with(std::cell::Cell::get) == 0 && id < 400 {
        writer.execute("INSERT INTO t (id, body) VALUES (?1, ?2)", params![id, vec![8u8; 3000]])?;
        id += 1;
    }
    assert!(HELD.with(std::cell::Cell::get) > 0, "a spill is held");
    FAIL_HELD.with(|fail| fail.set(true));
    let _ = writer.execute_batch("ROLLBACK");
    FAIL_HELD.with(|fail| fail.set(false));
    other.execute_batch("BEGIN IMMEDIATE; INSERT INTO t (id, body) VALUES (102, x'03'); COMMIT")?;
    writer.execute("INSERT INTO t (id, body) VALUES (103, x'04')", [])?;
    let expected = [expected, vec![(102, 1, 3), (103, 1, 4)]].concat();
    assert_eq!(rows(&reader)?, expected);
    assert_recovers(dir.path(), &expected)
}

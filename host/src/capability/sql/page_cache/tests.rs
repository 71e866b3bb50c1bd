//! The wrapper under real SQLite. The page cache is configured once per process
//! and before SQLite is first used, which other tests of this binary may already
//! have done, so the test runs in a child process of its own.

use std::process::Command;
use std::sync::atomic::Ordering;

use super::{MOVED, PASSED, SKIPPED, install};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

const CHILD: &str = "capability::sql::page_cache::tests::cache_under_sqlite";
const ENV: &str = "STOWAGE_PAGE_CACHE_CHILD";

#[test]
fn the_wrapped_cache_skips_empty_truncations_and_keeps_every_row() -> TestResult {
    let out = Command::new(std::env::current_exe()?)
        .args(["--exact", CHILD, "--ignored", "--nocapture", "--test-threads", "1"])
        .env(ENV, "1")
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("1 passed"), "the child ran no test: {stdout}");
    Ok(())
}

/// The keys [`interleaved`] writes from `base`: inside the table's key range,
/// so balances make new pages out of order.
fn keys(base: i64) -> Vec<Vec<i64>> {
    (0..200i64).map(|turn| (0..4i64).map(|j| base + (turn * 7919 + j * 104_729) % 100_000).collect()).collect()
}

/// 200 savepoints (transactions of their own outside one) of four 1.1 KiB rows.
fn interleaved(conn: &rusqlite::Connection, base: i64) -> rusqlite::Result<()> {
    for turn in keys(base) {
        conn.execute_batch("SAVEPOINT turn")?;
        for key in turn {
            conn.execute("INSERT OR REPLACE INTO t (k, v) VALUES (?1, ?2)", (key, vec![(key % 251) as u8; 1100]))?;
        }
        conn.execute_batch("RELEASE turn")?;
    }
    Ok(())
}

fn distinct(bases: &[i64]) -> usize {
    bases.iter().flat_map(|&base| keys(base).into_iter().flatten()).collect::<std::collections::BTreeSet<_>>().len()
}

/// Every row is whole, and there are `expected` of them.
fn check(conn: &rusqlite::Connection, expected: usize) -> TestResult {
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let mut stmt = conn.prepare("SELECT k, v FROM t")?;
    let mut rows = stmt.query([])?;
    let mut n = 0;
    while let Some(row) = rows.next()? {
        let (k, v): (i64, Vec<u8>) = (row.get(0)?, row.get(1)?);
        assert_eq!(v, vec![(k % 251) as u8; 1100], "row {k}");
        n += 1;
    }
    assert_eq!(n, expected);
    Ok(())
}

#[test]
#[ignore = "run by the_wrapped_cache_skips_empty_truncations_and_keeps_every_row in a process of its own"]
fn cache_under_sqlite() -> TestResult {
    if std::env::var_os(ENV).is_none() {
        return Ok(());
    }
    assert!(install(), "the first SQLite use of the process installs the wrapper");
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("t.db");
    let conn = rusqlite::Connection::open(&path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL)", [])?;
    interleaved(&conn, 0)?;
    let (skipped, moved) = (SKIPPED.load(Ordering::Relaxed), MOVED.load(Ordering::Relaxed));
    assert!(moved >= 300, "balances swapped pages through the locking page: {moved} moves");
    assert!(skipped >= 200, "and every commit skipped the walk: {skipped}");
    check(&conn, distinct(&[0]))?;

    // A transaction that grows the file, rolled back: the pages past the old end
    // must go, and the transactions that reuse their numbers see fresh ones.
    let passed = PASSED.load(Ordering::Relaxed);
    conn.execute_batch("BEGIN")?;
    interleaved(&conn, 1_000_000)?;
    conn.execute_batch("ROLLBACK")?;
    assert!(PASSED.load(Ordering::Relaxed) > passed, "the rollback's truncation is passed on");
    check(&conn, distinct(&[0]))?;
    interleaved(&conn, 2_000_000)?;
    check(&conn, distinct(&[0, 2_000_000]))?;
    drop(conn);
    check(&rusqlite::Connection::open(&path)?, distinct(&[0, 2_000_000]))
}

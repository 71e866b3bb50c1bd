//! A call whose undo fails inside a commit group: its writes are undone when
//! the group closes, or the whole group fails; they are never committed.

use std::time::Duration;

use super::super::super::{Connection, Rows, SqlSync};
use super::*;

/// A connection whose undo of a call's savepoint fails its first `failures` times.
struct FailingUndo {
    inner: Box<dyn Connection>,
    failures: u32,
}

impl Connection for FailingUndo {
    fn execute(&mut self, statement: &str, params: &[Value]) -> Result<u64, SqlErrorKind> {
        self.inner.execute(statement, params)
    }
    fn query(&mut self, statement: &str, params: &[Value], max_bytes: u64) -> Result<Rows, SqlErrorKind> {
        self.inner.query(statement, params, max_bytes)
    }
    fn in_transaction(&self) -> bool {
        self.inner.in_transaction()
    }
    fn begin(&mut self) -> Result<(), SqlErrorKind> {
        self.inner.begin()
    }
    fn commit(&mut self) -> Result<(), SqlErrorKind> {
        self.inner.commit()
    }
    fn rollback(&mut self) -> Result<(), SqlErrorKind> {
        self.inner.rollback()
    }
    fn execute_plain(&mut self, statements: &str) -> Result<(), SqlErrorKind> {
        if statements == CALL_UNDO && self.failures > 0 {
            self.failures -= 1;
            return Err(SqlErrorKind::Io("injected failure of the call's undo".into()));
        }
        self.inner.execute_plain(statements)
    }
    fn execute_atomic(&mut self, statements: &[Statement]) -> Result<Vec<u64>, SqlErrorKind> {
        self.inner.execute_atomic(statements)
    }
}

fn ok<T>(result: Result<T, SqlErrorKind>) -> Result<T, String> {
    result.map_err(|e| format!("{e:?}"))
}

fn count(s: &mut SqlSession) -> Result<i64, String> {
    match ok(s.query("SELECT count(*) FROM t", &[]))?.rows[0][..] {
        [Value::Integer(n)] => Ok(n),
        ref other => Err(format!("{other:?}")),
    }
}

/// A grouped session whose connection fails the call undo `failures` times, and a
/// reader; call 1 has committed its row (1) inside the group, call 2 has written
/// its row (2) and asked to roll back, which failed.
fn call_2_failed_to_undo(
    dir: &tempfile::TempDir,
    failures: u32,
) -> Result<(SqlSession, SqlSession), Box<dyn std::error::Error>> {
    let db = Arc::new(SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal));
    let (mut s, reader) = (SqlSession::new(Arc::clone(&db)), SqlSession::new(db));
    ok(s.execute("CREATE TABLE t (x)", &[]))?;
    let inner = s.conn.take().ok_or("the session has no connection after a statement")?;
    s.conn = Some(Box::new(FailingUndo { inner, failures }));
    assert!(s.open_group());
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (1)", &[]))?;
    ok(s.commit())?;
    ok(s.begin())?;
    ok(s.execute("INSERT INTO t VALUES (2)", &[]))?;
    assert!(s.rollback().is_err(), "the injected failure reaches the call");
    assert!(s.group.as_ref().is_some_and(|g| g.call_open), "the call's transaction stays open until undone");
    Ok((s, reader))
}

#[test]
fn a_call_whose_undo_failed_is_undone_when_the_group_closes() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (mut s, mut reader) = call_2_failed_to_undo(&dir, 1)?;
    assert!(ok(s.close_group())?.is_none(), "NORMAL sync: no ticket to wait for");
    assert_eq!(count(&mut reader)?, 1, "call 1 committed, call 2's row undone at the close");
    Ok(())
}

#[test]
fn a_call_that_cannot_be_undone_fails_its_group_rather_than_commit() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (mut s, mut reader) = call_2_failed_to_undo(&dir, 2)?;
    assert!(s.close_group().is_err(), "the group cannot commit without undoing call 2");
    assert_eq!(count(&mut reader)?, 0, "nothing of the group was committed, call 2's row least of all");
    ok(s.execute("INSERT INTO t VALUES (3)", &[]))?;
    assert_eq!(count(&mut reader)?, 1, "the session writes again after the failed group");
    Ok(())
}

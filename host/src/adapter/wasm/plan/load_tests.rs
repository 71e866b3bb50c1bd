//! The plan run on a real SQLite session (no wasm): what is run, what is not,
//! and how its rows are judged.

use std::sync::Arc;
use std::time::Duration;

use super::load::*;
use crate::adapter::raw::Range;
use crate::capability::sql::{SqlDatabase, SqlSync};
use crate::capability::sql::{SqlSession, Value};
use crate::model::Scope;
use crate::wit::reads::load_plan::MessageStatements;

fn session(dir: &tempfile::TempDir) -> Result<SqlSession, String> {
    let db = SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
    let mut session = SqlSession::new(Arc::new(db));
    let setup = [
        "CREATE TABLE m (conv TEXT, seq INTEGER, id TEXT, role INTEGER, created_at INTEGER, content BLOB, tag BLOB)",
        "WITH RECURSIVE n(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM n WHERE seq < 5) \
         INSERT INTO m SELECT 'c', seq, 'm' || seq, 2, 7, x'01', x'09' FROM n",
    ];
    for sql in setup {
        session.execute(sql, &[]).map_err(|e| format!("{sql}: {e:?}"))?;
    }
    Ok(session)
}

/// Statements over `m` of the plan's shape; `latest` is `latest_sql`.
fn plan(latest_sql: &str) -> MessageStatements {
    let columns = "SELECT seq, id, role, created_at, content, tag, (SELECT MAX(seq) FROM m WHERE conv = ?3) FROM m";
    MessageStatements {
        latest: latest_sql.to_owned(),
        after: format!("{columns} WHERE ?1 = 't' AND ?2 = 'u' AND conv = ?3 AND seq > ?4 ORDER BY seq LIMIT ?5"),
        before: format!("{columns} WHERE ?1 = 't' AND ?2 = 'u' AND conv = ?3 AND seq < ?4 ORDER BY seq DESC LIMIT ?5"),
    }
}

const LATEST: &str = "SELECT seq, id, role, created_at, content, tag, (SELECT MAX(seq) FROM m WHERE conv = ?3) \
    FROM m WHERE ?1 = 't' AND ?2 = 'u' AND conv = ?3 ORDER BY seq DESC LIMIT ?4";

fn seqs(planned: &Planned) -> Vec<u64> {
    match planned {
        Planned::Records(records) => records.iter().map(|r| r.seq).collect(),
        _ => Vec::new(),
    }
}

fn count(session: &mut SqlSession) -> Result<Vec<Vec<Value>>, String> {
    session.query("SELECT count(*) FROM m", &[]).map(|rows| rows.rows).map_err(|e| format!("{e:?}"))
}

#[test]
fn the_plans_rows_come_back_as_records_of_the_range() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let scope = Scope::new("t", "u");
    let statements = plan(LATEST);
    let cases =
        [(Range::Latest, 3, vec![3, 4, 5]), (Range::After(1), 2, vec![2, 3]), (Range::Before(3), 10, vec![1, 2])];
    for (range, limit, expected) in cases {
        let planned = run(&mut session, &statements, &scope, "c", range, limit)?;
        assert_eq!(seqs(&planned), expected, "{range:?} {limit}: {planned:?}");
    }
    // No rows (a missing conversation, another scope): the adapter answers.
    for (scope, id) in [(Scope::new("t", "u"), "missing"), (Scope::new("other", "u"), "c")] {
        let planned = run(&mut session, &statements, &scope, id, Range::Latest, 3)?;
        assert!(matches!(planned, Planned::AskAdapter), "{planned:?}");
    }
    Ok(())
}

#[test]
fn a_statement_that_may_write_is_never_run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let before = count(&mut session)?;
    let scope = Scope::new("t", "u");
    let writers = [
        "DELETE FROM m WHERE ?1 = ?2 OR ?3 = ?4 OR 1 RETURNING seq, id, role, created_at, content, tag, seq",
        "INSERT INTO m SELECT ?3, ?4, ?1, 2, 7, x'01', x'09' RETURNING seq, id, role, created_at, content, tag, seq",
        "UPDATE m SET content = x'02' WHERE conv = ?3 AND ?1 = ?2 AND ?4 > 0 \
         RETURNING seq, id, role, created_at, content, tag, seq",
    ];
    for sql in writers {
        let planned = run(&mut session, &plan(sql), &scope, "c", Range::Latest, 3)?;
        assert!(matches!(planned, Planned::Writes), "{sql}: {planned:?}");
    }
    // Two statements: only the first is prepared, and a second is refused, so
    // the DELETE never runs either.
    let two = format!("{LATEST}; DELETE FROM m");
    let planned = run(&mut session, &plan(&two), &scope, "c", Range::Latest, 3)?;
    assert!(matches!(planned, Planned::AskAdapter), "{planned:?}");
    assert_eq!(count(&mut session)?, before, "a plan changed the database");
    let content = session.query("SELECT DISTINCT content FROM m", &[]).map_err(|e| format!("{e:?}"))?;
    assert_eq!(content.rows, vec![vec![Value::Blob(vec![1])]]);
    Ok(())
}

#[test]
fn rows_of_another_shape_or_a_page_cut_short_are_refused() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let scope = Scope::new("t", "u");
    let six_columns = "SELECT seq, id, role, created_at, content, tag FROM m \
        WHERE ?1 = 't' AND ?2 = 'u' AND conv = ?3 ORDER BY seq DESC LIMIT ?4";
    let planned = run(&mut session, &plan(six_columns), &scope, "c", Range::Latest, 3)?;
    assert!(matches!(&planned, Planned::Malformed(what) if what.contains("6 columns, not 7")), "{planned:?}");
    // A scan that stops early (here: skips seq 5) while the newest seq is 5.
    let cut_short = "SELECT seq, id, role, created_at, content, tag, (SELECT MAX(seq) FROM m WHERE conv = ?3) \
        FROM m WHERE ?1 = 't' AND ?2 = 'u' AND conv = ?3 AND seq < 5 ORDER BY seq DESC LIMIT ?4";
    let planned = run(&mut session, &plan(cut_short), &scope, "c", Range::Latest, 3)?;
    assert!(matches!(&planned, Planned::Damaged(what) if what.contains("holds 3 to 5")), "{planned:?}");
    // A statement that does not fit the schema: the adapter answers.
    let planned =
        run(&mut session, &plan("SELECT * FROM missing WHERE ?1 = ?2 AND ?3 = ?4"), &scope, "c", Range::Latest, 3)?;
    assert!(matches!(planned, Planned::AskAdapter), "{planned:?}");
    Ok(())
}

#[test]
fn each_range_binds_its_statement_and_parameters() {
    let statements = MessageStatements { latest: "latest".into(), after: "after".into(), before: "before".into() };
    let scope = Scope::new("t", "u");
    let keys = || vec![Value::Text("t".into()), Value::Text("u".into()), Value::Text("c".into())];
    let (sql, params, newest_first) = statement(&statements, &scope, "c", Range::Latest, 10);
    assert_eq!((sql, newest_first), ("latest", true));
    assert_eq!(params, [keys(), vec![Value::Integer(10)]].concat());
    let (sql, params, newest_first) = statement(&statements, &scope, "c", Range::After(u64::MAX), 5);
    assert_eq!((sql, newest_first), ("after", false));
    assert_eq!(params, [keys(), vec![Value::Integer(i64::MAX), Value::Integer(5)]].concat());
    let (sql, params, newest_first) = statement(&statements, &scope, "c", Range::Before(4), 5);
    assert_eq!((sql, newest_first), ("before", true));
    assert_eq!(params, [keys(), vec![Value::Integer(4), Value::Integer(5)]].concat());
}

#[test]
fn a_plan_statement_that_never_ends_is_interrupted_at_the_deadline() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let endless = "SELECT seq, id, role, created_at, content, tag, \
        (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n) \
        FROM m WHERE ?1 = 't' AND ?2 = 'u' AND conv = ?3 ORDER BY seq DESC LIMIT ?4";
    session.set_deadline(Some(std::time::Instant::now() + Duration::from_millis(100)));
    // Aside, so that a statement SQLite failed to interrupt fails the test instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let planned = run(&mut session, &plan(endless), &Scope::new("t", "u"), "c", Range::Latest, 3);
        let _ = tx.send(planned.err().and_then(|e| e.downcast_ref::<wasmtime::Trap>().copied()));
    });
    let trap = rx.recv_timeout(Duration::from_secs(120)).map_err(|_| "the statement was never interrupted")?;
    assert_eq!(trap, Some(wasmtime::Trap::Interrupt), "the load times out");
    Ok(())
}

//! The append plan run on a real SQLite session (no wasm): which statement
//! each message gets and with which parameters, what is kept when the guess is
//! wrong or the plan misbehaves, and how each outcome is answered.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::append::*;
use crate::adapter::pool::Head;
use crate::adapter::raw::{RawMessage, RawStored};
use crate::capability::sql::{SqlDatabase, SqlSession, SqlSync, Value};
use crate::model::{Role, Scope};
use crate::wit::SqlErrorKind;
use crate::wit::writes::append_plan::MessageStatements;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Conversation ('t', 'u', 'c') at version 2, last seq 3; a trigger keeps its
/// head from the message that carries one, as an adapter would.
fn session(dir: &tempfile::TempDir) -> Result<SqlSession, String> {
    let db = SqlDatabase::sqlite(dir.path().join("t.db"), 1 << 20, Duration::from_secs(1), SqlSync::Normal);
    let mut session = SqlSession::new(Arc::new(db));
    let setup = [
        "CREATE TABLE conv (tenant TEXT, user TEXT, id TEXT, version INTEGER, last_seq INTEGER, \
         UNIQUE (tenant, user, id))",
        "CREATE TABLE m (tenant TEXT, user TEXT, conv TEXT, seq INTEGER, id TEXT NOT NULL, role INTEGER, \
         created_at INTEGER, content BLOB, tag BLOB, head_version INTEGER, head_at INTEGER, \
         UNIQUE (tenant, user, conv, id), UNIQUE (tenant, user, conv, seq))",
        "CREATE TRIGGER head AFTER INSERT ON m WHEN NEW.head_version IS NOT NULL BEGIN \
         UPDATE conv SET version = NEW.head_version, last_seq = NEW.seq \
         WHERE tenant = NEW.tenant AND user = NEW.user AND id = NEW.conv; END",
        "INSERT INTO conv VALUES ('t', 'u', 'c', 2, 3)",
    ];
    for sql in setup {
        session.execute(sql, &[]).map_err(|e| format!("{sql}: {e:?}"))?;
    }
    Ok(session)
}

/// Statements of the plan's shape over the tables above.
fn plan() -> MessageStatements {
    MessageStatements {
        first: "INSERT INTO m SELECT ?1, ?2, ?3, ?4, CASE WHEN c.version = ?10 AND c.last_seq = ?4 - 1 THEN ?5 END, \
                ?6, ?7, ?8, ?9, ?11, ?12 FROM conv c WHERE c.tenant = ?1 AND c.user = ?2 AND c.id = ?3"
            .into(),
        middle: "INSERT INTO m VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, NULL)".into(),
        last: "INSERT INTO m VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?11, ?12)".into(),
    }
}

fn messages(first: u64, count: u64) -> Vec<RawStored> {
    (first..first + count)
        .map(|seq| RawStored {
            seq,
            message: RawMessage {
                id: format!("m{seq}"),
                role: Role::Assistant,
                created_at: 1000i64.wrapping_add(seq as i64),
                content: vec![0x02, 0x00, seq as u8],
                tag: vec![0xAA, seq as u8],
            },
        })
        .collect()
}

fn versions(before: u64) -> Versions {
    Versions { before, after: before + 1 }
}

fn query(session: &mut SqlSession, sql: &str) -> Result<Vec<Vec<Value>>, String> {
    session.query(sql, &[]).map(|rows| rows.rows).map_err(|e| format!("{e:?}"))
}

fn head(session: &mut SqlSession) -> Result<Vec<Vec<Value>>, String> {
    query(session, "SELECT version, last_seq FROM conv WHERE id = 'c'")
}

fn count(session: &mut SqlSession) -> Result<Vec<Vec<Value>>, String> {
    query(session, "SELECT count(*) FROM m")
}

fn int(i: i64) -> Value {
    Value::Integer(i)
}

#[test]
fn batches_that_continue_the_guess_are_stored_with_every_parameter() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let scope = Scope::new("t", "u");
    let mut one = messages(4, 1);
    let sent = one.clone();
    assert_eq!(run(&mut session, &plan(), &scope, "c", &mut one, versions(2), 77)?, Ran::Stored);
    assert_eq!(one, sent, "the messages come back whole");
    assert_eq!(head(&mut session)?, vec![vec![int(3), int(4)]]);
    let mut three = messages(5, 3);
    assert_eq!(run(&mut session, &plan(), &scope, "c", &mut three, versions(3), 78)?, Ran::Stored);
    assert_eq!(three, messages(5, 3));
    assert_eq!(head(&mut session)?, vec![vec![int(4), int(7)]]);
    let rows = query(&mut session, "SELECT * FROM m ORDER BY seq")?;
    let text = |s: &str| Value::Text(s.into());
    let row = |seq: i64, head: Option<(i64, i64)>| {
        let (version, at) = head.map_or((Value::Null, Value::Null), |(v, at)| (int(v), int(at)));
        vec![
            text("t"),
            text("u"),
            text("c"),
            int(seq),
            text(&format!("m{seq}")),
            int(3),
            int(1000 + seq),
            Value::Blob(vec![0x02, 0x00, seq as u8]),
            Value::Blob(vec![0xAA, seq as u8]),
            version,
            at,
        ]
    };
    // The head only on each batch's last message: the first of three gets nulls.
    let expected = vec![row(4, Some((3, 77))), row(5, None), row(6, None), row(7, Some((4, 78)))];
    assert_eq!(rows, expected);
    Ok(())
}

#[test]
fn a_wrong_guess_a_stored_id_or_a_missing_conversation_keeps_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let scope = Scope::new("t", "u");
    for (what, before, first) in [("an old version", 1, 4), ("a newer version", 3, 4), ("another last seq", 2, 5)] {
        for count in [1, 3] {
            let mut batch = messages(first, count);
            let ran = run(&mut session, &plan(), &scope, "c", &mut batch, versions(before), 9)?;
            assert!(matches!(ran, Ran::Failed(SqlErrorKind::Constraint(_))), "{what}, {count}: {ran:?}");
            assert_eq!(batch, messages(first, count), "{what}: the messages come back whole");
        }
    }
    assert_eq!(count(&mut session)?, vec![vec![int(0)]]);
    // A stored id, last in a batch whose first message went in.
    assert_eq!(run(&mut session, &plan(), &scope, "c", &mut messages(4, 1), versions(2), 9)?, Ran::Stored);
    let mut again = messages(5, 2);
    again[1].message.id = "m4".into();
    let ran = run(&mut session, &plan(), &scope, "c", &mut again, versions(3), 9)?;
    assert!(matches!(ran, Ran::Failed(SqlErrorKind::Constraint(_))), "{ran:?}");
    for (scope, id) in [(Scope::new("t", "v"), "c"), (scope.clone(), "missing")] {
        for count in [1, 3] {
            let ran = run(&mut session, &plan(), &scope, id, &mut messages(5, count), versions(3), 9)?;
            assert_eq!(ran, Ran::NoConversation, "{scope:?}/{id}, {count}");
        }
    }
    assert_eq!(count(&mut session)?, vec![vec![int(1)]], "only the one right guess was kept");
    assert_eq!(head(&mut session)?, vec![vec![int(3), int(4)]]);
    Ok(())
}

#[test]
fn counts_other_than_one_row_each_and_statements_that_cannot_run_are_told_apart() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let scope = Scope::new("t", "u");
    // Two rows a message, naming the statement's last parameter (`?9` or `?12`).
    let two_rows = |last: &str| {
        format!(
            "INSERT INTO m SELECT ?1, ?2, ?3, ?4 + n, ?5 || n, ?6, ?7, ?8, ?9, NULL, NULL \
             FROM (SELECT 0 AS n UNION ALL SELECT 100) WHERE {last} IS {last}"
        )
    };
    // A longer batch is rolled back whole.
    let doubled = MessageStatements { middle: two_rows("?9"), ..plan() };
    let ran = run(&mut session, &doubled, &scope, "c", &mut messages(4, 3), versions(2), 9)?;
    assert_eq!(ran, Ran::Miscounted(vec![1, 2]));
    let idle = MessageStatements { last: "UPDATE m SET tag = x'00' WHERE seq < 0 AND ?12 IS ?12".into(), ..plan() };
    let ran = run(&mut session, &idle, &scope, "c", &mut messages(4, 2), versions(2), 9)?;
    assert_eq!(ran, Ran::Miscounted(vec![1, 0]));
    assert_eq!(count(&mut session)?, vec![vec![int(0)]]);
    assert_eq!(head(&mut session)?, vec![vec![int(2), int(3)]]);
    // A statement that does not fit the schema, after a first that ran.
    let broken = MessageStatements { last: "INSERT INTO missing VALUES (?12)".into(), ..plan() };
    let ran = run(&mut session, &broken, &scope, "c", &mut messages(4, 2), versions(2), 9)?;
    assert!(matches!(ran, Ran::Failed(SqlErrorKind::InvalidStatement(_))), "{ran:?}");
    // Parameters other than the plan's: the statement cannot be bound.
    let unbound = MessageStatements { middle: "INSERT INTO m (id) VALUES (?13)".into(), ..plan() };
    let ran = run(&mut session, &unbound, &scope, "c", &mut messages(4, 3), versions(2), 9)?;
    assert!(matches!(ran, Ran::Failed(SqlErrorKind::InvalidStatement(_))), "{ran:?}");
    assert_eq!(count(&mut session)?, vec![vec![int(0)]]);
    // A batch of one is its statement alone: what it changed is committed.
    let doubled_first = MessageStatements { first: two_rows("?12"), ..plan() };
    let ran = run(&mut session, &doubled_first, &scope, "c", &mut messages(4, 1), versions(2), 9)?;
    assert_eq!(ran, Ran::Miscounted(vec![2]));
    assert_eq!(count(&mut session)?, vec![vec![int(2)]]);
    Ok(())
}

#[test]
fn a_passed_deadline_interrupts_the_batch_before_its_next_statement() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let scope = Scope::new("t", "u");
    session.set_deadline(Some(Instant::now() - Duration::from_millis(1)));
    for count in [1, 3] {
        let mut batch = messages(4, count);
        let ran = run(&mut session, &plan(), &scope, "c", &mut batch, versions(2), 9);
        let trap = ran.err().and_then(|e| e.downcast_ref::<wasmtime::Trap>().copied());
        assert_eq!(trap, Some(wasmtime::Trap::Interrupt), "{count}");
        assert_eq!(batch, messages(4, count), "the messages come back whole");
    }
    session.set_deadline(None);
    assert_eq!(count(&mut session)?, vec![vec![int(0)]]);
    // The session is left clean: the next batch runs.
    assert_eq!(run(&mut session, &plan(), &scope, "c", &mut messages(4, 3), versions(2), 9)?, Ran::Stored);
    Ok(())
}

/// A statement that never ends (an unbounded recursive CTE) is interrupted
/// by SQLite once the call's deadline passes, and the call times out with
/// nothing of its batch kept.
#[test]
fn a_statement_that_never_ends_is_interrupted_at_the_deadline() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut session = session(&dir)?;
    let scope = Scope::new("t", "u");
    let endless = "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n)";
    let forever = MessageStatements {
        last: format!("INSERT INTO m VALUES (?1, ?2, ?3, ?4, ?5, ?6, {endless}, ?8, ?9, ?11, ?12)"),
        ..plan()
    };
    session.set_deadline(Some(Instant::now() + Duration::from_millis(100)));
    // Run aside, so that a statement SQLite failed to interrupt fails the test
    // instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ran = run(&mut session, &forever, &scope, "c", &mut messages(4, 2), versions(2), 9);
        let trap = ran.err().and_then(|e| e.downcast_ref::<wasmtime::Trap>().copied());
        session.set_deadline(None);
        let _ = tx.send((trap, count(&mut session)));
    });
    let (trap, stored) =
        rx.recv_timeout(Duration::from_secs(120)).map_err(|_| "the statement was never interrupted")?;
    assert_eq!(trap, Some(wasmtime::Trap::Interrupt));
    assert_eq!(stored?, vec![vec![int(0)]], "the batch's first message was rolled back");
    Ok(())
}

#[test]
fn each_outcome_is_answered_and_only_a_plan_that_cannot_run_or_miscounts_is_dropped() {
    let v = versions(6);
    assert_eq!(judge(Ran::Stored, v), (Appended::Stored(7), true));
    assert_eq!(judge(Ran::NoConversation, v), (Appended::AskAdapter, true));
    for kept in [SqlErrorKind::Constraint("x".into()), SqlErrorKind::Busy] {
        assert_eq!(judge(Ran::Failed(kept.clone()), v), (Appended::AskAdapter, true), "{kept:?}");
    }
    let disk = judge(Ran::Failed(SqlErrorKind::Io("disk full".into())), v);
    assert_eq!(disk, (Appended::Storage("disk full".into()), true));
    for dropped in [
        SqlErrorKind::InvalidStatement("x".into()),
        SqlErrorKind::AccessDenied("x".into()),
        SqlErrorKind::TooLarge("x".into()),
        SqlErrorKind::Transaction("x".into()),
    ] {
        assert_eq!(judge(Ran::Failed(dropped.clone()), v), (Appended::AskAdapter, false), "{dropped:?}");
    }
    let (answer, keep) = judge(Ran::Miscounted(vec![1, 2]), v);
    assert!(matches!(answer, Appended::Violation(ref what) if what.contains("[1, 2]")), "{answer:?}");
    assert!(!keep);
}

#[test]
fn only_a_batch_that_continues_the_head_is_tried() {
    let head = Head { version: 4, last_seq: 9 };
    assert_eq!(continues(head, &messages(10, 3), None), Some(versions(4)));
    assert_eq!(continues(head, &messages(10, 1), Some(4)), Some(versions(4)));
    assert_eq!(continues(head, &messages(10, 1), Some(3)), None, "another expected version");
    assert_eq!(continues(head, &messages(11, 1), None), None, "a gap");
    assert_eq!(continues(head, &messages(9, 2), None), None, "an overlap");
    assert_eq!(continues(head, &[], None), None, "nothing to store");
    let mut gapped = messages(10, 3);
    gapped[2].seq = 13;
    assert_eq!(continues(head, &gapped, None), None, "not contiguous");
    let top = Head { version: i64::MAX as u64, last_seq: 9 };
    assert_eq!(continues(top, &messages(10, 1), None), None, "a version past SQL's integers");
    let far = Head { version: 1, last_seq: i64::MAX as u64 - 1 };
    assert_eq!(continues(far, &messages(i64::MAX as u64, 1), None), Some(versions(1)));
    let past = Head { version: 1, last_seq: i64::MAX as u64 };
    assert_eq!(continues(past, &messages(i64::MAX as u64 + 1, 1), None), None, "a seq past SQL's integers");
}

//! Many writers on one conversation, each with its own connection (as many hosts
//! on one database): the database serialises them, and a writer that loses a race
//! gets the contract's answer — never a lost or duplicated message.

use std::cell::Cell;
use std::collections::HashSet;
use std::sync::mpsc;

use super::{Fixture, batch, each_backend, meta, record, scope};
use crate::conversations as conv;
use crate::db::{Db, Dialect, Sql};
use crate::display;
use crate::exports::stowage::store::conversation_store::{AppendOutcome, MessageRange};
use crate::exports::stowage::store::display_store::InsertOutcome;
use crate::reads;
use crate::stowage::store::sql::{Error as SqlError, Statement, Value};
use crate::stowage::store::types::Error;

/// Appends `batches` batches of two messages to (t, u, c) as the host would:
/// numbered after the last seq it knows, renumbered on `out-of-sequence`.
fn host_writer(sql: &dyn Sql, writer: usize, batches: usize) {
    let db = Db::new(sql);
    let mut last = conv::info(&db, scope("t", "u"), "c".into()).expect("info").last_seq;
    for b in 0..batches {
        let ids = [format!("w{writer}-{b}-0"), format!("w{writer}-{b}-1")];
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        loop {
            match conv::append(&db, scope("t", "u"), "c".into(), batch(&ids, last + 1), None, 1) {
                Ok(AppendOutcome::Stored(_)) => {
                    last += 2;
                    break;
                }
                Ok(AppendOutcome::OutOfSequence(current)) => last = current,
                other => panic!("writer {writer}: unexpected {other:?}"),
            }
        }
    }
}

#[test]
fn concurrent_writers_never_lose_or_duplicate_a_message() {
    each_backend(|f| {
        let (writers, batches) = (4, 15);
        conv::open(&Db::new(&*f.migrated()), scope("t", "u"), "c".into(), meta(b""), 1).expect("open");
        std::thread::scope(|s| {
            for writer in 0..writers {
                let sql = f.connect();
                s.spawn(move || host_writer(&*sql, writer, batches));
            }
        });
        let sql = f.connect();
        let db = Db::new(&*sql);
        let all = reads::load(&db, scope("t", "u"), "c".into(), MessageRange::After(0), 10_000).expect("load");
        let total = (writers * batches * 2) as u64;
        assert_eq!(all.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=total).collect::<Vec<_>>());
        let ids: HashSet<&str> = all.iter().map(|m| m.message.id.as_str()).collect();
        assert_eq!(ids.len() as u64, total, "no id is stored twice");
        // Each batch stays whole and in order.
        for pair in all.chunks(2) {
            let head = pair[0].message.id.strip_suffix("-0").expect("a batch starts with its message 0");
            assert_eq!(pair[1].message.id, format!("{head}-1"));
        }
        let info = conv::info(&db, scope("t", "u"), "c".into()).expect("info");
        assert_eq!((info.last_seq, info.version), (total, (writers * batches) as u64));
    });
}

#[test]
fn concurrent_display_writers_never_lose_a_record() {
    each_backend(|f| {
        let (writers, batches) = (4, 10);
        drop(f.migrated());
        std::thread::scope(|s| {
            for _ in 0..writers {
                let sql = f.connect();
                s.spawn(move || {
                    let db = Db::new(&*sql);
                    let mut last = 0;
                    for _ in 0..batches {
                        loop {
                            let records = vec![record(last + 1, None, None), record(last + 2, None, None)];
                            match display::insert(&db, scope("t", "u"), "c".into(), records) {
                                Ok(InsertOutcome::Stored) => break,
                                Ok(InsertOutcome::OutOfSequence(current)) => last = current,
                                Err(e) => panic!("{e:?}"),
                            }
                        }
                        last += 2;
                    }
                });
            }
        });
        let db_sql = f.connect();
        let all = display::list(&Db::new(&*db_sql), scope("t", "u"), "c".into(), 0, 1000).expect("list");
        let total = (writers * batches * 2) as u64;
        assert_eq!(all.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=total).collect::<Vec<_>>());
    });
}

/// A connection that fails its next `failures` history writes (a batch, or a
/// lone message insert) with a constraint error, as a concurrent writer's row
/// at the same key would, and can hold its commit.
struct Interfered {
    inner: Box<dyn Sql + Send>,
    failures: Cell<u32>,
    hold_commit: Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>,
}

impl Sql for Interfered {
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }
    fn execute(&self, statement: &str, params: &[Value]) -> Result<u64, SqlError> {
        if statement.starts_with("INSERT INTO stowage_messages") {
            self.interfere()?;
        }
        self.inner.execute(statement, params)
    }
    fn query(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, SqlError> {
        self.inner.query(statement, params)
    }
    fn execute_batch(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        self.interfere()?;
        self.inner.execute_batch(statements)
    }
    fn begin(&self) -> Result<(), SqlError> {
        self.inner.begin()
    }
    fn commit(&self) -> Result<(), SqlError> {
        if let Some((ready, release)) = &self.hold_commit {
            ready.send(()).expect("the test listens");
            release.recv().expect("the test releases the commit");
        }
        self.inner.commit()
    }
    fn rollback(&self) -> Result<(), SqlError> {
        self.inner.rollback()
    }
}

impl Interfered {
    fn interfere(&self) -> Result<(), SqlError> {
        if self.failures.get() > 0 {
            self.failures.set(self.failures.get() - 1);
            return Err(SqlError::Constraint("UNIQUE constraint failed (injected)".into()));
        }
        Ok(())
    }
}

fn interfered(f: &Fixture, failures: u32) -> Interfered {
    let inner = f.migrated();
    conv::open(&Db::new(&*inner), scope("t", "u"), "c".into(), meta(b""), 1).expect("open");
    Interfered { inner, failures: Cell::new(failures), hold_commit: None }
}

#[test]
fn a_lost_race_reruns_the_append_on_fresh_state() {
    each_backend(|f| {
        let sql = interfered(f, 1);
        let db = Db::new(&sql);
        let outcome = conv::append(&db, scope("t", "u"), "c".into(), batch(&["a", "b"], 1), None, 2);
        assert_eq!(outcome, Ok(AppendOutcome::Stored(1)));
        let all = reads::load(&db, scope("t", "u"), "c".into(), MessageRange::Latest, 10).expect("load");
        assert_eq!(all.len(), 2);
    });
}

#[test]
fn a_constraint_that_keeps_failing_is_reported_and_stores_nothing() {
    each_backend(|f| {
        let sql = interfered(f, 100);
        let db = Db::new(&sql);
        let outcome = conv::append(&db, scope("t", "u"), "c".into(), batch(&["a"], 1), None, 2);
        assert!(matches!(&outcome, Err(Error::Storage(m)) if m.contains("gave up")), "{outcome:?}");
        sql.failures.set(0);
        assert!(reads::load(&db, scope("t", "u"), "c".into(), MessageRange::Latest, 10).expect("load").is_empty());
    });
}

#[test]
fn a_writer_waiting_on_another_s_transaction_gets_out_of_sequence() {
    each_backend(|f| {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel();
        let mut first = interfered(f, 0);
        first.hold_commit = Some((ready_tx, release_rx));
        let second = f.connect();
        std::thread::scope(|s| {
            let holder =
                s.spawn(move || conv::append(&Db::new(&first), scope("t", "u"), "c".into(), batch(&["a"], 1), None, 2));
            // The first writer has written and holds its transaction open.
            ready_rx.recv().expect("the first writer reaches its commit");
            let waiter = s.spawn(move || {
                conv::append(&Db::new(&*second), scope("t", "u"), "c".into(), batch(&["b"], 1), None, 3)
            });
            release_tx.send(()).expect("release");
            assert_eq!(holder.join().expect("joins"), Ok(AppendOutcome::Stored(1)));
            assert_eq!(waiter.join().expect("joins"), Ok(AppendOutcome::OutOfSequence(1)));
        });
    });
}

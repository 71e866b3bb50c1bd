//! The one-crossing append ([`crate::fast_append`]) on SQLite: taken when the
//! instance knows the head, and when its guess is stale (another instance wrote
//! since), nothing is stored by it and the long way answers as the contract
//! orders. Two handles on one database file play two instances.

use std::cell::{Cell, RefCell};

use super::{Fixture, batch, meta, scope};
use crate::conversations as conv;
use crate::db::{Db, Dialect, Sql};
use crate::exports::stowage::store::conversation_store::{
    AlreadyStored, AppendOutcome, IndexedSeq, MessageRange, TruncateOutcome,
};
use crate::reads;
use crate::stowage::store::sql::{Error as SqlError, Statement, Value};
use crate::stowage::store::types::{Conflict, Error};

/// A database that records which `sql` functions the adapter called, and can
/// fail the next write with an I/O error.
struct Counting<'a> {
    inner: &'a dyn Sql,
    calls: RefCell<Vec<&'static str>>,
    fail_next_write: Cell<bool>,
}

impl<'a> Counting<'a> {
    fn new(inner: &'a dyn Sql) -> Self {
        Counting { inner, calls: RefCell::default(), fail_next_write: Cell::new(false) }
    }

    fn take(&self) -> Vec<&'static str> {
        self.calls.take()
    }

    fn failure(&self) -> Result<(), SqlError> {
        match self.fail_next_write.replace(false) {
            true => Err(SqlError::Io("injected".into())),
            false => Ok(()),
        }
    }
}

impl Sql for Counting<'_> {
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }
    fn execute(&self, statement: &str, params: &[Value]) -> Result<u64, SqlError> {
        self.calls.borrow_mut().push("execute");
        self.failure()?;
        self.inner.execute(statement, params)
    }
    fn query(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, SqlError> {
        self.calls.borrow_mut().push("query");
        self.inner.query(statement, params)
    }
    fn execute_batch(&self, statements: &[Statement]) -> Result<Vec<u64>, SqlError> {
        self.calls.borrow_mut().push("execute-batch");
        self.failure()?;
        self.inner.execute_batch(statements)
    }
    fn begin(&self) -> Result<(), SqlError> {
        self.calls.borrow_mut().push("begin");
        self.inner.begin()
    }
    fn commit(&self) -> Result<(), SqlError> {
        self.calls.borrow_mut().push("commit");
        self.inner.commit()
    }
    fn rollback(&self) -> Result<(), SqlError> {
        self.calls.borrow_mut().push("rollback");
        self.inner.rollback()
    }
}

/// (version, last seq, message count) of conversation (t, u, c).
fn head(db: &Db) -> (u64, u64, u64) {
    let info = conv::info(db, scope("t", "u"), "c".into()).expect("info");
    (info.version, info.last_seq, info.message_count)
}

/// The ids of conversation (t, u, c), oldest first.
fn ids(db: &Db) -> Vec<String> {
    let all = reads::load(db, scope("t", "u"), "c".into(), MessageRange::After(0), 100).expect("load");
    all.into_iter().map(|m| m.message.id).collect()
}

fn append(db: &Db, ids: &[&str], first: u64, expected: Option<u64>) -> Result<AppendOutcome, Error> {
    conv::append(db, scope("t", "u"), "c".into(), batch(ids, first), expected, 100 + first as i64)
}

#[test]
fn an_append_that_continues_a_known_head_is_one_call() {
    let f = Fixture::sqlite();
    let sql = f.migrated();
    let counting = Counting::new(&*sql);
    let db = Db::new(&counting);
    conv::open(&db, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    counting.take();
    // `open` read the head: the first append is one call too.
    assert_eq!(append(&db, &["a"], 1, None), Ok(AppendOutcome::Stored(1)));
    assert_eq!(counting.take(), ["execute"]);
    assert_eq!(append(&db, &["b"], 2, Some(1)), Ok(AppendOutcome::Stored(2)));
    assert_eq!(counting.take(), ["execute"]);
    assert_eq!(append(&db, &["c", "d", "e"], 3, None), Ok(AppendOutcome::Stored(3)));
    assert_eq!(counting.take(), ["execute-batch"]);
    assert_eq!(head(&db), (3, 5, 5));
    assert_eq!(ids(&db), ["a", "b", "c", "d", "e"]);
    // A batch that does not continue the guess is not tried in one call.
    counting.take();
    assert_eq!(append(&db, &["x"], 7, None), Ok(AppendOutcome::OutOfSequence(5)));
    assert_eq!(counting.take().first(), Some(&"begin"));
    // A head the long way read from the row, after a replace.
    assert_eq!(conv::replace(&db, scope("t", "u"), "c".into(), batch(&["f"], 1), None, 9), Ok(4));
    assert_eq!(append(&db, &["g"], 3, None), Ok(AppendOutcome::OutOfSequence(1)));
    counting.take();
    assert_eq!(append(&db, &["g"], 2, None), Ok(AppendOutcome::Stored(5)));
    assert_eq!(counting.take(), ["execute"]);
    // And from the row of a conversation with no message yet (`info` reads a
    // head, but only `open` makes it the guess).
    conv::open(&db, scope("t", "u"), "e".into(), meta(b"m"), 5).expect("open");
    let fresh = Db::new(&counting);
    conv::info(&fresh, scope("t", "u"), "e".into()).expect("info");
    counting.take();
    let long = conv::append(&fresh, scope("t", "u"), "e".into(), batch(&["z"], 2), None, 10);
    assert_eq!((long, counting.take().first().copied()), (Ok(AppendOutcome::OutOfSequence(0)), Some("begin")));
    let early = conv::append(&db, scope("t", "u"), "e".into(), batch(&["a"], 2), None, 10);
    assert_eq!(early, Ok(AppendOutcome::OutOfSequence(0)));
    counting.take();
    let first = conv::append(&db, scope("t", "u"), "e".into(), batch(&["a"], 1), None, 11);
    assert_eq!((first, counting.take()), (Ok(AppendOutcome::Stored(1)), vec!["execute"]));
    // A failed one-call append is answered as is, and the next one reads the head.
    counting.fail_next_write.set(true);
    let failed = conv::append(&db, scope("t", "u"), "e".into(), batch(&["b"], 2), None, 12);
    assert!(matches!(failed, Err(Error::Storage(ref reason)) if reason.contains("injected")), "{failed:?}");
    assert_eq!(counting.take(), ["execute"]);
    let next = conv::append(&db, scope("t", "u"), "e".into(), batch(&["b"], 2), None, 13);
    assert_eq!((next, counting.take().first().copied()), (Ok(AppendOutcome::Stored(2)), Some("begin")));
}

#[test]
fn a_guess_made_stale_by_another_instance_stores_nothing_and_the_long_way_answers() {
    let f = Fixture::sqlite();
    let (sql_1, sql_2) = (f.migrated(), f.connect());
    let (one, two) = (Db::new(&*sql_1), Db::new(&*sql_2));
    conv::open(&one, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    assert_eq!(append(&one, &["a"], 1, None), Ok(AppendOutcome::Stored(1)));
    // The other instance cuts and appends again: the same last seq, a newer version.
    let cut = conv::truncate_after(&two, scope("t", "u"), "c".into(), 0, None, 6);
    assert_eq!(cut, Ok(TruncateOutcome { removed: 1, version: 2 }));
    assert_eq!(append(&two, &["b"], 1, None), Ok(AppendOutcome::Stored(3)));
    // One still guesses version 1 at seq 1; the batch continues seq 1 all the same.
    assert_eq!(append(&one, &["c", "d"], 2, None), Ok(AppendOutcome::Stored(4)));
    assert_eq!(head(&one), (4, 3, 3));
    assert_eq!(ids(&one), ["b", "c", "d"]);
    // Two guesses version 3 at seq 1: its seq-2 batch is out of sequence, and with
    // an expected version of 3 (its guess) the long way answers `conflict` first.
    assert_eq!(append(&two, &["e"], 2, None), Ok(AppendOutcome::OutOfSequence(3)));
    let conflict = append(&two, &["e"], 4, Some(3));
    assert_eq!(conflict, Err(Error::Conflict(Conflict { expected_version: 3, actual_version: 4 })));
    assert_eq!(head(&two), (4, 3, 3));
    // Each instance's guess is right again after the long way.
    assert_eq!(append(&two, &["e"], 4, Some(4)), Ok(AppendOutcome::Stored(5)));
    assert_eq!(ids(&one), ["b", "c", "d", "e"]);
}

#[test]
fn a_guess_about_a_conversation_deleted_and_made_again_is_checked_against_the_new_one() {
    let f = Fixture::sqlite();
    let (sql_1, sql_2) = (f.migrated(), f.connect());
    let (one, two) = (Db::new(&*sql_1), Db::new(&*sql_2));
    conv::open(&one, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    assert_eq!(append(&one, &["a", "b"], 1, None), Ok(AppendOutcome::Stored(1)));
    assert_eq!(conv::delete(&two, scope("t", "u"), "c".into()), Ok(true));
    conv::open(&two, scope("t", "u"), "c".into(), meta(b"m"), 6).expect("open again");
    assert_eq!(append(&two, &["x"], 1, None), Ok(AppendOutcome::Stored(1)));
    // One's guess (version 1, seq 2) is wrong about the new conversation's seq.
    assert_eq!(append(&one, &["c"], 3, None), Ok(AppendOutcome::OutOfSequence(1)));
    assert_eq!(append(&one, &["c"], 2, None), Ok(AppendOutcome::Stored(2)));
    assert_eq!(ids(&two), ["x", "c"]);
    // Made again by appends alone: the same last seq, an older head in the message.
    let (sql_3, sql_4) = (f.connect(), f.connect());
    let (three, four) = (Db::new(&*sql_3), Db::new(&*sql_4));
    assert_eq!(append(&three, &["d"], 3, None), Ok(AppendOutcome::Stored(3)));
    assert_eq!(append(&three, &["e"], 4, None), Ok(AppendOutcome::Stored(4)));
    assert_eq!(conv::delete(&four, scope("t", "u"), "c".into()), Ok(true));
    conv::open(&four, scope("t", "u"), "c".into(), meta(b"m"), 6).expect("open again");
    assert_eq!(append(&four, &["p", "q", "r", "s"], 1, None), Ok(AppendOutcome::Stored(1)));
    assert_eq!(append(&three, &["t"], 5, None), Ok(AppendOutcome::Stored(2)));
    assert_eq!(ids(&four), ["p", "q", "r", "s", "t"]);
    // Another scope's conversation of the same id is not this one.
    let other = conv::append(&one, scope("t", "v"), "c".into(), batch(&["y"], 3), None, 7);
    assert_eq!(other, Err(Error::NotFound));
}

#[test]
fn a_guess_whose_key_now_belongs_to_another_conversation_is_not_taken() {
    for (tenant, user, id) in [("s", "u", "c"), ("t", "v", "c"), ("t", "u", "d")] {
        let f = Fixture::sqlite();
        let (sql_1, sql_2) = (f.migrated(), f.connect());
        let (one, two) = (Db::new(&*sql_1), Db::new(&*sql_2));
        conv::open(&one, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
        assert_eq!(append(&one, &["a", "b"], 1, None), Ok(AppendOutcome::Stored(1)));
        // The key is used again by another scope's or id's conversation, at the same head.
        assert_eq!(conv::delete(&two, scope("t", "u"), "c".into()), Ok(true));
        conv::open(&two, scope(tenant, user), id.into(), meta(b"m"), 6).expect("open another");
        let there = conv::append(&two, scope(tenant, user), id.into(), batch(&["x", "y"], 1), None, 7);
        assert_eq!(there, Ok(AppendOutcome::Stored(1)));
        assert_eq!(append(&one, &["c"], 3, None), Err(Error::NotFound), "{tenant}/{user}/{id}");
        let theirs = reads::load(&two, scope(tenant, user), id.into(), MessageRange::After(0), 10).expect("load");
        assert_eq!(theirs.into_iter().map(|m| m.message.id).collect::<Vec<_>>(), ["x", "y"]);
    }
}

/// `replace` keeps the head in the conversation's row, not in a message.
#[test]
fn a_guess_is_checked_against_a_head_kept_in_the_row() {
    let f = Fixture::sqlite();
    let (sql_1, sql_2) = (f.migrated(), f.connect());
    let (one, two) = (Db::new(&*sql_1), Db::new(&*sql_2));
    conv::open(&one, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    assert_eq!(append(&one, &["a"], 1, None), Ok(AppendOutcome::Stored(1)));
    // The same last seq at a newer version.
    assert_eq!(conv::replace(&two, scope("t", "u"), "c".into(), batch(&["b"], 1), None, 6), Ok(2));
    assert_eq!(append(&one, &["c"], 2, None), Ok(AppendOutcome::Stored(3)));
    assert_eq!(head(&one), (3, 2, 2));
    // The same version (a conversation made again) at another last seq.
    let (sql_3, sql_4) = (f.connect(), f.connect());
    let (three, four) = (Db::new(&*sql_3), Db::new(&*sql_4));
    assert_eq!(append(&three, &["d", "e"], 3, None), Ok(AppendOutcome::Stored(4)));
    assert_eq!(conv::delete(&four, scope("t", "u"), "c".into()), Ok(true));
    conv::open(&four, scope("t", "u"), "c".into(), meta(b"m"), 7).expect("open again");
    // Version 4 again, at last seq 3.
    for (version, length) in [(1, 1), (2, 1), (3, 1), (4, 3)] {
        let messages = batch(&["f", "g", "h"][..length], 1);
        assert_eq!(conv::replace(&four, scope("t", "u"), "c".into(), messages, None, 8), Ok(version));
    }
    assert_eq!(append(&three, &["k"], 5, None), Ok(AppendOutcome::OutOfSequence(3)));
    assert_eq!(ids(&four), ["f", "g", "h"]);
}

#[test]
fn a_stored_id_under_a_known_head_is_already_stored_and_stores_nothing() {
    let f = Fixture::sqlite();
    let sql = f.migrated();
    let db = Db::new(&*sql);
    conv::open(&db, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    assert_eq!(append(&db, &["a", "b"], 1, None), Ok(AppendOutcome::Stored(1)));
    let retry = append(&db, &["c", "b"], 3, None);
    let stored = vec![IndexedSeq { index: 1, seq: 2 }];
    assert_eq!(retry, Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs: stored, version: 1 })));
    assert_eq!(head(&db), (1, 2, 2));
    assert_eq!(append(&db, &["c"], 3, None), Ok(AppendOutcome::Stored(2)));
    assert_eq!(ids(&db), ["a", "b", "c"]);
}

/// States only a damaged database (or another adapter) could hold: a head in
/// the newest message newer than the row's at the row's own last seq, and half
/// heads. A guess never matches them; the long way answers.
#[test]
fn a_guess_never_matches_a_head_the_long_way_would_read_otherwise() {
    let f = Fixture::sqlite();
    let sql = f.migrated();
    let db = Db::new(&*sql);
    let raw = rusqlite::Connection::open(f.sqlite_path().expect("sqlite")).expect("open the file");
    let newest = |set: &str| {
        raw.execute(
            &format!("UPDATE stowage_messages SET {set} WHERE pos = (SELECT MAX(pos) FROM stowage_messages)"),
            [],
        )
        .expect("damage the newest message")
    };
    conv::open(&db, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    // The guess is the row's head: version 1, last seq 1.
    let guess_the_row = |next: &str| {
        newest("head_version = NULL, head_updated_at = NULL");
        assert_eq!(conv::replace(&db, scope("t", "u"), "c".into(), batch(&["a"], 1), None, 6).map(|_| ()), Ok(()));
        let version = head(&db).0;
        assert_eq!(append(&db, &[next], 3, None), Ok(AppendOutcome::OutOfSequence(1)));
        version
    };
    let version = guess_the_row("b");
    newest(&format!("head_version = {}, head_updated_at = 9", version + 1));
    assert_eq!(append(&db, &["b"], 2, None), Ok(AppendOutcome::Stored(version + 2)));
    for (half, next) in
        [("head_version = NULL, head_updated_at = 9", "c"), ("head_version = 99, head_updated_at = NULL", "d")]
    {
        guess_the_row(next);
        newest(half);
        let answer = append(&db, &[next], 2, None);
        assert!(
            matches!(answer, Err(Error::Storage(ref reason)) if reason.contains("half a head")),
            "{half}: {answer:?}"
        );
        assert_eq!(ids(&db), ["a"]);
    }
    // The head the newest message carries at the guessed version and seq, but half of it.
    newest("head_version = NULL, head_updated_at = NULL");
    assert_eq!(conv::replace(&db, scope("t", "u"), "c".into(), batch(&["a"], 1), None, 7).map(|_| ()), Ok(()));
    assert_eq!(append(&db, &["e"], 2, None).map(|_| ()), Ok(()));
    newest("head_updated_at = NULL");
    let answer = append(&db, &["f"], 3, None);
    assert!(matches!(answer, Err(Error::Storage(ref reason)) if reason.contains("half a head")), "{answer:?}");
    assert_eq!(ids(&db), ["a", "e"]);
}

//! `conversation-store` against both engines: the check order of `append`, the
//! other writes, loads and listing.

use super::{Fixture, batch, each_backend, message, meta, scope};
use crate::conversations as conv;
use crate::db::Db;
use crate::exports::stowage::store::conversation_store::{
    AlreadyStored, AppendOutcome, IndexedSeq, MessageRange, StoredMessage, TruncateOutcome,
};
use crate::model::SEQ_LIMIT;
use crate::reads;
use crate::stowage::store::types::{Conflict, Error, Role};

fn seqs(messages: &[StoredMessage]) -> Vec<u64> {
    messages.iter().map(|m| m.seq).collect()
}

fn load_all(db: &Db, tenant: &str, id: &str) -> Vec<StoredMessage> {
    reads::load(db, scope(tenant, "u"), id.into(), MessageRange::After(0), 10_000).expect("load")
}

/// A conversation "c" of scope (t, u), opened at time 5.
fn opened(fixture: &Fixture) -> Box<dyn crate::db::Sql + Send> {
    let sql = fixture.migrated();
    conv::open(&Db::new(&*sql), scope("t", "u"), "c".into(), meta(b"\x01{}"), 5).expect("open");
    sql
}

#[test]
fn open_creates_once_and_then_returns_the_stored_conversation() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let first = conv::open(&db, scope("t", "u"), "c".into(), meta(b"first"), 5).expect("open");
        assert_eq!((first.id.as_str(), first.scope.tenant.as_str(), first.scope.user.as_str()), ("c", "t", "u"));
        assert_eq!(first.meta, meta(b"first"));
        assert_eq!((first.created_at, first.updated_at), (5, 5));
        assert_eq!((first.message_count, first.last_seq, first.version), (0, 0, 0));
        let again = conv::open(&db, scope("t", "u"), "c".into(), meta(b"second"), 9).expect("open");
        assert_eq!(again, first);
        assert_eq!(conv::info(&db, scope("t", "u"), "c".into()), Ok(first));
    });
}

/// On a database this instance has just made, `open` skips its read: a new
/// conversation is answered as `open` and `info` would answer it; one another
/// writer made first is found, not made twice.
#[test]
fn open_on_a_new_database_answers_what_a_read_would() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let made = conv::open_in(&db, scope("t", "u"), "c".into(), meta(b"first"), 5, true).expect("open");
        assert_eq!(conv::info(&db, scope("t", "u"), "c".into()), Ok(made.clone()));
        assert_eq!((made.created_at, made.updated_at, made.last_seq, made.version), (5, 5, 0, 0));
        let again = conv::open_in(&db, scope("t", "u"), "c".into(), meta(b"second"), 9, true).expect("open");
        assert_eq!(again, made);
        let outcome = conv::append(&db, scope("t", "u"), "c".into(), batch(&["a"], 1), Some(0), 6);
        assert_eq!(outcome, Ok(AppendOutcome::Stored(1)));
        let after = conv::open_in(&db, scope("t", "u"), "c".into(), meta(b"third"), 9, true).expect("open");
        assert_eq!((after.meta, after.last_seq, after.version), (meta(b"first"), 1, 1));
    });
}

#[test]
fn another_scope_or_a_missing_id_is_not_found() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        for (tenant, user, id) in [("t", "other", "c"), ("other", "u", "c"), ("t", "u", "missing")] {
            assert_eq!(conv::info(&db, scope(tenant, user), id.into()), Err(Error::NotFound));
            let append = conv::append(&db, scope(tenant, user), id.into(), batch(&["x"], 1), None, 6);
            assert_eq!(append, Err(Error::NotFound));
            let load = reads::load(&db, scope(tenant, user), id.into(), MessageRange::Latest, 5);
            assert_eq!(load, Err(Error::NotFound));
            assert_eq!(conv::replace(&db, scope(tenant, user), id.into(), vec![], None, 6), Err(Error::NotFound));
            let truncate = conv::truncate_after(&db, scope(tenant, user), id.into(), 0, None, 6);
            assert_eq!(truncate, Err(Error::NotFound));
        }
    });
}

#[test]
fn append_stores_at_the_host_seqs_and_load_returns_every_byte() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        let mut sent = batch(&["a", "b", "c"], 1);
        sent[1].message.role = Role::User;
        sent[2].message.tag = Vec::new();
        sent[2].message.content = (0..=255u8).cycle().take(100_000).collect();
        let outcome = conv::append(&db, scope("t", "u"), "c".into(), sent.clone(), Some(0), 42);
        assert_eq!(outcome, Ok(AppendOutcome::Stored(1)));
        assert_eq!(load_all(&db, "t", "c"), sent);
        let info = conv::info(&db, scope("t", "u"), "c".into()).expect("info");
        assert_eq!((info.message_count, info.last_seq, info.version, info.updated_at), (3, 3, 1, 42));
        assert_eq!(info.created_at, 5);
    });
}

#[test]
fn a_retry_gets_the_original_seqs_back_and_stores_nothing() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        let key = || (scope("t", "u"), String::from("c"));
        let (s, c) = key();
        conv::append(&db, s, c, batch(&["a", "b"], 1), None, 6).expect("append");
        // The very same batch, with a stale expected version: already stored wins.
        let (s, c) = key();
        let retry = conv::append(&db, s, c, batch(&["a", "b"], 1), Some(0), 7);
        let both = vec![IndexedSeq { index: 0, seq: 1 }, IndexedSeq { index: 1, seq: 2 }];
        assert_eq!(retry, Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs: both, version: 1 })));
        // Partly stored: every stored id is listed, the new one is not stored.
        let (s, c) = key();
        let partial = conv::append(&db, s, c, batch(&["new", "b"], 3), None, 8);
        let listed = vec![IndexedSeq { index: 1, seq: 2 }];
        assert_eq!(partial, Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs: listed, version: 1 })));
        assert_eq!(seqs(&load_all(&db, "t", "c")), vec![1, 2]);
        let info = conv::info(&db, scope("t", "u"), "c".into()).expect("info");
        assert_eq!((info.last_seq, info.version, info.updated_at), (2, 1, 6));
    });
}

#[test]
fn a_stale_version_conflicts_before_the_sequence_is_checked() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        conv::append(&db, scope("t", "u"), "c".into(), batch(&["a"], 1), None, 6).expect("append");
        let stale = conv::append(&db, scope("t", "u"), "c".into(), batch(&["b"], 9), Some(0), 7);
        assert_eq!(stale, Err(Error::Conflict(Conflict { expected_version: 0, actual_version: 1 })));
        for first in [1, 3] {
            let outcome = conv::append(&db, scope("t", "u"), "c".into(), batch(&["b"], first), Some(1), 7);
            assert_eq!(outcome, Ok(AppendOutcome::OutOfSequence(1)));
        }
        assert_eq!(seqs(&load_all(&db, "t", "c")), vec![1]);
        let next = conv::append(&db, scope("t", "u"), "c".into(), batch(&["b", "c"], 2), Some(1), 7);
        assert_eq!(next, Ok(AppendOutcome::Stored(2)));
    });
}

#[test]
fn malformed_batches_are_invalid_input_and_store_nothing() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        let mut gap = batch(&["a", "b"], 1);
        gap[1].seq = 3;
        let mut twice = batch(&["a", "b"], 1);
        twice[1].message.id = "a".into();
        for bad in [gap, twice, batch(&["a"], SEQ_LIMIT)] {
            let outcome = conv::append(&db, scope("t", "u"), "c".into(), bad, None, 6);
            assert!(matches!(outcome, Err(Error::InvalidInput(_))), "{outcome:?}");
        }
        assert!(load_all(&db, "t", "c").is_empty());
    });
}

#[test]
fn an_empty_append_changes_nothing() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        assert_eq!(conv::append(&db, scope("t", "u"), "c".into(), vec![], None, 6), Ok(AppendOutcome::Stored(0)));
        let info = conv::info(&db, scope("t", "u"), "c".into()).expect("info");
        assert_eq!((info.version, info.updated_at), (0, 5));
    });
}

#[test]
fn load_pages_by_seq_in_ascending_order() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        let ids: Vec<String> = (1..=10).map(|i| format!("m{i}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        conv::append(&db, scope("t", "u"), "c".into(), batch(&ids, 1), None, 6).expect("append");
        let cases = [
            (MessageRange::Latest, 3, vec![8, 9, 10]),
            (MessageRange::Latest, 50, (1..=10).collect()),
            (MessageRange::After(7), 2, vec![8, 9]),
            (MessageRange::After(10), 5, vec![]),
            (MessageRange::After(u64::MAX), 5, vec![]),
            (MessageRange::Before(4), 2, vec![2, 3]),
            (MessageRange::Before(1), 2, vec![]),
            (MessageRange::Before(u64::MAX), 2, vec![9, 10]),
            (MessageRange::Latest, 0, vec![]),
        ];
        for (range, limit, expected) in cases {
            let loaded = reads::load(&db, scope("t", "u"), "c".into(), range, limit).expect("load");
            assert_eq!(seqs(&loaded), expected, "{range:?} limit {limit}");
        }
    });
}

#[test]
fn replace_renumbers_from_one_and_bumps_the_version() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        conv::append(&db, scope("t", "u"), "c".into(), batch(&["a", "b", "c"], 1), None, 6).expect("append");
        let not_from_one = conv::replace(&db, scope("t", "u"), "c".into(), batch(&["x"], 2), None, 7);
        assert!(matches!(not_from_one, Err(Error::InvalidInput(_))));
        let stale = conv::replace(&db, scope("t", "u"), "c".into(), batch(&["x"], 1), Some(0), 7);
        assert_eq!(stale, Err(Error::Conflict(Conflict { expected_version: 0, actual_version: 1 })));
        let new = batch(&["x", "a"], 1);
        assert_eq!(conv::replace(&db, scope("t", "u"), "c".into(), new.clone(), Some(1), 7), Ok(2));
        assert_eq!(load_all(&db, "t", "c"), new);
        let info = conv::info(&db, scope("t", "u"), "c".into()).expect("info");
        assert_eq!((info.last_seq, info.message_count, info.version, info.updated_at), (2, 2, 2, 7));
        // "b" is gone, so it is new again; "a" is stored at its new seq.
        let again = conv::append(&db, scope("t", "u"), "c".into(), batch(&["b", "a"], 3), None, 8);
        let listed = vec![IndexedSeq { index: 1, seq: 2 }];
        assert_eq!(again, Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs: listed, version: 2 })));
        assert_eq!(conv::replace(&db, scope("t", "u"), "c".into(), vec![], None, 9), Ok(3));
        assert!(load_all(&db, "t", "c").is_empty());
    });
}

#[test]
fn truncate_removes_the_tail_and_the_next_append_continues_after_the_cut() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        conv::append(&db, scope("t", "u"), "c".into(), batch(&["a", "b", "c", "d"], 1), None, 6).expect("append");
        let nothing = conv::truncate_after(&db, scope("t", "u"), "c".into(), 4, Some(99), 7);
        assert_eq!(nothing, Ok(TruncateOutcome { removed: 0, version: 1 }));
        let stale = conv::truncate_after(&db, scope("t", "u"), "c".into(), 1, Some(0), 7);
        assert_eq!(stale, Err(Error::Conflict(Conflict { expected_version: 0, actual_version: 1 })));
        let cut = conv::truncate_after(&db, scope("t", "u"), "c".into(), 1, Some(1), 7);
        assert_eq!(cut, Ok(TruncateOutcome { removed: 3, version: 2 }));
        let info = conv::info(&db, scope("t", "u"), "c".into()).expect("info");
        assert_eq!((info.last_seq, info.message_count, info.version, info.updated_at), (1, 1, 2, 7));
        let late = conv::append(&db, scope("t", "u"), "c".into(), batch(&["e"], 5), None, 8);
        assert_eq!(late, Ok(AppendOutcome::OutOfSequence(1)));
        let next = conv::append(&db, scope("t", "u"), "c".into(), batch(&["b"], 2), None, 8);
        assert_eq!(next, Ok(AppendOutcome::Stored(3)));
        assert_eq!(seqs(&load_all(&db, "t", "c")), vec![1, 2]);
    });
}

#[test]
fn delete_removes_one_conversation_and_reports_whether_it_existed() {
    each_backend(|f| {
        let sql = opened(f);
        let db = Db::new(&*sql);
        conv::open(&db, scope("t", "other"), "c".into(), meta(b"o"), 5).expect("open");
        for user in ["u", "other"] {
            conv::append(&db, scope("t", user), "c".into(), batch(&["a", "b"], 1), None, 6).expect("append");
        }
        assert_eq!(conv::delete(&db, scope("t", "u"), "c".into()), Ok(true));
        assert_eq!(conv::info(&db, scope("t", "u"), "c".into()), Err(Error::NotFound));
        assert_eq!(conv::delete(&db, scope("t", "u"), "c".into()), Ok(false));
        assert_eq!(
            seqs(&reads::load(&db, scope("t", "other"), "c".into(), MessageRange::Latest, 9).expect("load")),
            vec![1, 2]
        );
        // Re-created, it starts empty, and its old ids are new again.
        conv::open(&db, scope("t", "u"), "c".into(), meta(b"n"), 9).expect("open");
        let fresh = conv::append(&db, scope("t", "u"), "c".into(), vec![message("a", 1)], None, 10);
        assert_eq!(fresh, Ok(AppendOutcome::Stored(1)));
    });
}

#[test]
fn list_orders_ids_byte_wise_within_exactly_one_scope() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let ids = ["b", "B", "a", "é", "Z", "ä", "a b", "aa"];
        for id in ids {
            conv::open(&db, scope("t", "u"), id.into(), meta(id.as_bytes()), 1).expect("open");
        }
        conv::open(&db, scope("t", "u2"), "0".into(), meta(b""), 1).expect("open");
        let mut expected: Vec<&str> = ids.to_vec();
        expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        let listed = |after: Option<&str>, limit| -> Vec<String> {
            reads::list(&db, scope("t", "u"), after.map(str::to_owned), limit)
                .expect("list")
                .into_iter()
                .map(|info| info.id)
                .collect()
        };
        assert_eq!(listed(None, 100), expected);
        assert_eq!(listed(Some("a"), 2), expected[3..5].to_vec());
        assert_eq!(listed(Some("Z"), 100), expected[2..].to_vec());
        assert!(listed(Some("é"), 100).is_empty());
        assert!(listed(None, 0).is_empty());
    });
}

//! `display-store` against both engines.

use super::{each_backend, meta, record, scope};
use crate::conversations as conv;
use crate::db::{Db, Dialect};
use crate::display;
use crate::exports::stowage::store::display_store::{
    DisplayPosition, InsertOutcome, LocatedDisplayRecord, StoredDisplayRecord,
};
use crate::model::SEQ_LIMIT;
use crate::stowage::store::types::Error;

fn seqs(records: &[StoredDisplayRecord]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

fn list(db: &Db, user: &str, id: &str) -> Vec<StoredDisplayRecord> {
    display::list(db, scope("t", user), id.into(), 0, 1000).expect("list")
}

#[test]
fn records_are_stored_at_their_seqs_and_read_back_verbatim() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let mut records = vec![record(1, None, None), record(2, Some("call"), Some("pending")), record(3, None, None)];
        records[2].record.message_id = None;
        records[2].record.tag = Vec::new();
        assert_eq!(display::insert(&db, scope("t", "u"), "c".into(), records.clone()), Ok(InsertOutcome::Stored));
        assert_eq!(list(&db, "u", "c"), records);
        let page = display::list(&db, scope("t", "u"), "c".into(), 1, 1).expect("list");
        assert_eq!(page, records[1..2].to_vec());
        assert!(display::list(&db, scope("t", "u"), "c".into(), u64::MAX, 9).expect("list").is_empty());
        assert!(list(&db, "other", "c").is_empty());
    });
}

/// A SQLite database made new has no display tables until its first display
/// insert; until then every display call answers as the empty tables would.
#[test]
fn display_calls_before_a_new_database_s_display_tables_exist_answer_as_empty_tables_would() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let tables = || crate::display_tables::present(&Db::new(&*sql)).expect("looked for them");
        let sqlite = db.dialect() == Dialect::Sqlite;
        assert_eq!(tables(), !sqlite, "made with the schema on PostgreSQL only");
        assert!(list(&db, "u", "c").is_empty());
        let by_call = display::by_tool_call_id(&db, scope("t", "u"), "c".into(), "call".into());
        assert_eq!(by_call, Ok(Vec::new()));
        let by_status = display::find_by_status(&db, vec!["pending".into()], None, 10);
        assert_eq!(by_status, Ok(Vec::new()));
        let update = display::update(&db, scope("t", "u"), "c".into(), record(1, None, None));
        assert_eq!(update, Err(Error::NotFound));
        conv::open(&db, scope("t", "u"), "c".into(), meta(b"m"), 1).expect("open");
        assert_eq!(conv::delete(&db, scope("t", "u"), "c".into()), Ok(true));
        assert_eq!(tables(), !sqlite, "no call above made them");
        let first = vec![record(1, Some("call"), Some("pending"))];
        assert_eq!(display::insert(&db, scope("t", "u"), "c".into(), first.clone()), Ok(InsertOutcome::Stored));
        assert!(tables(), "the first insert made them");
        assert_eq!(list(&db, "u", "c"), first);
        assert_eq!(display::by_tool_call_id(&db, scope("t", "u"), "c".into(), "call".into()), Ok(first));
        // Another instance that looked before sees them now.
        assert!(crate::display_tables::present(&db).expect("looked again"));
    });
}

#[test]
fn an_insert_that_does_not_follow_the_last_record_is_out_of_sequence() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let first_at_two = display::insert(&db, scope("t", "u"), "c".into(), vec![record(2, None, None)]);
        assert_eq!(first_at_two, Ok(InsertOutcome::OutOfSequence(0)));
        let three = vec![record(1, None, None), record(2, None, None), record(3, None, None)];
        assert_eq!(display::insert(&db, scope("t", "u"), "c".into(), three), Ok(InsertOutcome::Stored));
        for first in [1, 3, 5] {
            let late = display::insert(&db, scope("t", "u"), "c".into(), vec![record(first, None, None)]);
            assert_eq!(late, Ok(InsertOutcome::OutOfSequence(3)));
        }
        let mut gap = vec![record(4, None, None), record(6, None, None)];
        assert!(matches!(display::insert(&db, scope("t", "u"), "c".into(), gap.clone()), Err(Error::InvalidInput(_))));
        gap[1].seq = 5;
        assert_eq!(display::insert(&db, scope("t", "u"), "c".into(), gap), Ok(InsertOutcome::Stored));
        assert_eq!(seqs(&list(&db, "u", "c")), vec![1, 2, 3, 4, 5]);
        assert_eq!(display::insert(&db, scope("t", "u"), "c".into(), vec![]), Ok(InsertOutcome::Stored));
    });
}

#[test]
fn update_overwrites_by_seq_and_reports_a_missing_record() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let records = vec![record(1, Some("call"), Some("pending")), record(2, None, None)];
        display::insert(&db, scope("t", "u"), "c".into(), records.clone()).expect("insert");
        let mut changed = record(1, Some("call"), Some("completed"));
        changed.record.body = b"new body".to_vec();
        changed.record.tag = vec![1, 2, 3];
        changed.record.message_id = None;
        assert_eq!(display::update(&db, scope("t", "u"), "c".into(), changed.clone()), Ok(()));
        assert_eq!(list(&db, "u", "c"), vec![changed.clone(), records[1].clone()]);
        for seq in [0, 3, SEQ_LIMIT, u64::MAX] {
            let mut missing = changed.clone();
            missing.seq = seq;
            assert_eq!(display::update(&db, scope("t", "u"), "c".into(), missing), Err(Error::NotFound), "seq {seq}");
        }
        assert_eq!(display::update(&db, scope("t", "x"), "c".into(), changed.clone()), Err(Error::NotFound));
        assert_eq!(display::update(&db, scope("t", "u"), "d".into(), changed), Err(Error::NotFound));
    });
}

#[test]
fn by_tool_call_id_returns_that_call_s_records_in_seq_order() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let records = vec![
            record(1, Some("a"), Some("pending")),
            record(2, Some("b"), Some("pending")),
            record(3, Some("a"), None),
            record(4, None, None),
        ];
        display::insert(&db, scope("t", "u"), "c".into(), records.clone()).expect("insert");
        display::insert(&db, scope("t", "u"), "other".into(), vec![record(1, Some("a"), None)]).expect("insert");
        let found = display::by_tool_call_id(&db, scope("t", "u"), "c".into(), "a".into()).expect("by id");
        assert_eq!(found, vec![records[0].clone(), records[2].clone()]);
        assert!(display::by_tool_call_id(&db, scope("t", "u"), "c".into(), "z".into()).expect("by id").is_empty());
        assert!(display::by_tool_call_id(&db, scope("x", "u"), "c".into(), "a".into()).expect("by id").is_empty());
    });
}

#[test]
fn find_by_status_pages_across_scopes_in_byte_order_strictly_after_the_position() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        // Inserted out of order; "Z" < "a" < "é" byte-wise.
        let places = [("é", "u", "c"), ("a", "u", "c"), ("Z", "u", "c"), ("a", "u", "B"), ("a", "U", "c")];
        for (tenant, user, id) in places {
            let records = vec![
                record(1, Some("1"), Some("pending")),
                record(2, Some("2"), Some("completed")),
                record(3, Some("3"), Some("executing")),
                record(4, None, None),
            ];
            display::insert(&db, scope(tenant, user), id.into(), records).expect("insert");
        }
        let statuses = vec!["executing".to_owned(), "pending".to_owned()];
        let mut all: Vec<LocatedDisplayRecord> = Vec::new();
        let mut after: Option<DisplayPosition> = None;
        loop {
            let page = display::find_by_status(&db, statuses.clone(), after.clone(), 3).expect("find");
            assert!(page.len() <= 3);
            let Some(last) = page.last() else { break };
            after = Some(DisplayPosition {
                scope: last.scope.clone(),
                conversation_id: last.conversation_id.clone(),
                seq: last.stored.seq,
            });
            all.extend(page);
        }
        let got: Vec<(String, String, String, u64)> = all
            .iter()
            .map(|r| (r.scope.tenant.clone(), r.scope.user.clone(), r.conversation_id.clone(), r.stored.seq))
            .collect();
        let mut expected = Vec::new();
        let mut sorted = places.to_vec();
        sorted.sort_by(|a, b| {
            (a.0.as_bytes(), a.1.as_bytes(), a.2.as_bytes()).cmp(&(b.0.as_bytes(), b.1.as_bytes(), b.2.as_bytes()))
        });
        for (tenant, user, id) in sorted {
            for seq in [1, 3] {
                expected.push((tenant.to_owned(), user.to_owned(), id.to_owned(), seq));
            }
        }
        assert_eq!(got, expected);
        assert_eq!(all[0].stored, record(1, Some("1"), Some("pending")));
        // A position past the end of a conversation moves on to the next one.
        let past = DisplayPosition { scope: scope("a", "U"), conversation_id: "c".into(), seq: u64::MAX };
        let next = display::find_by_status(&db, statuses.clone(), Some(past), 1).expect("find");
        assert_eq!((next[0].scope.clone(), next[0].conversation_id.as_str()), (scope("a", "u"), "B"));
        assert!(display::find_by_status(&db, vec![], None, 10).expect("find").is_empty());
        assert!(display::find_by_status(&db, statuses, None, 0).expect("find").is_empty());
    });
}

#[test]
fn deleting_a_conversation_removes_its_display_records_even_without_history() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        display::insert(&db, scope("t", "u"), "only-display".into(), vec![record(1, None, None)]).expect("insert");
        display::insert(&db, scope("t", "v"), "only-display".into(), vec![record(1, None, None)]).expect("insert");
        conv::open(&db, scope("t", "u"), "both".into(), meta(b""), 1).expect("open");
        display::insert(&db, scope("t", "u"), "both".into(), vec![record(1, Some("x"), Some("pending"))])
            .expect("insert");
        assert_eq!(conv::delete(&db, scope("t", "u"), "only-display".into()), Ok(true));
        assert_eq!(conv::delete(&db, scope("t", "u"), "both".into()), Ok(true));
        assert!(list(&db, "u", "only-display").is_empty());
        assert!(list(&db, "u", "both").is_empty());
        assert_eq!(seqs(&list(&db, "v", "only-display")), vec![1]);
        assert!(display::find_by_status(&db, vec!["pending".into()], None, 9).expect("find").is_empty());
        // The conversation starts over at display seq 1.
        let again = display::insert(&db, scope("t", "u"), "both".into(), vec![record(1, None, None)]);
        assert_eq!(again, Ok(InsertOutcome::Stored));
    });
}

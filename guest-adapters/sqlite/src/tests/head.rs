//! The conversation's head (version, last seq, `updated-at`) after every order
//! of writes, on both engines — on SQLite an append keeps it in its last message
//! ([`crate::head`]) — and on a database written before migration 3.

use super::{Fixture, batch, each_backend, meta, scope};
use crate::conversations as conv;
use crate::db::Db;
use crate::exports::stowage::store::conversation_store::{AppendOutcome, MessageRange, TruncateOutcome};
use crate::migrate;
use crate::reads;
use crate::stowage::store::sql::Value;
use crate::stowage::store::types::{Conflict, Error};

/// (version, last seq, message count, updated-at) of conversation (t, u, id).
fn head(db: &Db, id: &str) -> (u64, u64, u64, i64) {
    let info = conv::info(db, scope("t", "u"), id.into()).expect("info");
    (info.version, info.last_seq, info.message_count, info.updated_at)
}

fn listed(db: &Db) -> Vec<(String, u64, u64, i64)> {
    let all = reads::list(db, scope("t", "u"), None, 100).expect("list");
    all.into_iter().map(|i| (i.id, i.version, i.last_seq, i.updated_at)).collect()
}

#[test]
fn every_order_of_writes_reads_back_the_last_head() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        let (s, c) = (|| scope("t", "u"), || "c".to_owned());
        conv::open(&db, s(), c(), meta(b"m"), 5).expect("open");
        assert_eq!(head(&db, "c"), (0, 0, 0, 5));
        assert_eq!(conv::append(&db, s(), c(), batch(&["a", "b"], 1), Some(0), 6), Ok(AppendOutcome::Stored(1)));
        assert_eq!(head(&db, "c"), (1, 2, 2, 6));
        assert_eq!(conv::append(&db, s(), c(), batch(&["c"], 3), Some(1), 7), Ok(AppendOutcome::Stored(2)));
        assert_eq!(head(&db, "c"), (2, 3, 3, 7));
        // A stale expectation is checked against the head the append left.
        let stale = conv::append(&db, s(), c(), batch(&["d"], 4), Some(1), 8);
        assert_eq!(stale, Err(Error::Conflict(Conflict { expected_version: 1, actual_version: 2 })));
        // Truncate and replace write the row, whose version passes the message's.
        let cut = conv::truncate_after(&db, s(), c(), 1, Some(2), 9);
        assert_eq!(cut, Ok(TruncateOutcome { removed: 2, version: 3 }));
        assert_eq!(head(&db, "c"), (3, 1, 1, 9));
        assert_eq!(conv::append(&db, s(), c(), batch(&["e"], 2), Some(3), 10), Ok(AppendOutcome::Stored(4)));
        assert_eq!(head(&db, "c"), (4, 2, 2, 10));
        assert_eq!(conv::replace(&db, s(), c(), batch(&["x", "y", "z"], 1), Some(4), 11), Ok(5));
        assert_eq!(head(&db, "c"), (5, 3, 3, 11));
        // Meta changes leave the head alone.
        conv::update_meta(&db, s(), c(), meta(b"n")).expect("meta");
        assert_eq!(head(&db, "c"), (5, 3, 3, 11));
        assert_eq!(conv::append(&db, s(), c(), batch(&["w"], 4), Some(5), 12), Ok(AppendOutcome::Stored(6)));
        // Cutting nothing changes nothing; cutting everything leaves no message to carry a head.
        let nothing = conv::truncate_after(&db, s(), c(), 4, None, 13);
        assert_eq!(nothing, Ok(TruncateOutcome { removed: 0, version: 6 }));
        assert_eq!(head(&db, "c"), (6, 4, 4, 12));
        let all = conv::truncate_after(&db, s(), c(), 0, Some(6), 14);
        assert_eq!(all, Ok(TruncateOutcome { removed: 4, version: 7 }));
        assert_eq!(head(&db, "c"), (7, 0, 0, 14));
        assert_eq!(conv::append(&db, s(), c(), batch(&["v"], 1), Some(7), 15), Ok(AppendOutcome::Stored(8)));
        assert_eq!(head(&db, "c"), (8, 1, 1, 15));
        // A retry of an acknowledged append answers with the current version.
        let retry = conv::append(&db, s(), c(), batch(&["v"], 2), None, 16);
        assert!(matches!(retry, Ok(AppendOutcome::AlreadyStored(ref a)) if a.version == 8), "{retry:?}");
        let loaded = reads::load(&db, s(), c(), MessageRange::Latest, 10).expect("load");
        assert_eq!(loaded.iter().map(|m| m.message.id.as_str()).collect::<Vec<_>>(), vec!["v"]);
    });
}

#[test]
fn listing_reads_each_conversations_own_head() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        for (id, at) in [("a", 1), ("b", 2), ("c", 3)] {
            conv::open(&db, scope("t", "u"), id.into(), meta(b"m"), at).expect("open");
        }
        conv::append(&db, scope("t", "u"), "a".into(), batch(&["1", "2"], 1), None, 20).expect("append");
        conv::append(&db, scope("t", "u"), "a".into(), batch(&["3"], 3), None, 21).expect("append");
        conv::append(&db, scope("t", "u"), "c".into(), batch(&["1"], 1), None, 30).expect("append");
        conv::truncate_after(&db, scope("t", "u"), "c".into(), 0, None, 31).expect("truncate");
        let expected = vec![("a".into(), 2, 3, 21), ("b".into(), 0, 0, 2), ("c".into(), 2, 0, 31)];
        assert_eq!(listed(&db), expected);
    });
}

#[test]
fn a_database_written_before_heads_moved_keeps_its_heads() {
    let f = Fixture::sqlite();
    let sql = f.migrated();
    let db = Db::new(&*sql);
    conv::open(&db, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    conv::append(&db, scope("t", "u"), "c".into(), batch(&["a", "b"], 1), None, 6).expect("append");
    // Back to schema version 2: the row is the head, messages have no head columns.
    let exec = |statement: &str| sql.execute(statement, &[]).expect(statement);
    exec("UPDATE stowage_conversations SET version = 9, last_seq = 2, updated_at = 7");
    exec("ALTER TABLE stowage_messages DROP COLUMN head_version");
    exec("ALTER TABLE stowage_messages DROP COLUMN head_updated_at");
    exec("DELETE FROM stowage_migrations WHERE version >= 3");
    drop(sql);

    let sql = f.connect();
    let db = Db::new(&*sql);
    migrate::run(&db).expect("migration 3 applies");
    let columns = sql.query("SELECT count(*) FROM pragma_table_info('stowage_messages') WHERE name LIKE 'head_%'", &[]);
    assert_eq!(columns.expect("table info"), vec![vec![Value::Integer(2)]]);
    assert_eq!(head(&db, "c"), (9, 2, 2, 7));
    let next = conv::append(&db, scope("t", "u"), "c".into(), batch(&["c"], 3), Some(9), 8);
    assert_eq!(next, Ok(AppendOutcome::Stored(10)));
    assert_eq!(head(&db, "c"), (10, 3, 3, 8));
}

#[test]
fn a_sqlite_append_writes_its_head_into_its_last_message_not_the_row() {
    let f = Fixture::sqlite();
    let sql = f.migrated();
    let db = Db::new(&*sql);
    conv::open(&db, scope("t", "u"), "c".into(), meta(b"m"), 5).expect("open");
    conv::append(&db, scope("t", "u"), "c".into(), batch(&["a", "b"], 1), None, 6).expect("append");
    let int = Value::Integer;
    let row = sql.query("SELECT version, last_seq, updated_at FROM stowage_conversations", &[]);
    assert_eq!(row.expect("row"), vec![vec![int(0), int(0), int(5)]]);
    let carried =
        sql.query("SELECT pos & 4294967295, head_version, head_updated_at FROM stowage_messages ORDER BY pos", &[]);
    let expected = vec![vec![int(1), Value::Null, Value::Null], vec![int(2), int(1), int(6)]];
    assert_eq!(carried.expect("messages"), expected);
}

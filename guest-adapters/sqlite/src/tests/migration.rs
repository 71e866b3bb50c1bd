//! Migrations: applied once (also when several hosts start at once), refused for a
//! newer database, and a 0.1.0 database imported in place without losing a row.

use std::sync::{Arc, Barrier};

use super::{Fixture, Sqlite, each_backend, scope};
use crate::conversations as conv;
use crate::db::{Db, Sql};
use crate::display;
use crate::exports::stowage::store::conversation_store::{AlreadyStored, AppendOutcome, IndexedSeq, MessageRange};
use crate::migrate::{self, LATEST};
use crate::reads;
use crate::stowage::store::types::{Error, Role};

/// The schema of the 0.1.0 adapter, as its `schema.rs` created it.
const V1_SCHEMA: &str = "
    CREATE TABLE conversations (
        cid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, user TEXT NOT NULL, id TEXT NOT NULL,
        meta TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0, UNIQUE (tenant, user, id));
    CREATE TABLE messages (
        cid INTEGER NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (cid, seq), UNIQUE (cid, id)) WITHOUT ROWID;
    CREATE TABLE display_records (
        tenant TEXT NOT NULL, user TEXT NOT NULL, conversation_id TEXT NOT NULL, seq INTEGER NOT NULL,
        tool_call_id TEXT, status TEXT, body BLOB NOT NULL,
        PRIMARY KEY (tenant, user, conversation_id, seq)) WITHOUT ROWID;
    CREATE INDEX display_tool_calls ON display_records (tenant, user, conversation_id, tool_call_id);
    CREATE INDEX display_status ON display_records (status) WHERE status IS NOT NULL;
    PRAGMA user_version = 1;";

/// A 0.1.0 message row body, as serde's derive wrote it.
fn v1_message(id: &str, text: &str) -> String {
    format!(
        r#"{{"id":"{id}","role":"User","parts":[{{"Text":"{text}"}}],"usage":null,"stop_reason":null,"created_at":7,"metadata":"{{\"n\": 1}}"}}"#
    )
}

fn applied(sql: &dyn Sql) -> Vec<i64> {
    let db = Db::new(sql);
    let rows = db.query("test", "SELECT version FROM stowage_migrations ORDER BY version", &[]);
    let mut rows = rows.unwrap_or_else(|_| panic!("the migrations table is readable"));
    rows.iter_mut().map(|r| r.int(0).unwrap_or(-1)).collect()
}

fn user_version(sql: &dyn Sql) -> i64 {
    let db = Db::new(sql);
    let mut rows = db.query("test", "PRAGMA user_version", &[]).unwrap_or_else(|_| panic!("readable"));
    rows[0].int(0).unwrap_or(-1)
}

#[test]
fn migrations_apply_once_and_a_second_run_changes_nothing() {
    each_backend(|f| {
        let sql = f.migrated();
        migrate::run(&Db::new(&*sql)).expect("runs again");
        assert_eq!(applied(&*sql), (1..=LATEST).collect::<Vec<_>>());
        if f.sqlite_path().is_some() {
            assert_eq!(user_version(&*sql), 2);
        }
    });
}

#[test]
fn a_fresh_database_gets_its_whole_schema_in_one_transaction() {
    each_backend(|f| {
        let sql = f.connect();
        // One committed step applies every migration (the first write of a new
        // store pays one flush for its schema, not one per migration).
        assert_eq!(migrate::step_once(&Db::new(&*sql)), Ok(true));
        assert_eq!(applied(&*sql), (1..=LATEST).collect::<Vec<_>>());
    });
}

/// Every table's columns and every index of a SQLite database, as SQLite
/// describes them (a table's text differs: ALTER TABLE appends to it).
fn layout(sql: &dyn Sql) -> Vec<String> {
    let db = Db::new(sql);
    let objects = "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master \
                   WHERE name NOT LIKE 'sqlite_%' ORDER BY name";
    let mut out = Vec::new();
    for mut object in db.query("test", objects, &[]).expect("the schema is readable") {
        let [kind, name, table, text] = [0, 1, 2, 3].map(|i| object.text(i).expect("text"));
        match kind.as_str() {
            "table" => {
                out.push(format!("table {name}"));
                let columns = format!("PRAGMA table_info({name})");
                for mut column in db.query("test", &columns, &[]).expect("columns") {
                    let (column_name, kind) = (column.text(1).expect("name"), column.text(2).expect("type"));
                    let (not_null, key) = (column.int(3).expect("notnull"), column.int(5).expect("pk"));
                    out.push(format!("  {column_name} {kind} not-null={not_null} key={key}"));
                }
            }
            _ => out.push(format!("{kind} {name} on {table}: {text}")),
        }
    }
    out
}

#[test]
fn a_fresh_sqlite_database_is_laid_out_as_one_migrated_step_by_step() {
    let fresh = Fixture::sqlite();
    let sql = fresh.connect();
    assert_eq!(migrate::step_once(&Db::new(&*sql)), Ok(true));
    assert_eq!(applied(&*sql), (1..=LATEST).collect::<Vec<_>>());
    assert_eq!(user_version(&*sql), 2);
    let before_display = layout(&*sql);
    assert!(before_display.iter().all(|line| !line.contains("display")), "{before_display:?}");
    // Made by the first display insert ([`crate::display_tables`]).
    let db = Db::new(&*sql);
    db.write("test", || crate::display_tables::ensure(&db)).expect("the display tables made");
    // The same database, migration by migration (the path of a database made
    // before migration 3, or by the 0.1.0 adapter).
    let stepped = Fixture::sqlite();
    let stepped_sql = stepped.connect();
    let db = Db::new(&*stepped_sql);
    let t = crate::dialect::text(db.dialect());
    db.write("test", || {
        db.execute("test", t.migrations_table, &[])?;
        for version in 1..=LATEST {
            assert_eq!(migrate::step(&db, version)?, crate::legacy_import::Progress::Done);
            db.execute("test", t.migrations_record, &[crate::db::int(version)])?;
        }
        Ok(())
    })
    .expect("migrations applied one by one");
    assert_eq!(layout(&*sql), layout(&*stepped_sql));
    assert!(layout(&*sql).iter().any(|line| line.contains("head_updated_at")), "{:?}", layout(&*sql));
}

#[test]
fn hosts_starting_at_once_migrate_exactly_once() {
    each_backend(|f| {
        let hosts = 6;
        let barrier = Arc::new(Barrier::new(hosts));
        std::thread::scope(|s| {
            for _ in 0..hosts {
                let (sql, barrier) = (f.connect(), barrier.clone());
                s.spawn(move || {
                    barrier.wait();
                    migrate::run(&Db::new(&*sql)).expect("every host gets a migrated database");
                });
            }
        });
        let sql = f.connect();
        assert_eq!(applied(&*sql), (1..=LATEST).collect::<Vec<_>>());
    });
}

#[test]
fn a_database_from_a_newer_adapter_is_refused() {
    each_backend(|f| {
        let sql = f.migrated();
        let db = Db::new(&*sql);
        db.execute("test", "INSERT INTO stowage_migrations (version, applied_at) VALUES (99, 0)", &[])
            .unwrap_or_else(|_| panic!("insert"));
        let refused = migrate::run(&Db::new(&*f.connect()));
        assert!(matches!(&refused, Err(Error::Storage(m)) if m.contains("newer than this adapter")), "{refused:?}");
    });
}

#[test]
fn an_unknown_user_version_is_refused() {
    let f = Fixture::sqlite();
    let sql = Sqlite::open(&f.sqlite_path().expect("sqlite"));
    sql.raw("PRAGMA user_version = 7");
    let refused = migrate::run(&Db::new(&sql));
    assert!(matches!(&refused, Err(Error::Storage(m)) if m.contains("user_version 7")), "{refused:?}");
}

/// A 0.1.0 database with two conversations (one in another scope), messages and
/// display records, in `f`'s SQLite file.
fn v1_database(f: &Fixture) -> Sqlite {
    let sql = Sqlite::open(&f.sqlite_path().expect("sqlite"));
    sql.raw(V1_SCHEMA);
    sql.raw(
        r#"
        INSERT INTO conversations VALUES
            (3, 't', 'u', 'c', '{"agent_id":"agent","title":null,"metadata":"{ \"k\" : 1 }"}', 10, 20, 4, 2, 2),
            (8, 't', 'other', 'c', '{"agent_id":null,"title":null,"metadata":null}', 11, 21, 1, 1, 1);
    "#,
    );
    for (cid, seq, id) in [(3, 1, "m1"), (3, 2, "m2"), (8, 1, "o1")] {
        let body = v1_message(id, &format!("text {id}")).replace('\'', "''");
        sql.raw(&format!("INSERT INTO messages VALUES ({cid}, {seq}, '{id}', '{body}')"));
    }
    let card = r#"{"message_id":"m2","message_type":"assistant","content_type":"tool_call","tool_call_id":"call_1","status":"executing","content":"{\"name\":\"f\"}","metadata":null,"created_at":1,"updated_at":2}"#;
    let note = r#"{"message_id":null,"message_type":"user","content_type":"text","tool_call_id":null,"status":null,"content":"\"hi\"","metadata":"{}","created_at":3,"updated_at":4}"#;
    sql.raw(&format!(
        "INSERT INTO display_records VALUES
            ('t', 'u', 'c', 1, 'call_1', 'executing', CAST('{card}' AS BLOB)),
            ('t', 'u', 'c', 2, NULL, NULL, CAST('{note}' AS BLOB)),
            ('t', 'u', 'display-only', 1, NULL, NULL, CAST('{note}' AS BLOB));"
    ));
    sql
}

#[test]
fn a_0_1_0_database_is_imported_in_place() {
    let f = Fixture::sqlite();
    let sql = v1_database(&f);
    let db = Db::new(&sql);
    migrate::run(&db).expect("migrates");
    assert_eq!(user_version(&sql), 2);
    assert_eq!(applied(&sql), (1..=LATEST).collect::<Vec<_>>());
    let legacy = db.query("test", "SELECT name FROM sqlite_master WHERE name LIKE 'stowage_legacy%' OR name IN ('messages', 'conversations', 'display_records')", &[]);
    assert!(legacy.map(|rows| rows.is_empty()).unwrap_or(false), "0.1.0 tables are gone");

    let info = conv::info(&db, scope("t", "u"), "c".into()).expect("info");
    assert_eq!(info.meta.content, b"\x01{\"agent_id\":\"agent\",\"metadata\":{ \"k\" : 1 }}".to_vec());
    assert!(info.meta.tag.is_empty());
    assert_eq!((info.created_at, info.updated_at, info.version, info.last_seq, info.message_count), (10, 20, 4, 2, 2));

    let messages = reads::load(&db, scope("t", "u"), "c".into(), MessageRange::Latest, 10).expect("load");
    assert_eq!(messages.len(), 2);
    let first = &messages[0];
    assert_eq!(
        (first.seq, first.message.id.as_str(), first.message.role, first.message.created_at),
        (1, "m1", Role::User, 7)
    );
    assert_eq!(
        first.message.content,
        b"\x01{\"parts\":[{\"type\":\"text\",\"text\":\"text m1\"}],\"metadata\":{\"n\": 1}}".to_vec()
    );
    assert!(first.message.tag.is_empty());
    let other = reads::load(&db, scope("t", "other"), "c".into(), MessageRange::Latest, 10).expect("load");
    assert_eq!(other.len(), 1);

    let records = display::list(&db, scope("t", "u"), "c".into(), 0, 10).expect("list");
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].record.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(records[0].record.status.as_deref(), Some("executing"));
    assert_eq!(records[0].record.body, b"\x01{\"content\":{\"name\":\"f\"}}".to_vec());
    assert_eq!(records[1].record.body, b"\x01{\"content\":\"hi\",\"metadata\":{}}".to_vec());
    assert_eq!((records[1].record.created_at, records[1].record.updated_at), (3, 4));
    let swept = display::find_by_status(&db, vec!["executing".into()], None, 10).expect("find");
    assert_eq!(swept.len(), 1);
    assert_eq!(display::list(&db, scope("t", "u"), "display-only".into(), 0, 10).expect("list").len(), 1);

    // The imported history goes on as before: ids are known, seqs and versions continue.
    let retry = conv::append(&db, scope("t", "u"), "c".into(), super::batch(&["m2"], 3), None, 30);
    let listed = vec![IndexedSeq { index: 0, seq: 2 }];
    assert_eq!(retry, Ok(AppendOutcome::AlreadyStored(AlreadyStored { seqs: listed, version: 4 })));
    let next = conv::append(&db, scope("t", "u"), "c".into(), super::batch(&["m3"], 3), Some(4), 30);
    assert_eq!(next, Ok(AppendOutcome::Stored(5)));
    let more = display::insert(&db, scope("t", "u"), "c".into(), vec![super::record(3, None, None)]);
    assert_eq!(more, Ok(crate::exports::stowage::store::display_store::InsertOutcome::Stored));
}

#[test]
fn a_large_0_1_0_database_is_imported_in_chunks_that_each_commit() {
    let f = Fixture::sqlite();
    let sql = v1_database(&f);
    for seq in 3..=700 {
        let body = v1_message(&format!("m{seq}"), &"x".repeat(1000));
        sql.raw(&format!("INSERT INTO messages VALUES (3, {seq}, 'm{seq}', '{body}')"));
    }
    sql.raw("UPDATE conversations SET last_seq = 700, message_count = 700 WHERE cid = 3");
    // Two steps of the migration, as if the call had been cut short after them.
    let db = Db::new(&sql);
    for _ in 0..3 {
        assert_eq!(migrate::step_once(&db), Ok(false));
    }
    let moved = db.query("test", "SELECT COUNT(*) FROM stowage_messages", &[]);
    let moved = moved.unwrap_or_else(|_| panic!("count"))[0].int(0).unwrap_or(-1);
    assert!(moved > 0 && moved < 701, "{moved} messages moved so far");
    // A fresh instance finishes the job.
    let next = Sqlite::open(&f.sqlite_path().expect("sqlite"));
    migrate::run(&Db::new(&next)).expect("finishes");
    let all = reads::load(&Db::new(&next), scope("t", "u"), "c".into(), MessageRange::After(0), 1000).expect("load");
    assert_eq!(all.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=700).collect::<Vec<_>>());
}

#[test]
fn chunks_shrink_to_fit_the_host_s_result_cap_and_an_oversized_row_is_reported() {
    let f = Fixture::sqlite();
    let mut sql = v1_database(&f);
    for seq in 3..=40 {
        let body = v1_message(&format!("m{seq}"), &"y".repeat(1500));
        sql.raw(&format!("INSERT INTO messages VALUES (3, {seq}, 'm{seq}', '{body}')"));
    }
    sql.raw("UPDATE conversations SET last_seq = 40 WHERE cid = 3");
    sql.cap = Some(6_000);
    migrate::run(&Db::new(&sql)).expect("migrates in small chunks");
    sql.cap = None;
    let all = reads::load(&Db::new(&sql), scope("t", "u"), "c".into(), MessageRange::After(0), 100).expect("load");
    assert_eq!(all.len(), 40);

    let f = Fixture::sqlite();
    let mut sql = v1_database(&f);
    let huge = v1_message("big", &"z".repeat(10_000));
    sql.raw(&format!("INSERT INTO messages VALUES (8, 2, 'big', '{huge}')"));
    sql.cap = Some(6_000);
    let refused = migrate::run(&Db::new(&sql));
    assert!(matches!(&refused, Err(Error::Storage(m)) if m.contains("exceeds")), "{refused:?}");
    sql.cap = None;
    let left = Db::new(&sql).query("test", "SELECT COUNT(*) FROM stowage_legacy_messages WHERE id = 'big'", &[]);
    assert_eq!(left.unwrap_or_else(|_| panic!("count"))[0].int(0).ok(), Some(1), "nothing is lost");
}

#[test]
fn an_undecodable_0_1_0_record_stops_the_import_and_names_it() {
    let f = Fixture::sqlite();
    let sql = v1_database(&f);
    sql.raw("INSERT INTO messages VALUES (8, 2, 'bad', '{\"not\":\"a message\"}')");
    let refused = migrate::run(&Db::new(&sql));
    assert!(
        matches!(&refused, Err(Error::Storage(m)) if m.contains("message seq 2 of conversation cid 8")),
        "{refused:?}"
    );
}

#[test]
fn every_postgres_text_column_compares_byte_wise() {
    let Some(f) = Fixture::postgres() else { return };
    let sql = f.migrated();
    let db = Db::new(&*sql);
    let other = db.query(
        "test",
        "SELECT table_name || '.' || column_name FROM information_schema.columns \
         WHERE table_schema = current_schema() AND data_type = 'text' \
         AND collation_name IS DISTINCT FROM 'C'",
        &[],
    );
    let mut other = other.unwrap_or_else(|_| panic!("information_schema is readable"));
    let names: Vec<String> = other.iter_mut().filter_map(|row| row.text(0).ok()).collect();
    assert!(names.is_empty(), "text columns without COLLATE \"C\": {names:?}");
    let count = db.query(
        "test",
        "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND data_type = 'text'",
        &[],
    );
    assert_eq!(count.unwrap_or_else(|_| panic!("count"))[0].int(0).ok(), Some(12));
}

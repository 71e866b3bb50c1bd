//! SQLite query plans of the hot statements: every message and display range is
//! a rowid range or an index lookup — no full scan, no sort.

use rusqlite::{Connection, StatementStatus};

use super::Fixture;
use crate::append_plan;
use crate::db::{Db, Dialect};
use crate::dialect::{self, display_by_status, messages_by_id};
use crate::migrate;

fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("the statement prepares");
    let nulls = std::iter::repeat_n(rusqlite::types::Null, stmt.parameter_count());
    let rows = stmt.query_map(rusqlite::params_from_iter(nulls), |row| row.get::<_, String>(3)).expect("plan rows");
    rows.collect::<Result<_, _>>().expect("plan rows read")
}

/// The statements every call runs, as the adapter sends them.
fn hot() -> Vec<String> {
    let t = dialect::text(Dialect::Sqlite);
    let mut hot: Vec<String> = [
        t.conversation_key,
        t.conversation_key_for_write,
        t.conversation_info,
        t.conversation_update,
        t.conversations_first,
        t.conversations_after,
        crate::head::INSERT_WITH_HEAD,
        crate::fast_append::GUARDED_INSERT,
        t.messages_latest,
        t.messages_after,
        t.messages_before,
        t.messages_delete_all,
        t.messages_delete_after,
        t.stream_key,
        t.display_last_seq,
        t.display_update,
        t.display_delete_all,
        t.display_by_tool_call,
        t.display_list,
        dialect::PLAN_LATEST,
        dialect::PLAN_AFTER,
        dialect::PLAN_BEFORE,
        append_plan::FIRST,
        append_plan::MIDDLE,
        append_plan::LAST,
    ]
    .map(str::to_owned)
    .to_vec();
    hot.push(messages_by_id(Dialect::Sqlite, 4));
    hot
}

/// A migrated database with its display tables, and a plain connection to it.
fn migrated() -> (Fixture, Connection) {
    let f = Fixture::sqlite();
    let sql = f.connect();
    let db = Db::new(&*sql);
    migrate::run(&db).expect("migrates");
    db.write("test", || crate::display_tables::ensure(&db)).expect("the display tables made");
    let conn = Connection::open(f.sqlite_path().expect("sqlite")).expect("open");
    (f, conn)
}

#[test]
fn hot_statements_use_keys_and_never_scan_or_sort() {
    let (_f, conn) = migrated();
    let t = dialect::text(Dialect::Sqlite);
    let by_id = messages_by_id(Dialect::Sqlite, 4);
    let hot = hot();
    for sql in &hot {
        let steps = plan(&conn, sql);
        for step in &steps {
            let scans = step.starts_with("SCAN") && !step.contains("USING");
            assert!(!scans && !step.contains("TEMP B-TREE"), "{sql}\n{steps:#?}");
        }
    }
    assert!(plan(&conn, &by_id).iter().any(|s| s.contains("stowage_messages_id")), "the id index is used");
    let by_call = plan(&conn, t.display_by_tool_call);
    assert!(by_call.iter().any(|s| s.contains("stowage_display_tool_calls")), "{by_call:#?}");
    let sweep = plan(&conn, &display_by_status(Dialect::Sqlite, 2, true));
    assert!(sweep.iter().any(|s| s.contains("stowage_display_status")), "{sweep:#?}");
}

/// The host keeps the adapter's statements prepared (rusqlite's statement
/// cache, as this test does) and clears their bindings after every use. SQLite
/// plans some statements for the values bound (a bare `LIMIT ?N`, an equality
/// on `?N` that some candidate plan leaves unindexed, a join on the newest
/// message) and prepares those again once a binding changes or is cleared: on
/// every call. None of the hot statements may be one of them (`+?N` and
/// `?N + 0` keep a parameter out of the planner's view).
#[test]
fn hot_statements_stay_prepared_when_used_again() {
    let (_f, conn) = migrated();
    let mut reused = hot();
    reused.push(display_by_status(Dialect::Sqlite, 2, true));
    // Inserts of values would store the bound integers; the append plan's
    // inserts are refused here (no conversation has such a tenant).
    let plan_insert = |sql: &str| [append_plan::FIRST, append_plan::MIDDLE, append_plan::LAST].contains(&sql);
    for sql in reused.iter().filter(|sql| !sql.starts_with("INSERT") || plan_insert(sql)) {
        for round in 0..3 {
            let mut stmt = conn.prepare_cached(sql).expect("the statement prepares");
            for index in 1..=stmt.parameter_count() {
                stmt.raw_bind_parameter(index, i64::try_from(round + index).expect("small")).expect("binds");
            }
            let mut rows = stmt.raw_query();
            let ran = loop {
                match rows.next() {
                    Ok(Some(_)) => {}
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            drop(rows);
            // The plan's inserts find no such conversation: a NULL id, refused.
            match ran {
                Err(rusqlite::Error::SqliteFailure(e, _)) if plan_insert(sql) => {
                    assert_eq!(e.code, rusqlite::ErrorCode::ConstraintViolation, "{sql}")
                }
                ran => ran.expect("the statement runs"),
            }
            assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0, "prepared again on use {round}: {sql}");
        }
    }
    // The check catches what it guards against.
    let limit = "SELECT pos FROM stowage_messages WHERE pos > ?1 ORDER BY pos LIMIT ?2";
    for _ in 0..2 {
        let mut stmt = conn.prepare_cached(limit).expect("prepares");
        stmt.raw_bind_parameter(1, 0).expect("binds");
        stmt.raw_bind_parameter(2, 5).expect("binds");
        let mut rows = stmt.raw_query();
        while rows.next().expect("runs").is_some() {}
    }
    let stmt = conn.prepare_cached(limit).expect("prepares");
    assert_eq!(stmt.get_status(StatementStatus::RePrepare), 2, "a bare LIMIT ?2 is prepared again on every use");
}

//! SQLite query plans of the hot statements: every message and display range is
//! a rowid range or an index lookup — no full scan, no sort.

use rusqlite::Connection;

use super::Fixture;
use crate::db::{Db, Dialect};
use crate::dialect::{self, display_by_status, messages_by_id};
use crate::migrate;

fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("the statement prepares");
    let nulls = std::iter::repeat_n(rusqlite::types::Null, stmt.parameter_count());
    let rows = stmt.query_map(rusqlite::params_from_iter(nulls), |row| row.get::<_, String>(3)).expect("plan rows");
    rows.collect::<Result<_, _>>().expect("plan rows read")
}

#[test]
fn hot_statements_use_keys_and_never_scan_or_sort() {
    let f = Fixture::sqlite();
    migrate::run(&Db::new(&*f.connect())).expect("migrates");
    let conn = Connection::open(f.sqlite_path().expect("sqlite")).expect("open");
    let t = dialect::text(Dialect::Sqlite);
    let by_id = messages_by_id(Dialect::Sqlite, 4);
    let hot = [
        t.conversation_key,
        t.conversation_info,
        t.conversation_update,
        t.conversations_after,
        crate::head::NEWEST,
        crate::head::INSERT_WITH_HEAD,
        t.messages_latest,
        t.messages_after,
        t.messages_before,
        t.messages_delete_all,
        t.messages_delete_after,
        &by_id,
        t.stream_key,
        t.display_last_seq,
        t.display_update,
        t.display_delete_all,
        t.display_by_tool_call,
        t.display_list,
    ];
    for sql in hot {
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

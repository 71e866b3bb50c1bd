//! The load plan (`stowage:reads/load-plan`): the statements the host runs in
//! place of `load`, bound and ordered as the host does, return exactly what
//! `load` returns (which runs them itself on SQLite, checked against the newest
//! seq), and nothing of another conversation or scope.

use super::{Fixture, batch, scope};
use crate::conversations as conv;
use crate::db::{Db, Dialect, int, text};
use crate::dialect;
use crate::exports::stowage::reads::load_plan::Dialect as PlanDialect;
use crate::exports::stowage::store::conversation_store::{MessageRange, StoredMessage};
use crate::reads;

/// Every seeded conversation holds seqs 1 to 10.
const NEWEST: u64 = 10;

/// What the host does with the plan: run the statement for `range` with the
/// documented parameters, then put newest-first answers in ascending order.
fn planned(db: &Db, tenant: &str, id: &str, range: MessageRange, limit: u32) -> Vec<StoredMessage> {
    let plan = reads::plan(db, PlanDialect::Sqlite).expect("a plan on SQLite");
    let mut params = vec![text(tenant), text("u"), text(id)];
    let bound = |seq: u64| int(i64::try_from(seq).unwrap_or(i64::MAX));
    let (sql, newest_first) = match range {
        MessageRange::Latest => (plan.latest, true),
        MessageRange::After(seq) => {
            params.push(bound(seq));
            (plan.after, false)
        }
        MessageRange::Before(seq) => {
            params.push(bound(seq));
            (plan.before, true)
        }
    };
    params.push(int(i64::from(limit)));
    let rows = db.query("the plan", &sql, &params).expect("the plan runs");
    let mut found = Vec::new();
    for mut row in rows {
        assert_eq!(row.uint(6).expect("the newest seq"), NEWEST, "the last column is the newest seq");
        found.push(reads::stored_message(&mut row).expect("a record"));
    }
    if newest_first {
        found.reverse();
    }
    found
}

#[test]
fn the_plan_answers_exactly_what_load_answers() {
    let fixture = Fixture::sqlite();
    let sql = fixture.migrated();
    let db = Db::new(&*sql);
    assert!(reads::plan(&db, PlanDialect::Postgres).is_none(), "no plan for another dialect");
    for (tenant, id, first) in [("t", "c", "c"), ("t", "d", "d"), ("other", "c", "x")] {
        conv::open(&db, scope(tenant, "u"), id.into(), super::meta(b"\x01{}"), 5).expect("open");
        let ids: Vec<String> = (1..=NEWEST).map(|i| format!("{first}{i}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        conv::append(&db, scope(tenant, "u"), id.into(), batch(&ids, 1), None, 6).expect("append");
    }
    conv::open(&db, scope("t", "u"), "empty".into(), super::meta(b"\x01{}"), 5).expect("open");
    let ranges = [
        (MessageRange::Latest, 3),
        (MessageRange::Latest, 50),
        (MessageRange::Latest, 0),
        (MessageRange::After(0), 4),
        (MessageRange::After(7), 2),
        (MessageRange::After(10), 5),
        (MessageRange::After(u64::MAX), 5),
        (MessageRange::Before(4), 2),
        (MessageRange::Before(1), 2),
        (MessageRange::Before(u64::MAX), 2),
    ];
    for (tenant, id) in [("t", "c"), ("t", "d"), ("other", "c")] {
        for (range, limit) in ranges {
            let loaded = reads::load(&db, scope(tenant, "u"), id.into(), range, limit).expect("load");
            assert_eq!(planned(&db, tenant, id, range, limit), loaded, "{tenant}/{id} {range:?} limit {limit}");
        }
    }
    // Nothing for an empty or missing conversation, or another scope's id:
    // the host then asks `load`, which tells them apart.
    for (tenant, id) in [("t", "empty"), ("t", "missing"), ("nobody", "c")] {
        assert!(planned(&db, tenant, id, MessageRange::Latest, 50).is_empty(), "{tenant}/{id}");
    }
    assert_eq!(db.dialect(), Dialect::Sqlite);
    assert!(dialect::PLAN_LATEST.starts_with("SELECT"));
}

//! The append plan (`stowage:writes/append-plan`): its statements, bound as the
//! host binds them from the head it last saw, store exactly the rows `append`
//! stores; and whenever that guess is not the conversation's head they store
//! nothing, failing on a constraint, so the host calls `append`, which
//! answers as the contract orders.

use super::{Fixture, batch, meta, scope};
use crate::append_plan;
use crate::conversations as conv;
use crate::db::{Db, Sql};
use crate::exports::stowage::store::conversation_store::{AppendOutcome, MessageRange, Scope, StoredMessage};
use crate::exports::stowage::writes::append_plan::Dialect as PlanDialect;
use crate::model::role_code;
use crate::reads;
use crate::stowage::store::sql::{Error as SqlError, Statement, Value};

/// What the host does with the plan for `messages` of (`scope`, `id`), guessing
/// the conversation is at version `before`: a batch of one is `first` alone, a
/// longer one runs in one transaction. The counts of changed rows.
fn planned(
    sql: &dyn Sql,
    scope: &Scope,
    id: &str,
    messages: &[StoredMessage],
    before: u64,
    now: i64,
) -> Result<Vec<u64>, SqlError> {
    let plan = append_plan::plan(&Db::new(sql), PlanDialect::Sqlite).expect("a plan on SQLite");
    let last = messages.len() - 1;
    let statements: Vec<Statement> = messages
        .iter()
        .enumerate()
        .map(|(k, stored)| {
            let m = &stored.message;
            let mut params = vec![
                Value::Text(scope.tenant.clone()),
                Value::Text(scope.user.clone()),
                Value::Text(id.to_owned()),
                Value::Integer(stored.seq as i64),
                Value::Text(m.id.clone()),
                Value::Integer(role_code(m.role)),
                Value::Integer(m.created_at),
                Value::Blob(m.content.clone()),
                Value::Blob(m.tag.clone()),
            ];
            if k == 0 || k == last {
                let head = |value: i64| if k == last { Value::Integer(value) } else { Value::Null };
                params.extend([Value::Integer(before as i64), head(before as i64 + 1), head(now)]);
            }
            let sql = match k {
                0 => &plan.first,
                k if k == last => &plan.last,
                _ => &plan.middle,
            };
            Statement { sql: sql.clone(), params }
        })
        .collect();
    match statements.as_slice() {
        [only] => sql.execute(&only.sql, &only.params).map(|n| vec![n]),
        _ => sql.execute_batch(&statements),
    }
}

/// Every row of both tables, as stored.
fn rows(sql: &dyn Sql) -> Vec<Vec<Value>> {
    let mut all = sql
        .query(
            "SELECT pos, id, role, created_at, content, tag, head_version, head_updated_at FROM stowage_messages \
             ORDER BY pos",
            &[],
        )
        .expect("messages");
    all.extend(
        sql.query(
            "SELECT cid, tenant, scope_user, id, created_at, updated_at, version, last_seq FROM stowage_conversations \
             ORDER BY cid",
            &[],
        )
        .expect("conversations"),
    );
    all
}

fn ids(db: &Db, scope: Scope, id: &str) -> Vec<String> {
    let all = reads::load(db, scope, id.into(), MessageRange::After(0), 100).expect("load");
    all.into_iter().map(|m| m.message.id).collect()
}

#[test]
fn the_plan_stores_exactly_the_rows_append_stores() {
    let (called, planned_by_host) = (Fixture::sqlite(), Fixture::sqlite());
    let (a, b) = (called.migrated(), planned_by_host.migrated());
    let (da, db) = (Db::new(&*a), Db::new(&*b));
    assert!(append_plan::plan(&db, PlanDialect::Postgres).is_none(), "no plan for another dialect");
    let conversations = [(scope("t", "u"), "c"), (scope("t", "u"), "d"), (scope("other", "u"), "c")];
    for (s, id) in &conversations {
        conv::open(&da, s.clone(), (*id).into(), meta(b"m"), 5).expect("open");
        conv::open(&db, s.clone(), (*id).into(), meta(b"m"), 5).expect("open");
    }
    let mut n = 0;
    for (round, size) in [1usize, 4, 1, 2, 3, 1, 4].into_iter().enumerate() {
        for (s, id) in &conversations {
            let info = conv::info(&db, s.clone(), (*id).into()).expect("info");
            let names: Vec<String> = (n..n + size).map(|i| i.to_string()).collect();
            n += size;
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let messages = batch(&names, info.last_seq + 1);
            let now = 100 + round as i64;
            let answer = conv::append(&da, s.clone(), (*id).into(), messages.clone(), None, now);
            assert_eq!(answer, Ok(AppendOutcome::Stored(info.version + 1)));
            let counts = planned(&*b, s, id, &messages, info.version, now).expect("the plan stores");
            assert_eq!(counts, vec![1; size]);
        }
    }
    assert_eq!(rows(&*a), rows(&*b), "the same rows, byte for byte");
    for (s, id) in conversations {
        let (x, y) = (conv::info(&da, s.clone(), id.into()), conv::info(&db, s.clone(), id.into()));
        assert_eq!(x, y, "{s:?}/{id}");
        assert_eq!(ids(&da, s.clone(), id), ids(&db, s, id));
    }
}

/// The plan for a one-message batch continuing (version, last seq) = `guess`.
fn try_one(sql: &dyn Sql, s: &Scope, id: &str, name: &str, guess: (u64, u64)) -> Result<Vec<u64>, SqlError> {
    planned(sql, s, id, &batch(&[name], guess.1 + 1), guess.0, 50)
}

/// And a three-message one.
fn try_three(sql: &dyn Sql, s: &Scope, id: &str, guess: (u64, u64)) -> Result<Vec<u64>, SqlError> {
    planned(sql, s, id, &batch(&["p", "q", "r"], guess.1 + 1), guess.0, 50)
}

fn refused(what: &str, result: Result<Vec<u64>, SqlError>) {
    assert!(matches!(result, Err(SqlError::Constraint(_))), "{what}: {result:?}");
}

#[test]
fn a_wrong_guess_stores_nothing() {
    let f = Fixture::sqlite();
    let (sql, other) = (f.migrated(), f.connect());
    let db = Db::new(&*sql);
    let s = scope("t", "u");
    conv::open(&db, s.clone(), "c".into(), meta(b"m"), 5).expect("open");
    assert_eq!(conv::append(&db, s.clone(), "c".into(), batch(&["a", "b"], 1), None, 6), Ok(AppendOutcome::Stored(1)));
    assert_eq!(conv::append(&db, s.clone(), "c".into(), batch(&["c"], 3), None, 7), Ok(AppendOutcome::Stored(2)));
    let before = rows(&*sql);
    // The head is (2, 3): every other guess is refused, whatever the batch's size.
    for guess in [(1, 3), (3, 3), (2, 2), (2, 4), (0, 0), (1, 2)] {
        refused(&format!("{guess:?}, one"), try_one(&*other, &s, "c", "x", guess));
        refused(&format!("{guess:?}, three"), try_three(&*other, &s, "c", guess));
    }
    // A stored id under the right head.
    refused("a stored id", try_one(&*other, &s, "c", "b", (2, 3)));
    refused("a stored id last", planned(&*other, &s, "c", &batch(&["y", "a"], 4), 2, 50));
    // No such conversation: another scope's, or none by that id.
    for (s, id) in [(scope("t", "v"), "c"), (scope("s", "u"), "c"), (scope("t", "u"), "missing")] {
        refused(&format!("{s:?}/{id}, one"), try_one(&*other, &s, id, "x", (2, 3)));
        refused(&format!("{s:?}/{id}, three"), try_three(&*other, &s, id, (2, 3)));
        // Not a message after the first run on its own either: no row before it.
        let lone = batch(&["x", "y"], 4);
        let plan = append_plan::plan(&db, PlanDialect::Sqlite).expect("a plan");
        for sql in [&plan.middle, &plan.last] {
            let mut params = vec![
                Value::Text(s.tenant.clone()),
                Value::Text(s.user.clone()),
                Value::Text(id.into()),
                Value::Integer(4),
                Value::Text("x".into()),
                Value::Integer(role_code(lone[0].message.role)),
                Value::Integer(1),
                Value::Blob(vec![1]),
                Value::Blob(vec![2]),
            ];
            if sql == &plan.last {
                params.extend([Value::Integer(2), Value::Integer(3), Value::Integer(9)]);
            }
            refused(&format!("{s:?}/{id}: {sql}"), other.execute(sql, &params).map(|n| vec![n]));
        }
    }
    assert_eq!(rows(&*sql), before, "nothing stored");
    // The right guess stores, from another connection too.
    assert_eq!(try_three(&*other, &s, "c", (2, 3)), Ok(vec![1, 1, 1]));
    assert_eq!(conv::info(&db, s.clone(), "c".into()).map(|i| (i.version, i.last_seq)), Ok((3, 6)));
    assert_eq!(ids(&db, s, "c"), ["a", "b", "c", "p", "q", "r"]);
}

/// A head kept in the conversation's row (after `replace`), a conversation
/// made again under the same id, and heads only a damaged database holds.
#[test]
fn the_guess_is_checked_against_the_head_as_the_adapter_reads_it() {
    let f = Fixture::sqlite();
    let sql = f.migrated();
    let db = Db::new(&*sql);
    let s = scope("t", "u");
    conv::open(&db, s.clone(), "c".into(), meta(b"m"), 5).expect("open");
    assert_eq!(conv::append(&db, s.clone(), "c".into(), batch(&["a"], 1), None, 6), Ok(AppendOutcome::Stored(1)));
    // The same last seq at a newer version, kept in the row.
    assert_eq!(conv::replace(&db, s.clone(), "c".into(), batch(&["b"], 1), None, 7), Ok(2));
    refused("the message's old head", try_one(&*sql, &s, "c", "x", (1, 1)));
    assert_eq!(try_one(&*sql, &s, "c", "x", (2, 1)), Ok(vec![1]));
    assert_eq!(conv::info(&db, s.clone(), "c".into()).map(|i| (i.version, i.last_seq)), Ok((3, 2)));
    // Deleted and made again: the same id, a new key, version 0.
    assert_eq!(conv::delete(&db, s.clone(), "c".into()), Ok(true));
    conv::open(&db, s.clone(), "c".into(), meta(b"m"), 8).expect("open again");
    refused("the old conversation's head", try_one(&*sql, &s, "c", "y", (3, 2)));
    assert_eq!(try_three(&*sql, &s, "c", (0, 0)), Ok(vec![1, 1, 1]));
    assert_eq!(ids(&db, s.clone(), "c"), ["p", "q", "r"]);
    // Half heads in the newest message, and a head other than the guess: never
    // matched.
    let raw = rusqlite::Connection::open(f.sqlite_path().expect("sqlite")).expect("open the file");
    let newest = |set: &str| {
        raw.execute(
            &format!("UPDATE stowage_messages SET {set} WHERE pos = (SELECT MAX(pos) FROM stowage_messages)"),
            [],
        )
        .expect("damage the newest message")
    };
    for (half, guess) in
        [("head_version = NULL", (1, 3)), ("head_updated_at = NULL", (1, 3)), ("head_version = 9", (1, 3))]
    {
        newest(half);
        refused(half, try_one(&*sql, &s, "c", "z", guess));
        newest("head_version = 1, head_updated_at = 50");
    }
    assert_eq!(ids(&db, s.clone(), "c"), ["p", "q", "r"]);
    assert_eq!(try_one(&*sql, &s, "c", "z", (1, 3)), Ok(vec![1]));
    assert_eq!(ids(&db, s, "c"), ["p", "q", "r", "z"]);
}

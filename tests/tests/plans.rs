//! The SQL adapter's plans, which the host runs itself.
//!
//! - Its load plan (`stowage:reads/load-plan`): the host answers loads by
//!   running the adapter's SELECTs. Pages are those the adapter's own `load`
//!   gives, errors stay the adapter's, and the rows are checked as any answer
//!   is: a record altered in the database, or moved there from another tenant,
//!   is refused on the plan's path too.
//! - Its append plan (`stowage:writes/append-plan`): the host stores appends
//!   that continue the head it last saw by running the adapter's INSERTs.
//!   Every answer (stored, already stored, conflict, not found) and every
//!   history is the one the adapter's own `append` gives; a guess made stale
//!   beside the host goes to the adapter, which answers from the database.

use std::path::Path;

use anyhow::{Context, ensure};
use stowage::{Builtin, Error, LoadRequest, Message, NewMessage, Role, Scope, Store, StoreConfig};
use stowage_tests::shared_runtime;

fn scope(tenant: &str) -> Scope {
    Scope::new(tenant, "user-1")
}

async fn open(data: &Path, load_plans: bool) -> anyhow::Result<Store> {
    open_with(data, load_plans, true).await
}

async fn open_with(data: &Path, load_plans: bool, append_plans: bool) -> anyhow::Result<Store> {
    let mut config = StoreConfig::builtin(Builtin::Sqlite, data);
    config.limits.load_plans = load_plans;
    config.limits.append_plans = append_plans;
    Ok(shared_runtime()?.open_store(config).await?)
}

/// Conversations `c` (20 messages) and `empty` in tenant A, `c` (5) in tenant B.
async fn seed(store: &Store) -> anyhow::Result<()> {
    for (tenant, count) in [("tenant-a", 20), ("tenant-b", 5)] {
        store.open(&scope(tenant), "c", Default::default()).await?;
        let batch: Vec<NewMessage> = (1..=count)
            .map(|i| {
                let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
                NewMessage::text(role, format!("{tenant} message {i}")).with_id(format!("m{i}"))
            })
            .collect();
        store.append(&scope(tenant), "c", batch, None).await?;
    }
    store.open(&scope("tenant-a"), "empty", Default::default()).await?;
    Ok(())
}

/// What a page says, without the times (the two stores wrote at other times).
fn shown(messages: &[Message]) -> anyhow::Result<Vec<(u64, String, Role, String)>> {
    messages.iter().map(|m| Ok((m.seq, m.id.clone(), m.role, serde_json::to_string(&m.parts)?))).collect()
}

fn requests() -> Vec<LoadRequest> {
    vec![
        LoadRequest::latest(3),
        LoadRequest::latest(100),
        LoadRequest::after(0, 7),
        LoadRequest::after(15, 10),
        LoadRequest::after(20, 10),
        LoadRequest::after(u64::MAX, 10),
        LoadRequest::before(5, 2),
        LoadRequest::before(1, 2),
        LoadRequest::before(u64::MAX, 4),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_from_the_plan_answer_as_the_adapters_load_does() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let planned = open(&dir.path().join("planned"), true).await?;
    let called = open(&dir.path().join("called"), false).await?;
    for store in [&planned, &called] {
        seed(store).await?;
    }
    for request in requests() {
        let (a, b) = (
            planned.load(&scope("tenant-a"), "c", request.clone()).await?,
            called.load(&scope("tenant-a"), "c", request.clone()).await?,
        );
        ensure!(shown(&a.messages)? == shown(&b.messages)?, "{request:?}: {:?} != {:?}", a.messages, b.messages);
        ensure!(a.next_cursor.is_some() == b.next_cursor.is_some(), "{request:?}: cursors differ");
    }
    ensure!(
        shown(&planned.load_all(&scope("tenant-b"), "c").await?)?
            == shown(&called.load_all(&scope("tenant-b"), "c").await?)?
    );
    let runs = planned.stats().planned_loads;
    ensure!(runs > 0, "the plan never answered: {:?}", planned.stats());
    ensure!(called.stats().planned_loads == 0, "{:?}", called.stats());
    // No rows from the plan: the adapter's `load` answers, telling an empty
    // conversation from a missing one, and another tenant's id from its own.
    ensure!(planned.load(&scope("tenant-a"), "empty", LoadRequest::latest(10)).await?.messages.is_empty());
    for (tenant, id) in [("tenant-a", "missing"), ("tenant-c", "c")] {
        let missing = planned.load(&scope(tenant), id, LoadRequest::latest(10)).await;
        ensure!(matches!(missing, Err(Error::NotFound)), "{tenant}/{id}: {missing:?}");
    }
    ensure!(planned.stats().planned_loads == runs, "an empty answer counted as the plan's: {:?}", planned.stats());
    Ok(())
}

/// Runs `sql` on the store's database, beside the host (as another process
/// with the file could).
fn tamper(data: &Path, sql: &str) -> anyhow::Result<usize> {
    let db = rusqlite::Connection::open(data.join("host").join("sql.sqlite3"))?;
    db.busy_timeout(std::time::Duration::from_secs(5))?;
    db.execute(sql, []).context(sql.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_altered_or_moved_in_the_database_is_refused_on_the_plans_path() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let store = open(&data, true).await?;
    seed(&store).await?;
    // Loaded (and remembered) honestly first.
    ensure!(store.load_all(&scope("tenant-a"), "c").await?.len() == 20);
    let key = |tenant: &str| {
        format!(
            "(SELECT cid FROM stowage_conversations WHERE tenant = '{tenant}' AND scope_user = 'user-1' AND id = 'c')"
        )
    };
    let a_row = |seq: u64| format!("({} << 32) + {seq}", key("tenant-a"));
    let b_row = |seq: u64| format!("({} << 32) + {seq}", key("tenant-b"));
    let refused = |what: &str, result: Result<Vec<Message>, Error>| match result {
        Err(Error::Integrity { record, .. }) => Ok(record),
        other => anyhow::bail!("{what}: expected an integrity error, got {other:?}"),
    };

    // Tenant B's record 2, content and tag, copied over tenant A's record 2.
    let moved = format!(
        "UPDATE stowage_messages SET content = (SELECT content FROM stowage_messages WHERE pos = {b}), \
         tag = (SELECT tag FROM stowage_messages WHERE pos = {b}) WHERE pos = {a}",
        b = b_row(2),
        a = a_row(2)
    );
    ensure!(tamper(&data, &moved)? == 1);
    let before = store.stats().planned_loads;
    let record = refused("B's record in A's history", store.load_all(&scope("tenant-a"), "c").await)?;
    ensure!(record.contains("seq 2"), "{record}");
    ensure!(store.stats().planned_loads > before, "the plan did not answer: {:?}", store.stats());

    // A's record 5 with another role.
    ensure!(
        tamper(&data, &format!("UPDATE stowage_messages SET role = (role + 1) % 5 WHERE pos = {}", a_row(5)))? == 1
    );
    let page = store.load(&scope("tenant-a"), "c", LoadRequest::after(2, 10)).await.map(|p| p.messages);
    let record = refused("a rewritten role", page)?;
    ensure!(record.contains("seq 5"), "{record}");
    // Tenant B's history is untouched and still loads.
    ensure!(store.load_all(&scope("tenant-b"), "c").await?.len() == 5);
    Ok(())
}

/// A turn of `n` messages with ids `{prefix}1`…
fn turn(prefix: &str, n: usize) -> Vec<NewMessage> {
    (1..=n)
        .map(|i| {
            let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
            NewMessage::text(role, format!("{prefix} message {i}")).with_id(format!("{prefix}{i}"))
        })
        .collect()
}

/// Every answer a script of appends (and the writes between them) gets, as
/// text, and every history after it.
async fn appends(store: &Store) -> anyhow::Result<Vec<String>> {
    let (a, b) = (scope("tenant-a"), scope("tenant-b"));
    let mut said = Vec::new();
    store.open(&a, "c", Default::default()).await?;
    for (what, batch, expected) in [
        ("one", turn("a", 1), None),
        ("four", turn("b", 4), None),
        ("at the expected version", turn("c", 2), Some(2)),
        ("at a stale version", turn("d", 1), Some(2)),
        ("a retry", turn("b", 4), None),
        ("half a retry", [turn("c", 2), turn("e", 1)].concat(), None),
        ("a retry at a stale version", turn("e", 1), Some(1)),
    ] {
        said.push(format!("{what}: {:?}", store.append(&a, "c", batch, expected).await));
    }
    said.push(format!("replace: {:?}", store.replace(&a, "c", turn("f", 3), None).await));
    said.push(format!("after a replace: {:?}", store.append(&a, "c", turn("g", 2), None).await));
    said.push(format!("truncate: {:?}", store.truncate_after(&a, "c", 2, None).await));
    said.push(format!("after a cut: {:?}", store.append(&a, "c", turn("h", 4), None).await));
    said.push(format!("pop: {:?}", store.pop_last(&a, "c").await.map(|m| m.map(|m| m.seq))));
    said.push(format!("after a pop: {:?}", store.append(&a, "c", turn("i", 1), None).await));
    said.push(format!("delete: {:?}", store.delete(&a, "c").await));
    said.push(format!("after a delete: {:?}", store.append(&a, "c", turn("j", 1), None).await));
    store.open(&a, "c", Default::default()).await?;
    said.push(format!("opened again: {:?}", store.append(&a, "c", turn("k", 4), None).await));
    for round in 0..2 {
        let created = store.append_creating(&b, "c", Default::default(), turn(&format!("l{round}"), 4)).await;
        said.push(format!("create-on-append {round}: {created:?}"));
    }
    said.push(format!("never opened: {:?}", store.append(&a, "missing", turn("m", 1), None).await));
    for (scope, id) in [(&a, "c"), (&b, "c")] {
        said.push(format!("{scope:?}/{id}: {:?}", shown(&store.load_all(scope, id).await?)?));
        let info = store.info(scope, id).await?;
        said.push(format!("{scope:?}/{id}: version {}, last seq {}", info.version, info.last_seq));
    }
    Ok(said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_from_the_plan_answer_as_the_adapters_append_does() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let planned = open_with(&dir.path().join("planned"), true, true).await?;
    let called = open_with(&dir.path().join("called"), true, false).await?;
    let (mine, theirs) = (appends(&planned).await?, appends(&called).await?);
    for (x, y) in mine.iter().zip(&theirs) {
        ensure!(x == y, "planned: {x}\ncalled:  {y}");
    }
    ensure!(mine.len() == theirs.len());
    ensure!(mine.iter().any(|line| line.contains("Conflict")), "{mine:#?}");
    ensure!(mine.iter().any(|line| line.contains("NotFound")), "{mine:#?}");
    let runs = planned.stats().planned_appends;
    ensure!(runs >= 6, "the plan stored too few appends: {:?}", planned.stats());
    ensure!(called.stats().planned_appends == 0, "{:?}", called.stats());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_moved_beside_the_host_is_answered_by_the_adapter() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let store = open_with(&data, true, true).await?;
    let a = scope("tenant-a");
    store.open(&a, "c", Default::default()).await?;
    ensure!(store.append(&a, "c", turn("a", 2), None).await?.version == 1);
    ensure!(store.stats().planned_appends == 1, "{:?}", store.stats());
    // Another writer moves the head (as another host's replace of the same
    // history would): the host's guess is stale, the plan stores nothing, and
    // the adapter stores the batch at the head it reads.
    let moved = "UPDATE stowage_conversations SET version = 7, last_seq = 2 WHERE id = 'c'";
    ensure!(tamper(&data, moved)? == 1);
    let after = store.append(&a, "c", turn("b", 1), None).await?;
    ensure!((after.version, after.seqs.clone()) == (8, vec![3]), "{after:?}");
    ensure!(store.stats().planned_appends == 1, "{:?}", store.stats());
    // The head it answered with is the next guess.
    ensure!(store.append(&a, "c", turn("c", 4), Some(8)).await?.version == 9);
    ensure!(store.stats().planned_appends == 2, "{:?}", store.stats());
    // Removed beside the host: not found, from the adapter.
    ensure!(tamper(&data, "DELETE FROM stowage_messages")? == 7);
    ensure!(tamper(&data, "DELETE FROM stowage_conversations")? == 1);
    let gone = store.append(&a, "c", turn("d", 1), None).await;
    ensure!(matches!(gone, Err(Error::NotFound)), "{gone:?}");
    ensure!(store.stats().planned_appends == 2, "{:?}", store.stats());
    Ok(())
}

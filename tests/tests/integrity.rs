//! Issue 9's findings 2–4 as hostile adapter tests, with the `liar` fixture: an
//! honest in-memory store that lies as `<data_dir>/adapter/liar-mode` says (read
//! on every call). Whatever it forges, relabels or inflates, the caller gets a
//! typed refusal that names the store, the conversation and the record — never
//! another tenant's data, never a forged record, never an oversized answer. And
//! the conformance catalogue (what `stowage check` runs) fails every lie.

use std::path::Path;

use anyhow::{bail, ensure};
use stowage::{
    AdapterSource, Capability, ConversationMeta, Display, DisplayContext, DisplayOptions, Error, Grants, Limits,
    LoadRequest, Message, NewMessage, Part, Role, Scope, Store, StoreConfig, ToolInfo, ToolStatus,
};
use stowage_tests::{Outcome, Subject, fixture, run_catalogue, shared_runtime};

/// Stored text of every message here: it must never appear in an error.
const SECRET: &str = "secret-body";

fn scope_a() -> Scope {
    Scope::new("tenant-a", "user-1")
}

fn scope_b() -> Scope {
    Scope::new("tenant-b", "user-1")
}

/// A liar store (filesystem grant for its mode file; one instance: its state
/// lives in instance memory).
async fn liar(dir: &Path, limits: Limits) -> anyhow::Result<Store> {
    let config = StoreConfig::new("liar", AdapterSource::File(fixture("liar")), dir.join("data"))
        .with_grants(Grants::of(&[Capability::Filesystem]))
        .with_limits(Limits { instances: 1, ..limits });
    Ok(shared_runtime()?.open_store(config).await?)
}

fn set_mode(dir: &Path, mode: &str) -> anyhow::Result<()> {
    Ok(std::fs::write(dir.join("data/adapter/liar-mode"), format!("{mode}\n"))?)
}

fn honest(dir: &Path) -> anyhow::Result<()> {
    Ok(std::fs::remove_file(dir.join("data/adapter/liar-mode"))?)
}

/// Conversation `id` of `scope` with four messages of alternating roles.
async fn seeded(store: &Store, scope: &Scope, id: &str) -> anyhow::Result<Vec<Message>> {
    store.open(scope, id, ConversationMeta { title: Some(format!("{SECRET} title")), ..Default::default() }).await?;
    let batch = (1..=4)
        .map(|i| {
            let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
            NewMessage::text(role, format!("{SECRET} {id} {i}")).with_id(format!("{id}-m{i}"))
        })
        .collect();
    store.append(scope, id, batch, None).await?;
    Ok(store.load_all(scope, id).await?)
}

/// The refusal a lie must meet: an integrity error naming the store, the
/// conversation and the record; a contract violation naming the store, the
/// conversation (unless it is about a whole listing) and what broke it; or
/// not-found. Never data. Returns a short label of the refusal.
fn refused<T: std::fmt::Debug>(result: Result<T, Error>, conversation: &str, what: &str) -> anyhow::Result<String> {
    let error = match result {
        Ok(value) => bail!("{what}: the lie got through: {value:?}"),
        Err(error) => error,
    };
    let text = format!("{error} {error:?}");
    ensure!(!text.contains(SECRET), "{what}: the refusal carries stored data: {text}");
    match &error {
        Error::Integrity { store, conversation: c, record, reason } => {
            ensure!(store == "liar" && c == conversation && !record.is_empty(), "{what}: {error:?}");
            println!("{what}: integrity error, {record}: {reason}");
            Ok(format!("integrity {record}"))
        }
        Error::ContractViolation { store, message } => {
            let listing = message.starts_with("list returned");
            let named = message.starts_with(&format!("conversation `{conversation}`: "));
            ensure!(store == "liar" && (named || listing), "{what}: {error:?}");
            println!("{what}: contract violation: {message}");
            Ok("violation".into())
        }
        Error::NotFound => Ok("not-found".into()),
        other => bail!("{what}: expected an integrity error, a contract violation or not-found, got {other:?}"),
    }
}

async fn relabelled_scope_is_refused(mode: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = liar(dir.path(), Limits::default()).await?;
    let (a, b) = (scope_a(), scope_b());
    let history = seeded(&store, &a, "c").await?;
    let info = store.info(&a, "c").await?;
    // A's messages are in the host's memo of checked messages: B gets none of them.
    ensure!(store.load_all(&a, "c").await? == history, "{mode}: A's history");
    set_mode(dir.path(), mode)?;
    let what = |op: &str| format!("{mode}: tenant B's {op} of A's conversation");
    refused(store.list(&b, None, 10).await, "c", &what("list"))?;
    refused(store.load(&b, "c", LoadRequest::latest(10)).await, "c", &what("load"))?;
    refused(store.load_all(&b, "c").await, "c", &what("export"))?;
    refused(store.info(&b, "c").await, "c", &what("info"))?;
    let extra = vec![NewMessage::text(Role::User, "from b")];
    refused(store.append(&b, "c", extra, None).await, "c", &what("append"))?;
    refused(store.truncate_after(&b, "c", 1, None).await, "c", &what("truncate"))?;
    refused(store.pop_last(&b, "c").await, "c", &what("pop_last"))?;
    refused(store.delete(&b, "c").await, "c", &what("delete"))?;
    // A's conversation is untouched, as an honest adapter shows.
    honest(dir.path())?;
    ensure!(store.load_all(&a, "c").await? == history, "{mode}: A's history changed");
    ensure!(store.info(&a, "c").await? == info, "{mode}: A's conversation changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_ignores_the_scope_cannot_hand_one_tenant_anothers_data() -> anyhow::Result<()> {
    relabelled_scope_is_refused("ignore-scope").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_reports_the_true_scope_cannot_let_another_tenant_cut_or_delete() -> anyhow::Result<()> {
    relabelled_scope_is_refused("true-scope").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_answers_are_refused_naming_the_record() -> anyhow::Result<()> {
    for mode in [
        "rewrite-role",
        "flip-content",
        "other-conversation",
        "change-id",
        "swap-seqs",
        "reorder",
        "skip-seq",
        "drop-tag",
    ] {
        // Also after the honest records were loaded, so the host's memo of
        // checked messages holds them: a forgery is never one of them.
        for loaded_before in [false, true] {
            let dir = tempfile::tempdir()?;
            let store = liar(dir.path(), Limits::default()).await?;
            let a = scope_a();
            let history = seeded(&store, &a, "c").await?;
            seeded(&store, &a, "d").await?;
            if loaded_before {
                ensure!(store.load_all(&a, "c").await? == history);
                store.load_all(&a, "d").await?;
            }
            let case = format!("{mode} (loaded before: {loaded_before})");
            set_mode(dir.path(), mode)?;
            let kind = refused(store.load(&a, "c", LoadRequest::latest(10)).await, "c", &format!("{case}: load"))?;
            ensure!(kind != "not-found", "{case}: a forged answer must be refused as such, not as not-found");
            refused(store.load_all(&a, "c").await, "c", &format!("{case}: export"))?;
            honest(dir.path())?;
            ensure!(store.load_all(&a, "c").await? == history, "{case}: the honest answer is intact");
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_stored_past_a_gap_is_caught_at_the_next_read() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = liar(dir.path(), Limits::default()).await?;
    let a = scope_a();
    seeded(&store, &a, "c").await?;
    set_mode(dir.path(), "skip-seq")?;
    // A 0.2.0 append answer carries no seqs (the host chose them), so the lie,
    // storing the message at seq 6 instead of 5, cannot show in the answer ...
    let out = store.append(&a, "c", vec![NewMessage::text(Role::User, "fifth").with_id("m5")], None).await?;
    ensure!(out.seqs == [5], "{out:?}");
    // ... but the gap it left is refused at the next read, honest or not.
    honest(dir.path())?;
    let kind = refused(store.load(&a, "c", LoadRequest::latest(10)).await, "c", "after skip-seq: load")?;
    ensure!(kind == "violation", "the gap is a contract violation: {kind}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_answers_and_inconsistent_counts_are_contract_violations() -> anyhow::Result<()> {
    // The message limit, and separately the per-call response budget.
    let budget = Limits { max_response_bytes: 32 << 20, ..Limits::default() };
    let oversized = "conversation `c`: load returned message seq 5 of 50000000 bytes, over the store's limit";
    for (limits, want) in [(Limits::default(), oversized), (budget, "exceeds the store's response budget")] {
        let dir = tempfile::tempdir()?;
        let store = liar(dir.path(), limits).await?;
        let a = scope_a();
        seeded(&store, &a, "c").await?;
        set_mode(dir.path(), "huge-message")?;
        for (op, result) in [
            ("load", store.load(&a, "c", LoadRequest::latest(10)).await.map(|p| p.messages)),
            ("export", store.load_all(&a, "c").await),
        ] {
            match result {
                Err(Error::ContractViolation { store, message }) => {
                    ensure!(store == "liar" && message.contains(want), "huge-message {op}: {message}");
                }
                Ok(messages) => {
                    let sizes: Vec<usize> = messages.iter().map(|m| format!("{:?}", m.parts).len()).collect();
                    bail!("huge-message {op}: a 50 MB message was returned (part sizes {sizes:?})")
                }
                Err(other) => bail!("huge-message {op}: expected a contract violation, got {other:?}"),
            }
        }
    }
    let dir = tempfile::tempdir()?;
    let store = liar(dir.path(), Limits::default()).await?;
    let a = scope_a();
    seeded(&store, &a, "c").await?;
    set_mode(dir.path(), "bad-count")?;
    let counts = |op: &str, result: Result<String, Error>| match result {
        Err(Error::ContractViolation { message, .. })
            if message == "conversation `c`: reported 5 messages with last seq 4 (seqs are contiguous from 1)" =>
        {
            Ok(())
        }
        other => bail!("bad-count {op}: expected a count violation, got {other:?}"),
    };
    counts("info", store.info(&a, "c").await.map(|i| format!("{i:?}")))?;
    counts("list", store.list(&a, None, 10).await.map(|p| format!("{p:?}")))?;
    counts("open", store.open(&a, "c", ConversationMeta::default()).await.map(|i| format!("{i:?}")))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_old_display_record_is_a_known_limit() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = liar(dir.path(), Limits::default()).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let (a, ctx) = (scope_a(), DisplayContext::new(None, "c"));
    let calling = NewMessage::new(Role::Assistant, vec![Part::tool_call("call-1", "tool", "{}")]);
    display.save_message(&a, &calling, &ctx).await?;
    display.update_tool_status(&a, ToolStatus::Executing, ToolInfo::new("call-1"), &ctx).await?;
    set_mode(dir.path(), "replay-old")?;
    // KNOWN LIMIT: the adapter hands back the card as it was before its last
    // update. That record is authentic (the host tagged it, for this scope,
    // conversation and seq), so the host cannot tell it from the current one:
    // tags detect forgery and relabelling, not a rollback to an earlier authentic
    // state (that would need a version bound into the tag and kept outside the
    // adapter). What the caller sees is the stale state: the card is `pending`
    // again, so completing it is refused as an invalid move from `pending`.
    match display.update_tool_status(&a, ToolStatus::Completed, ToolInfo::new("call-1"), &ctx).await {
        Err(Error::InvalidTransition { from: ToolStatus::Pending, to: ToolStatus::Completed }) => {}
        other => bail!("replay-old: expected the stale card's transition error, got {other:?}"),
    }
    // The listing (not replayed) still shows the real state.
    let records = display.list(&a, "c", 0, 10).await?.records;
    ensure!(records.iter().any(|r| r.status == Some(ToolStatus::Executing)), "{records:?}");
    Ok(())
}

type Setup = fn(&Path) -> std::io::Result<()>;

macro_rules! lies {
    ($($setup:ident => $mode:literal),* $(,)?) => {
        $(fn $setup(adapter_dir: &Path) -> std::io::Result<()> {
            std::fs::write(adapter_dir.join("liar-mode"), concat!($mode, "\n"))
        })*
        const LIES: &[(&str, Setup)] = &[$(($mode, $setup)),*];
    };
}

lies!(
    ignore_scope => "ignore-scope",
    true_scope => "true-scope",
    rewrite_role => "rewrite-role",
    flip_content => "flip-content",
    other_conversation => "other-conversation",
    change_id => "change-id",
    swap_seqs => "swap-seqs",
    reorder => "reorder",
    skip_seq => "skip-seq",
    huge_message => "huge-message",
    bad_count => "bad-count",
    replay_old => "replay-old",
    drop_tag => "drop-tag",
);

fn liar_subject() -> Subject {
    Subject::file(fixture("liar"), Grants::of(&[Capability::Filesystem]))
}

/// The catalogue cases an honest liar fails, and rightly: its history lives in
/// instance memory, so a host restart (a new engine, new instances) loses it.
const RESTART_CASES: [&str; 2] = ["data_survives_a_host_restart", "display_sweep_interrupts_cards_left_by_a_crash"];

fn ran(report: &stowage_tests::Report) -> usize {
    report.results.iter().filter(|(_, o)| !matches!(o, Outcome::NotApplicable(_))).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stowage_check_flags_every_lie_and_nothing_else() -> anyhow::Result<()> {
    let runtime = shared_runtime()?;
    let honest = run_catalogue(&liar_subject(), &runtime).await;
    println!("{}", honest.render());
    let honest_failures: Vec<&str> = honest.failures().iter().map(|(name, _)| *name).collect();
    ensure!(
        honest_failures == RESTART_CASES,
        "the honest liar must pass every case but the two restart cases:\n{}",
        honest.render()
    );
    let mut unflagged = Vec::new();
    for (mode, setup) in LIES {
        let report = run_catalogue(&liar_subject().with_setup(*setup), &runtime).await;
        // Flagged: the lie fails a case the honest liar passes.
        let caught: Vec<&str> =
            report.failures().iter().map(|(name, _)| *name).filter(|name| !RESTART_CASES.contains(name)).collect();
        println!("{mode}: {} cases catch it: {caught:?}", caught.len());
        ensure!(ran(&report) == ran(&honest), "{mode}: cases did not run:\n{}", report.render());
        if caught.is_empty() {
            unflagged.push(*mode);
        }
    }
    ensure!(unflagged.is_empty(), "the catalogue does not flag these lies: {unflagged:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_liar_casefails_loudly() -> anyhow::Result<()> {
    // Guards the tests above: a misspelt mode must not pass as honesty.
    let dir = tempfile::tempdir()?;
    let store = liar(dir.path(), Limits::default()).await?;
    set_mode(dir.path(), "drop-tags")?;
    match store.list(&scope_a(), None, 10).await {
        Err(Error::Storage(reason)) => ensure!(reason.contains("unknown mode `drop-tags`"), "{reason}"),
        other => bail!("expected the liar to refuse an unknown mode: {other:?}"),
    }
    Ok(())
}

//! Issue 9, where the bytes live: the host's own files are out of every adapter's
//! reach (finding 1), sealed content is ciphertext on disk, and stores of the
//! 0.1.0 era (adapters, records and the old data layout) keep working.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use stowage::{
    AdapterSource, Builtin, Capability, ConversationMeta, Display, DisplayContext, DisplayOptions, Error, Grants,
    Integrity, Message, NewMessage, Part, Role, Scope, Store, StoreConfig, Untagged,
};
use stowage_tests::{Subject, fixture, run_catalogue, shared_runtime};

fn scope() -> Scope {
    Scope::new("tenant-a", "user-1")
}

fn fs_and_sql() -> Grants {
    Grants::of(&[Capability::Filesystem, Capability::Sql])
}

async fn open(config: StoreConfig) -> anyhow::Result<Store> {
    Ok(shared_runtime()?.open_store(config).await?)
}

/// A conversation `c` with a tool call and its result, and its display records.
async fn write_history(store: &Store, text: &str) -> anyhow::Result<Vec<Message>> {
    let meta = ConversationMeta { title: Some(format!("title {text}")), ..ConversationMeta::default() };
    store.open(&scope(), "c", meta).await?;
    let batch = vec![
        NewMessage::text(Role::User, format!("question {text}")).with_id("m1"),
        NewMessage::new(
            Role::Assistant,
            vec![Part::text(format!("answer {text}")), Part::tool_call("call-1", "t", "{}")],
        )
        .with_id("m2"),
        NewMessage::new(Role::Tool, vec![Part::tool_result("call-1", format!("result {text}"), false)]).with_id("m3"),
    ];
    store.append(&scope(), "c", batch.clone(), None).await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    display.save_message(&scope(), &batch[1], &DisplayContext::new(None, "c")).await?;
    Ok(store.load_all(&scope(), "c").await?)
}

/// Every file under `dir` (links not followed).
fn files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let path = entry?.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            out.extend(files(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

/// The files under `dir` whose bytes contain `needle`.
fn containing(dir: &Path, needle: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for path in files(dir)? {
        let bytes = std::fs::read(&path)?;
        if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            found.push(path);
        }
    }
    Ok(found)
}

fn symlinks(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    Ok(files(dir)?
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_granted_filesystem_and_sql_cannot_reach_the_hosts_database() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let sqlite = open(StoreConfig::builtin(Builtin::Sqlite, &data).with_grants(fs_and_sql())).await?;
    let history = write_history(&sqlite, "private").await?;
    sqlite.close().await;
    let database = stowage::sql_database_path(&data);
    ensure!(database.starts_with(data.join("host")) && database.is_file(), "{}", database.display());
    ensure!(!database.starts_with(data.join("adapter")), "the database is inside the adapter's /data");

    // The hostile fixture, with both grants, over the same data directory: it
    // reads the database by its host path, symlinks to it from /data (by a
    // relative path, ../host/sql.sqlite3, which is where it lies), hard-links it,
    // and puts a symlink where earlier hosts kept their database.
    let hostile = StoreConfig::new("hostile", AdapterSource::File(fixture("hostile")), &data).with_grants(fs_and_sql());
    let hostile = open(hostile).await?;
    let id = format!("escape:{}|../host/sql.sqlite3", database.display());
    let report = match hostile.open(&scope(), &id, ConversationMeta::default()).await {
        Err(Error::AccessDenied(report)) => report,
        Err(Error::Storage(report)) if report.starts_with("ESCAPED") => bail!("escape: {report}"),
        other => bail!("unexpected outcome {other:?}"),
    };
    hostile.close().await;
    println!("attempts on the host's database, all refused: {report}");
    for attempt in [
        format!("read {}: ", database.display()),
        "symlink /data/hostile-link-sibling -> ../host/sql.sqlite3: not-permitted".to_owned(),
        "symlink /data/stowage.sqlite3 -> ../host/sql.sqlite3: not-permitted".to_owned(),
        "hard link /data/hostile-hardlink-database to `stowage.sqlite3`: not-permitted".to_owned(),
    ] {
        ensure!(report.contains(&attempt), "`{attempt}` missing from the report: {report}");
    }
    ensure!(symlinks(dir.path())?.is_empty(), "links left behind: {:?}", symlinks(dir.path())?);
    ensure!(files(&data.join("adapter"))?.is_empty(), "files left in /data: {:?}", files(&data.join("adapter"))?);

    let sqlite = open(StoreConfig::builtin(Builtin::Sqlite, &data).with_grants(fs_and_sql())).await?;
    ensure!(sqlite.load_all(&scope(), "c").await? == history, "the store's history changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_layout_whose_database_is_a_symlink_is_refused_at_open() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let victim = dir.path().join("victim");
    let victim_store = open(StoreConfig::builtin(Builtin::Sqlite, &victim)).await?;
    let history = write_history(&victim_store, "victim").await?;
    victim_store.close().await;
    let victim_db = stowage::sql_database_path(&victim);
    let before = std::fs::read(&victim_db)?;
    let outside = dir.path().join("outside.sqlite3");
    for (name, target) in [
        ("absolute", victim_db.clone()),
        ("relative", PathBuf::from("../victim/host/sql.sqlite3")),
        ("dangling", outside.clone()),
    ] {
        // The old host kept `stowage.sqlite3` at the top of the data directory,
        // where the adapter's files were too: an adapter could replace it.
        let old = dir.path().join(name);
        std::fs::create_dir(&old)?;
        std::os::unix::fs::symlink(&target, old.join("stowage.sqlite3"))?;
        match open(StoreConfig::builtin(Builtin::Sqlite, &old)).await {
            Err(e) => match e.downcast_ref::<Error>() {
                Some(Error::Config(reason)) => {
                    ensure!(reason.contains("stowage.sqlite3") && reason.contains("symbolic link"), "{name}: {reason}")
                }
                _ => bail!("{name}: expected a configuration error naming the link, got {e:#}"),
            },
            Ok(_) => bail!("{name}: a data directory whose database is a symlink was opened"),
        }
        ensure!(!stowage::sql_database_path(&old).exists(), "{name}: a database was created anyway");
    }
    ensure!(std::fs::read(&victim_db)? == before, "the other store's database changed");
    ensure!(!outside.exists(), "the host created a database outside the data directory");
    let victim_store = open(StoreConfig::builtin(Builtin::Sqlite, &victim)).await?;
    ensure!(victim_store.load_all(&scope(), "c").await? == history, "the victim's history changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_content_never_reaches_the_disk_in_the_clear() -> anyhow::Result<()> {
    for builtin in [Builtin::Sqlite, Builtin::Filesystem] {
        for seal in [true, false] {
            let dir = tempfile::tempdir()?;
            let data = dir.path().join("data");
            let integrity = Integrity { seal, ..Integrity::default() };
            let store = open(StoreConfig::builtin(builtin, &data).with_integrity(integrity)).await?;
            let marker = format!("plaintext-marker-{}", if seal { "sealed" } else { "plain" });
            let history = write_history(&store, &marker).await?;
            // It loads back exactly.
            let text: Vec<&Part> = history.iter().flat_map(|m| &m.parts).collect();
            ensure!(history.len() == 3 && text[0] == &Part::text(format!("question {marker}")), "{history:?}");
            ensure!(text[3] == &Part::tool_result("call-1", format!("result {marker}"), false), "{history:?}");
            let info = store.info(&scope(), "c").await?;
            ensure!(info.meta.title == Some(format!("title {marker}")), "{info:?}");
            let display = Display::persistent(store.clone(), DisplayOptions::default());
            let records = display.list(&scope(), "c", 0, 10).await?.records;
            ensure!(records[0].content.as_str().contains(&marker), "display content {records:?}");

            // Every file of the store, the host's database (and its WAL) included.
            ensure!(files(&data.join("host"))?.iter().any(|p| p.ends_with("store.keys")), "no host files?");
            let open_found = containing(&data, &marker)?;
            store.close().await;
            let closed_found = containing(&data, &marker)?;
            if seal {
                ensure!(
                    open_found.is_empty() && closed_found.is_empty(),
                    "{builtin:?}: plaintext in {open_found:?} {closed_found:?}"
                );
            } else {
                // The control: unsealed, the same search finds it (so it would find a leak).
                ensure!(!closed_found.is_empty(), "{builtin:?}: the search cannot see the store's content");
            }
        }
    }
    Ok(())
}

fn legacy_subject() -> Subject {
    Subject::file(fixture("legacy_sqlite_v0_1"), Grants::of(&[Capability::Sql]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_0_adapter_keeps_loading_and_passes_the_catalogue_unauthenticated() -> anyhow::Result<()> {
    let report = run_catalogue(&legacy_subject(), &shared_runtime()?).await;
    println!("{}", report.render());
    ensure!(report.passed(), "the 0.1.0 adapter failed the catalogue:\n{}", report.render());

    let dir = tempfile::tempdir()?;
    let legacy = StoreConfig::new("legacy", legacy_subject().source, dir.path()).with_grants(legacy_subject().grants);
    let store = open(legacy).await?;
    ensure!(store.contract_version() == "0.1.0", "{}", store.contract_version());
    write_history(&store, "old").await?;
    let page = store.load(&scope(), "c", stowage::LoadRequest::latest(10)).await?;
    ensure!(page.unverified == [1, 2, 3], "its records are reported unauthenticated: {:?}", page.unverified);
    // It cannot keep sealed records: refused at open, naming the version.
    let sealed = StoreConfig::new("legacy", legacy_subject().source, dir.path().join("sealed"))
        .with_grants(legacy_subject().grants)
        .with_integrity(Integrity { seal: true, ..Integrity::default() });
    match shared_runtime()?.open_store(sealed).await {
        Err(Error::Load(stowage::LoadError::ContractTooOld { version: "0.1.0", .. })) => {}
        other => bail!("a sealed store on a 0.1.0 adapter: {:?}", other.err()),
    }
    Ok(())
}

/// Moves a data directory of the current layout back into the old one: the
/// database at the top as `stowage.sqlite3`, no host-private directory, no keys.
fn to_old_layout(data: &Path) -> anyhow::Result<()> {
    let database = stowage::sql_database_path(data);
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", database.display()));
        if from.exists() {
            std::fs::rename(&from, data.join(format!("stowage.sqlite3{suffix}")))?;
        }
    }
    std::fs::remove_dir_all(data.join("host"))?;
    std::fs::remove_dir_all(data.join("adapter"))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_the_0_1_0_adapter_wrote_in_the_old_layout_opens_with_the_0_2_0_adapter() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let legacy = StoreConfig::new("legacy", legacy_subject().source, &data).with_grants(legacy_subject().grants);
    let store = open(legacy).await?;
    let history = write_history(&store, "from 0.1.0").await?;
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    let records = display.list(&scope(), "c", 0, 10).await?.records;
    store.close().await;
    to_old_layout(&data)?;

    // Default: untagged records are refused, with an error that names the switch.
    let store = open(StoreConfig::builtin(Builtin::Sqlite, &data)).await?;
    ensure!(stowage::sql_database_path(&data).is_file() && !data.join("stowage.sqlite3").exists(), "not adopted");
    match store.load(&scope(), "c", stowage::LoadRequest::latest(10)).await {
        Err(Error::Integrity { store: s, conversation, record, reason }) => {
            ensure!(s == "sqlite" && conversation == "c" && !record.is_empty(), "{record}");
            ensure!(reason.contains("untagged = \"accept\""), "the error must name the switch: {reason}");
        }
        other => bail!("an untagged record under `untagged = refuse`: {other:?}"),
    }
    store.close().await;

    // Accepted: everything reads back, reported as unverified.
    let accept = Integrity { untagged: Untagged::Accept, ..Integrity::default() };
    let store = open(StoreConfig::builtin(Builtin::Sqlite, &data).with_integrity(accept)).await?;
    ensure!(store.contract_version() == "0.2.0");
    ensure!(store.load_all(&scope(), "c").await? == history, "the history differs after the upgrade");
    let page = store.load(&scope(), "c", stowage::LoadRequest::latest(10)).await?;
    ensure!(page.unverified == [1, 2, 3], "unverified: {:?}", page.unverified);
    let info = store.info(&scope(), "c").await?;
    ensure!(info.meta.title.as_deref() == Some("title from 0.1.0") && info.last_seq == 3, "{info:?}");
    let listed = store.list(&scope(), None, 10).await?.conversations;
    ensure!(listed.len() == 1 && listed[0].id == "c", "{listed:?}");
    let display = Display::persistent(store.clone(), DisplayOptions::default());
    ensure!(display.list(&scope(), "c", 0, 10).await?.records == records, "display records differ");
    // New writes are tagged: the conversation continues after its old history.
    let out = store.append(&scope(), "c", vec![NewMessage::text(Role::User, "new")], None).await?;
    ensure!(out.seqs == [4], "{out:?}");
    let page = store.load(&scope(), "c", stowage::LoadRequest::latest(10)).await?;
    ensure!(page.unverified == [1, 2, 3] && page.messages.len() == 4, "{:?}", page.unverified);
    Ok(())
}

//! Links planted in a store's directories never lead the host (or the adapter)
//! to another store's data or to files outside.

use anyhow::{Context, bail, ensure};
use stowage::{Error, LoadRequest, Scope};

use super::{all_messages, numbered, opened, scope};
use crate::Ctx;

fn digest(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Every entry under `dir` with its size, links not followed.
fn tree(dir: &std::path::Path) -> anyhow::Result<Vec<(std::path::PathBuf, u64)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            out.extend(tree(&path)?);
        } else {
            out.push((path, meta.len()));
        }
    }
    out.sort();
    Ok(out)
}

/// A symlink to another store's database, one to a file outside, and a hard link
/// planted in this store's directories (as an adapter or a user might): the store
/// keeps working on its own data, the other store and the outside file are
/// untouched, and a symlink where the host keeps its own database is refused.
pub(crate) async fn planted_links_never_reach_another_store(ctx: &Ctx) -> anyhow::Result<()> {
    let (other, other_dir) = ctx.sibling_store("other-store").await?;
    opened(&other, &scope(), "theirs").await?;
    other.append(&scope(), "theirs", numbered("secret", 3), None).await?;
    other.close().await;
    let outside = ctx.scratch_dir().join("outside.txt");
    std::fs::write(&outside, b"outside the store")?;

    let data = ctx.data_dir();
    let adapter = data.join("adapter");
    let host = data.join("host");
    let other_db = stowage::sql_database_path(&other_dir);
    let mut planted = vec![("to-another-store", other_dir.clone()), ("to-outside", outside.clone())];
    if other_db.exists() {
        planted.push(("stowage.sqlite3", other_db.clone()));
    }
    for (name, target) in &planted {
        std::os::unix::fs::symlink(target, adapter.join(name))?;
    }
    std::fs::hard_link(&outside, adapter.join("hard-link"))?;
    let before = tree(&other_dir)?;
    let outside_before = digest(&outside)?;

    // The store's own history is unaffected by the links around it.
    let s = ctx.reopened_store().await?;
    opened(&s, &scope(), "mine").await?;
    s.append(&scope(), "mine", numbered("m", 2), None).await?;
    ensure!(all_messages(&s, &scope(), "mine").await?.len() == 2, "own history");
    let listed: Vec<String> = s.list(&scope(), None, 100).await?.conversations.into_iter().map(|c| c.id).collect();
    ensure!(!listed.contains(&"theirs".to_owned()), "another store's conversation is listed here: {listed:?}");
    match s.load(&scope(), "theirs", LoadRequest::latest(10)).await {
        Err(Error::NotFound) => {}
        other => bail!("another store's conversation is readable here: {other:?}"),
    }
    ensure!(digest(&outside)? == outside_before, "the outside file changed");
    ensure!(tree(&other_dir)? == before, "the other store's files changed");
    s.close().await;

    // The host's own directory never follows a link: a symlink in place of its
    // database is refused with an error that says so (a store on a database
    // server has no database file).
    let db = stowage::sql_database_path(&data);
    if ctx.subject.sql_url.is_none() && (db.exists() || ctx.subject.grants.contains(stowage::Capability::Sql)) {
        let _ = std::fs::remove_file(&db);
        std::os::unix::fs::symlink(&other_db, &db)?;
        let other_before = std::fs::read(&other_db).ok();
        let result = async {
            let s = ctx.reopened_store().await?;
            let r = s.info(&Scope::new("tenant-a", "user-1"), "theirs").await;
            s.close().await;
            anyhow::Ok(r)
        }
        .await;
        match result {
            Ok(Err(Error::Storage(reason))) => {
                ensure!(reason.to_lowercase().contains("database") || reason.contains("I/O"), "{reason}")
            }
            Ok(Err(Error::NotFound)) => bail!("the host followed a symlink to another store's database"),
            Ok(other) => bail!("a symlinked host database was used: {other:?}"),
            Err(e) => {
                ensure!(format!("{e:#}").contains("symbolic link") || format!("{e:#}").contains("database"), "{e:#}")
            }
        }
        ensure!(std::fs::read(&other_db).ok() == other_before, "the other store's database changed");
    }
    ensure!(host.is_dir(), "the host-private directory is missing");
    Ok(())
}

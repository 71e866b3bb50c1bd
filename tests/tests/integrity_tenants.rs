//! Tenant isolation (`Isolation::Tenant`): each tenant gets its own adapter
//! instances and its own data directory (`<data_dir>/tenants/…`), so no adapter
//! instance ever holds two tenants' data — even one that ignores the scope — and
//! the start-up sweep still visits every tenant.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use stowage::{
    AdapterSource, Builtin, Capability, ConversationMeta, Display, DisplayContext, DisplayOptions, Error, Grants,
    Isolation, Limits, LoadRequest, NewMessage, Part, Role, Scope, Store, StoreConfig, ToolInfo, ToolStatus,
};
use stowage_tests::{fixture, shared_runtime};

fn tenant(name: &str) -> Scope {
    Scope::new(name, "user-1")
}

/// Where the layout keeps a plainly named tenant.
fn tenant_dir(data: &Path, name: &str) -> PathBuf {
    data.join("tenants").join(format!("t-{name}"))
}

fn files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let path = entry?.path();
        if std::fs::symlink_metadata(&path)?.is_dir() {
            out.extend(files(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

fn holds(dir: &Path, needle: &str) -> anyhow::Result<bool> {
    for path in files(dir)? {
        if std::fs::read(&path)?.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            return Ok(true);
        }
    }
    Ok(false)
}

async fn isolated(builtin: Builtin, data: &Path) -> anyhow::Result<Store> {
    let config = StoreConfig::builtin(builtin, data).with_isolation(Isolation::Tenant);
    Ok(shared_runtime()?.open_store(config).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_gets_its_own_adapter_directory() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let store = isolated(Builtin::Filesystem, &data).await?;
    for name in ["acme", "globex"] {
        store.open(&tenant(name), "c", ConversationMeta::default()).await?;
        let text = NewMessage::text(Role::User, format!("{name}-only-data"));
        store.append(&tenant(name), "c", vec![text], None).await?;
    }
    for (name, other) in [("acme", "globex"), ("globex", "acme")] {
        let own = tenant_dir(&data, name);
        ensure!(std::fs::read_to_string(own.join("host/tenant"))? == name, "{name}'s directory is not labelled");
        ensure!(holds(&own.join("adapter"), &format!("{name}-only-data"))?, "{name}'s data is not in its directory");
        ensure!(!holds(&own, &format!("{other}-only-data"))?, "{name}'s directory holds {other}'s data");
        let page = store.load(&tenant(name), "c", LoadRequest::latest(10)).await?;
        ensure!(page.messages.len() == 1, "{name} sees {:?}", page.messages);
    }
    ensure!(files(&data.join("adapter"))?.is_empty(), "the shared adapter directory holds tenant data");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_ignores_the_scope_sees_only_its_own_tenant() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let config = StoreConfig::new("liar", AdapterSource::File(fixture("liar")), &data)
        .with_grants(Grants::of(&[Capability::Filesystem]))
        .with_limits(Limits { instances: 1, ..Limits::default() })
        .with_isolation(Isolation::Tenant);
    let store = shared_runtime()?.open_store(config).await?;
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    store.open(&a, "c", ConversationMeta::default()).await?;
    store.append(&a, "c", vec![NewMessage::text(Role::User, "a's message")], None).await?;
    let history = store.load_all(&a, "c").await?;
    store.open(&b, "own", ConversationMeta::default()).await?;
    // Both tenants' instances now lie: every lookup ignores the scope.
    for name in ["tenant-a", "tenant-b"] {
        std::fs::write(tenant_dir(&data, name).join("adapter/liar-mode"), "ignore-scope\n")?;
    }
    // B's instance never held A's conversation: there is nothing to hand over.
    let not_found = |op: &str, result: Result<String, Error>| match result {
        Err(Error::NotFound) => Ok(()),
        other => bail!("tenant B's {op} of A's conversation: expected not-found, got {other:?}"),
    };
    not_found("load", store.load(&b, "c", LoadRequest::latest(10)).await.map(|p| format!("{p:?}")))?;
    not_found("info", store.info(&b, "c").await.map(|i| format!("{i:?}")))?;
    let extra = vec![NewMessage::text(Role::User, "from b")];
    not_found("append", store.append(&b, "c", extra, None).await.map(|o| format!("{o:?}")))?;
    not_found("truncate", store.truncate_after(&b, "c", 0, None).await.map(|o| format!("{o:?}")))?;
    ensure!(!store.delete(&b, "c").await?, "tenant B deleted something");
    let listed: Vec<String> = store.list(&b, None, 10).await?.conversations.into_iter().map(|c| c.id).collect();
    ensure!(listed == ["own"], "tenant B lists {listed:?}");
    ensure!(store.load_all(&a, "c").await? == history, "A's history changed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_up_sweep_finds_stale_cards_of_every_tenant() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let names = ["acme", "globex", "initech"];
    {
        let store = isolated(Builtin::Sqlite, &data).await?;
        let display = Display::persistent(store.clone(), DisplayOptions::default());
        for name in names {
            let calling = NewMessage::new(Role::Assistant, vec![Part::tool_call(format!("{name}-call"), "t", "{}")]);
            display.save_message(&tenant(name), &calling, &DisplayContext::new(None, "c")).await?;
        }
        let info = ToolInfo::new("globex-call");
        display
            .update_tool_status(&tenant("globex"), ToolStatus::Executing, info, &DisplayContext::new(None, "c"))
            .await?;
        store.close().await;
    } // the process "dies" with every tenant's card pending or executing
    for name in names {
        ensure!(tenant_dir(&data, name).join("host/sql.sqlite3").is_file(), "{name} has no database of its own");
    }
    ensure!(!stowage::sql_database_path(&data).exists(), "a shared database was created");

    let store = isolated(Builtin::Sqlite, &data).await?;
    let (display, report) = Display::open(store, DisplayOptions::default()).await?;
    ensure!(report.interrupted == 3 && report.skipped == 0, "sweep: {report:?}");
    for name in names {
        let records = display.list(&tenant(name), "c", 0, 10).await?.records;
        match &records[..] {
            [card] => ensure!(card.status == Some(ToolStatus::Interrupted), "{name}: {card:?}"),
            other => bail!("{name}: {other:?}"),
        }
    }
    Ok(())
}

//! The README's "Embedding" snippet, run as-is: the lines between the `readme`
//! markers are the README's code block (`tests/tests/readme.rs` compares them).
//!
//! `cargo run -p stowage-examples --example embedding`

use stowage::{Builtin, ConversationMeta, LoadRequest, NewMessage, Role, Runtime, RuntimeConfig, Scope, StoreConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile_dir()?;
    std::env::set_current_dir(&dir)?;
    // readme:start
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let store = runtime.open_store(StoreConfig::builtin(Builtin::Sqlite, "./data")).await?;
    let scope = Scope::new("acme", "alice");
    store.open(&scope, "chat-1", ConversationMeta::default()).await?;
    store.append(&scope, "chat-1", vec![NewMessage::text(Role::User, "hello")], None).await?;
    let page = store.load(&scope, "chat-1", LoadRequest::latest(20)).await?;
    runtime.close().await; // closes its open stores, once their running calls are answered
    // readme:end
    anyhow::ensure!(page.messages.len() == 1, "expected the one message back, got {}", page.messages.len());
    println!("loaded {} message(s) from {}", page.messages.len(), dir.display());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// A fresh directory under the system's temporary directory.
fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("stowage-embedding-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

//! An in-process server on 127.0.0.1:0 over a SQLite store in a scratch
//! directory, with two tenants (`acme`, `beta`) and the HTTP client.

#![allow(dead_code)]

pub mod http;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;

use stowage::{Builtin, Runtime, RuntimeConfig, StoreConfig};
use stowage_server::config::TokenEntry;
use stowage_server::{Server, ServerConfig};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[allow(unused_imports)]
pub use self::http::{Client, Error, Event, Events, Reply, Result};

pub const TOKEN_ACME: &str = "acme-token-0123456789abcdef";
pub const TOKEN_BETA: &str = "beta-token-0123456789abcdef";

/// One engine for the whole test binary (adapters compile once).
pub fn runtime() -> Result<Runtime> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime.clone());
    }
    let runtime = Runtime::new(RuntimeConfig { cache_dir: None, ..RuntimeConfig::default() })?;
    Ok(RUNTIME.get_or_init(|| runtime).clone())
}

pub fn config() -> ServerConfig {
    ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        tokens: vec![
            TokenEntry { tenant: "acme".into(), hash: stowage_server::auth::hash_token(TOKEN_ACME) },
            TokenEntry { tenant: "beta".into(), hash: stowage_server::auth::hash_token(TOKEN_BETA) },
        ],
        ..ServerConfig::default()
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub config: ServerConfig,
    data: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::result::Result<(), stowage_server::ServeError>>>,
    _dir: Option<tempfile::TempDir>,
}

async fn launch(
    config: ServerConfig,
    data: PathBuf,
) -> Result<(SocketAddr, oneshot::Sender<()>, JoinHandle<std::result::Result<(), stowage_server::ServeError>>)> {
    let store = runtime()?.open_store(StoreConfig::builtin(Builtin::Sqlite, data)).await?;
    let server = Server::bind(config, store).await?;
    let addr = server.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    Ok((addr, stop, task))
}

impl TestServer {
    /// A server with the default test configuration changed by `tweak`.
    pub async fn start(tweak: impl FnOnce(&mut ServerConfig)) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut config = config();
        tweak(&mut config);
        let data = dir.path().join("data");
        let (addr, stop, task) = launch(config.clone(), data.clone()).await?;
        Ok(Self { addr, config, data, stop: Some(stop), task: Some(task), _dir: Some(dir) })
    }

    pub fn acme(&self) -> Client {
        Client::new(self.addr, Some(TOKEN_ACME))
    }

    pub fn beta(&self) -> Client {
        Client::new(self.addr, Some(TOKEN_BETA))
    }

    pub fn anonymous(&self) -> Client {
        Client::new(self.addr, None)
    }

    /// Graceful shutdown; waits until the store is closed.
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await??;
        }
        Ok(())
    }

    /// Stops and starts again on the same data (a new port).
    pub async fn restart(&mut self) -> Result<()> {
        self.stop().await?;
        let (addr, stop, task) = launch(self.config.clone(), self.data.clone()).await?;
        self.addr = addr;
        self.stop = Some(stop);
        self.task = Some(task);
        Ok(())
    }
}

/// `{"role":"user","parts":[{"type":"text","text":…}]}` (with an id when given).
pub fn text(role: &str, text: &str, id: Option<&str>) -> serde_json::Value {
    let mut message = serde_json::json!({ "role": role, "parts": [{ "type": "text", "text": text }] });
    if let Some(id) = id {
        message["id"] = serde_json::json!(id);
    }
    message
}

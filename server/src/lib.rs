//! `stowage serve`: a [`stowage::Store`] and its display persistence over HTTP/JSON.
//!
//! Every conversation-store and display operation is a route under `/v1/`
//! (listed in the checked-in OpenAPI 3.1 document, `/v1/openapi.json`); display
//! changes stream as Server-Sent Events per conversation or per scope and resume
//! from `Last-Event-ID`; `/healthz` and `/metrics` (Prometheus text) are open.
//!
//! ```no_run
//! # async fn demo(store: stowage::Store) -> Result<(), stowage_server::ServeError> {
//! let config = stowage_server::ServerConfig::load(Some(std::path::Path::new("stowage.toml")))?;
//! let server = stowage_server::Server::bind(config, store).await?;
//! println!("listening on {}", server.local_addr());
//! server.run(stowage_server::shutdown::signal()).await?;
//! # Ok(()) }
//! ```
//!
//! Modules by concern: `config` (the `[server]` table), `auth` (tokens → tenant,
//! user header → scope), `limits` (body cap, per-tenant caps, timeout), `errors`
//! (stable codes), `extract`, `idempotency`, `format` (the `?format=` seam),
//! `routes/*` (handlers), `events` (replay buffers, SSE), `metrics`, `openapi`,
//! `listen` (accept loop), `tls` (feature `tls`), `shutdown`.

pub mod auth;
pub mod config;
pub mod errors;
pub mod events;
pub mod extract;
pub mod format;
pub mod idempotency;
pub mod limits;
mod listen;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod shutdown;
mod state;
#[cfg(feature = "tls")]
mod tls;

use std::future::Future;
use std::net::SocketAddr;

use stowage::{Display, DisplayOptions, Store};
use tokio::net::TcpListener;

pub use crate::auth::{USER_HEADER, token_hash_hex};
pub use crate::config::{ConfigError, ServerConfig};
pub use crate::state::AppState;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("TLS: {0}")]
    Tls(String),
    #[error(transparent)]
    Store(#[from] stowage::Error),
}

/// Display events the display may buffer for the fan-out task before it lags
/// (a lag is reported on every stream as `events_lost`, never skipped silently).
const DISPLAY_EVENT_CAPACITY: usize = 65_536;

/// A bound server, ready to [`run`](Server::run).
pub struct Server {
    config: ServerConfig,
    store: Store,
    state: AppState,
    flag: shutdown::Flag,
    listener: TcpListener,
    local_addr: SocketAddr,
}

impl Server {
    /// Checks the configuration, opens display persistence (with its start-up
    /// sweep, unless the store's database is shared with other hosts) and binds
    /// the listener.
    pub async fn bind(config: ServerConfig, store: Store) -> Result<Self, ServeError> {
        if config.tokens.is_empty() {
            return Err(ServeError::Config(ConfigError(
                "no bearer tokens are configured: add `[[server.tokens]]` (tenant + sha256) or `server.token_file`"
                    .into(),
            )));
        }
        #[cfg(not(feature = "tls"))]
        if config.tls.is_some() {
            return Err(ServeError::Config(ConfigError(
                "`[server.tls]` is set, but this build has no TLS (build with the `tls` feature)".into(),
            )));
        }
        let options = DisplayOptions { event_capacity: DISPLAY_EVENT_CAPACITY, ..DisplayOptions::default() };
        let display = Display::persistent(store.clone(), options);
        if display.is_shared() {
            // Other hosts may be running the tools the sweep would mark interrupted.
            tracing::info!("start-up display sweep skipped: the store's database is shared with other hosts");
        } else {
            let sweep = display.sweep().await?;
            if sweep.interrupted > 0 || sweep.skipped > 0 {
                tracing::info!(
                    interrupted = sweep.interrupted,
                    skipped = sweep.skipped,
                    "display sweep after start-up"
                );
            }
        }
        let (flag, watch) = shutdown::Flag::new();
        let state = AppState::new(&config, store.clone(), display, watch);
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|source| ServeError::Bind { addr: config.listen, source })?;
        let local_addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: config.listen, source })?;
        Ok(Self { config, store, state, flag, listener, local_addr })
    }

    /// The bound address (the real port when listening on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `https` with TLS configured, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.config.tls.is_some() { "https" } else { "http" }
    }

    /// Serves until `stop` resolves (use [`shutdown::signal`] for SIGTERM), then
    /// shuts down gracefully: no new connections, event streams end, requests in
    /// flight finish (at most `drain_timeout`), and the store is closed.
    pub async fn run(self, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
        let Self { config, store, state, flag, listener, .. } = self;
        let fan_out = tokio::spawn(state.hub().run(state.display(), state.metrics_handle()));
        let listening = listen::Listening {
            listener,
            router: routes::router(state.clone()),
            header_read_timeout: config.limits.header_read_timeout,
            max_connections: config.limits.max_connections,
            #[cfg(feature = "tls")]
            tls: match &config.tls {
                Some(files) => Some(tls::acceptor(files).map_err(ServeError::Tls)?),
                None => None,
            },
        };
        let graceful = listening.run(stop).await;
        flag.raise();
        tracing::info!("draining {} connection(s)", graceful.count());
        if tokio::time::timeout(config.limits.drain_timeout, graceful.shutdown()).await.is_err() {
            tracing::warn!("connections still open after {:?}; closing the store anyway", config.limits.drain_timeout);
        }
        fan_out.abort();
        drop(state);
        store.close().await;
        tracing::info!("store closed; bye");
        Ok(())
    }
}

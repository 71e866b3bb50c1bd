//! The `sql` capability on a PostgreSQL server: tokio-postgres connections in a
//! deadpool pool, one pool per store (`sql = { url = "postgres://…" }`).
//!
//! - [`Server`]: the store's pool and the settings every connection gets.
//! - [`PgConnection`] (`connection`): an instance's connection, pinned for a
//!   transaction; the [`Connection`](super::Connection) implementation.
//! - `ops`: the round trips of one statement (prepare cached per connection, bind,
//!   run, read rows up to the cap); `bind`/`decode`/`time`: values in and out;
//!   `errors`: SQLSTATEs as contract errors; `guard`: statements refused; `tls`.
//!
//! **Threads.** Adapter calls run on tokio's blocking pool and issue SQL
//! synchronously. The connections' I/O runs on a small runtime of the host's own
//! ([`runtime`], two worker threads, shared by every store of the process); a
//! call blocks its thread on that runtime (`Runtime::block_on`, fine on a
//! blocking-pool thread, never called from an async task). So PostgreSQL I/O
//! never depends on the embedder's runtime flavour or on its workers being free.
//!
//! **No deadlock when the pool is exhausted.** An instance holds at most one
//! connection at a time (its pinned one, or one borrowed for a single statement),
//! and each wait is bounded: for a pooled connection by the busy timeout (then
//! `busy`), for a connection to be made by `connect_timeout`, for any answer by
//! the statement timeout plus a margin (then the connection is discarded and the
//! statement fails with `io`). The pool holds `instances` connections, so it only
//! runs dry while a hot swap runs two generations side by side.
//!
//! **Settings.** Each connection starts with `statement_timeout` = the call
//! deadline, `lock_timeout` = the busy timeout and
//! `idle_in_transaction_session_timeout` = both together (a host that froze
//! holding a transaction releases its row locks to the others), given as startup
//! options before any the URL sets (the URL's win). `application_name` defaults
//! to `stowage`, `connect_timeout` to 10 s, TCP keepalives to 30 s idle and the TCP
//! user timeout to 30 s, unless the URL says otherwise.
//!
//! **Reconnecting.** Broken connections are discarded and new ones made on
//! demand, so once the server is reachable again the next statement simply works.

mod bind;
mod config;
mod connection;
mod decode;
mod errors;
mod guard;
mod ops;
#[cfg(test)]
mod tests;
mod time;
mod tls;

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use deadpool_postgres::{Object, Pool, PoolError, Runtime, TimeoutType};
use tokio_postgres::Config;
use tokio_postgres::config::Host;

pub use self::config::{server_database, settings as server_settings};
pub use self::connection::PgConnection;
use self::errors::OpError;
use crate::wit::SqlErrorKind;

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);
/// tokio-postgres' own keepalive idle default, i.e. "the URL did not say".
const DEFAULT_KEEPALIVE_IDLE: Duration = Duration::from_secs(2 * 60 * 60);
/// Slack on top of the statement timeout before the host stops waiting.
const ANSWER_MARGIN: Duration = Duration::from_secs(5);

/// What a store's limits ask of its server connections.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Pool size: the store's adapter instances.
    pub max_connections: u32,
    /// `lock_timeout`, and the wait for a pooled connection.
    pub busy_timeout: Duration,
    /// `statement_timeout`: the adapter call's deadline.
    pub statement_timeout: Duration,
}

/// The runtime that drives every PostgreSQL connection of the process.
fn runtime() -> Result<&'static tokio::runtime::Runtime, SqlErrorKind> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("stowage-postgres")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| SqlErrorKind::Io(format!("starting the PostgreSQL I/O runtime failed: {e}")))
}

/// A store's PostgreSQL server: its pool of connections.
pub struct Server {
    pool: Pool,
    /// `host:port/database`, for messages (never the user or password).
    location: String,
    /// How long the host waits for any one answer.
    answer_timeout: Duration,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("location", &self.location).finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> u128 {
    d.as_millis()
}

/// `host:port/database` of `config`.
fn location(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(dir) => format!("{}:{port}", dir.display()),
            }
        })
        .collect();
    format!("{}/{}", hosts.join(","), config.get_dbname().unwrap_or(""))
}

impl Server {
    /// A pool for the server at `url` (a `postgres://` URL or `key=value`
    /// settings). Connects lazily: an unreachable server fails statements, not
    /// this. Fails on a URL that does not parse or asks for TLS this build lacks.
    pub fn open(url: &str, settings: &Settings) -> Result<Self, String> {
        let (url, root_cert) = tls::take_extras(url);
        let mut config: Config =
            url.parse().map_err(|e| format!("`sql.url` is not a PostgreSQL connection string: {e}"))?;
        if config.get_hosts().is_empty() {
            return Err("`sql.url` names no server host".into());
        }
        if config.get_application_name().is_none() {
            config.application_name("stowage");
        }
        let connect_timeout = config.get_connect_timeout().copied().unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        config.connect_timeout(connect_timeout);
        if config.get_keepalives_idle() == DEFAULT_KEEPALIVE_IDLE {
            config.keepalives_idle(KEEPALIVE_IDLE);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        let (statement, busy) = (settings.statement_timeout, settings.busy_timeout);
        let ours = format!(
            "-c statement_timeout={} -c lock_timeout={} -c idle_in_transaction_session_timeout={}",
            millis(statement),
            millis(busy),
            millis(statement + busy)
        );
        let options = match config.get_options() {
            Some(theirs) => format!("{ours} {theirs}"),
            None => ours,
        };
        config.options(options);
        let location = location(&config);
        let pool = Pool::builder(tls::manager(config, root_cert)?)
            .max_size(settings.max_connections.max(1) as usize)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(busy.max(Duration::from_secs(1))))
            .create_timeout(Some(connect_timeout + Duration::from_secs(1)))
            .recycle_timeout(Some(Duration::from_secs(5)))
            .build()
            .map_err(|e| format!("setting up the connection pool for {location}: {e}"))?;
        tracing::debug!(server = %location, "PostgreSQL pool ready");
        Ok(Self { pool, location, answer_timeout: statement + busy + ANSWER_MARGIN })
    }

    /// Where the server is, for messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// A connection from the pool, for the host's own async work (the display
    /// event journal). Made on the PostgreSQL runtime, so it outlives the
    /// caller's; usable from any runtime.
    pub async fn connection(&self) -> Result<Object, String> {
        let pool = self.pool.clone();
        let got = runtime().map_err(|e| format!("{e:?}"))?.spawn(async move { pool.get().await });
        match got.await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(format!("no connection to the database server {}: {e}", self.location)),
            Err(e) => Err(format!("the PostgreSQL runtime failed: {e}")),
        }
    }
}

/// Runs `task` on the PostgreSQL runtime, where it keeps running whatever
/// runtime the caller has; the handle aborts nothing when dropped.
pub fn spawn<F>(task: F) -> Result<tokio::task::JoinHandle<F::Output>, String>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Ok(runtime().map_err(|e| format!("{e:?}"))?.spawn(task))
}

impl Server {
    /// Runs `op` to completion on the PostgreSQL runtime, giving up on the
    /// connection if no answer comes in time. Call from a blocking thread only.
    fn block_on<T>(&self, op: impl Future<Output = Result<T, OpError>>) -> Result<T, OpError> {
        let runtime = runtime().map_err(OpError::host)?;
        let limit = self.answer_timeout;
        runtime.block_on(async move {
            match tokio::time::timeout(limit, op).await {
                Ok(result) => result,
                Err(_) => Err(OpError::lost(format!(
                    "no answer from the database server {} within {} s",
                    self.location,
                    limit.as_secs()
                ))),
            }
        })
    }

    /// A connection from the pool (made if needed).
    fn checkout(&self) -> Result<Object, SqlErrorKind> {
        let got = runtime()?.block_on(self.pool.get());
        got.map_err(|e| match e {
            PoolError::Timeout(TimeoutType::Wait) => SqlErrorKind::Busy,
            PoolError::Timeout(TimeoutType::Create) => {
                SqlErrorKind::Io(format!("connecting to the database server {} timed out", self.location))
            }
            PoolError::Backend(e) => errors::connect_failed(&self.location, &e),
            other => SqlErrorKind::Io(format!("no connection to the database server {}: {other}", self.location)),
        })
    }
}

//! The accept loop: TCP (or TLS) connections served as HTTP/1.1 by hyper.
//!
//! Not `axum::serve`, for three things it does not do: a header read timeout
//! (a client that never finishes its request head is dropped instead of holding
//! a connection forever), a cap on open connections (beyond it the loop waits
//! before accepting), and TLS handshakes inside each connection's own task (so
//! a slow handshake delays nobody else).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

#[cfg(feature = "tls")]
use crate::tls::Acceptor;

/// How long a TLS handshake may take.
#[cfg(feature = "tls")]
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the loop needs.
pub struct Listening {
    pub listener: TcpListener,
    pub router: Router,
    pub header_read_timeout: Duration,
    pub max_connections: u32,
    #[cfg(feature = "tls")]
    pub tls: Option<Acceptor>,
}

async fn serve_connection<I>(io: I, router: Router, header_read_timeout: Duration, watcher: Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        router.clone().oneshot(request.map(Body::new))
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_read_timeout).keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    if let Err(e) = watcher.watch(connection).await {
        tracing::debug!("connection ended with an error: {e}");
    }
}

impl Listening {
    /// Accepts until `stop` resolves, then returns the connections' shutdown
    /// handle (call `shutdown()` on it to finish them gracefully).
    pub async fn run(self, stop: impl Future<Output = ()>) -> GracefulShutdown {
        let graceful = GracefulShutdown::new();
        let slots = Arc::new(Semaphore::new(self.max_connections as usize));
        tokio::pin!(stop);
        loop {
            let slot = tokio::select! {
                slot = Arc::clone(&slots).acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => break,
                },
                () = &mut stop => break,
            };
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut stop => break,
            };
            let (tcp, _peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let (router, timeout, watcher) = (self.router.clone(), self.header_read_timeout, graceful.watcher());
            #[cfg(feature = "tls")]
            let tls = self.tls.clone();
            tokio::spawn(async move {
                let _slot = slot;
                #[cfg(feature = "tls")]
                if let Some(acceptor) = tls {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => serve_connection(stream, router, timeout, watcher).await,
                        Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!("TLS handshake timed out"),
                    }
                    return;
                }
                serve_connection(tcp, router, timeout, watcher).await;
            });
        }
        graceful
    }
}

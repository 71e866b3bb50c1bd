//! Graceful shutdown: on SIGTERM (or SIGINT) the server stops accepting
//! connections, tells event streams to end, lets requests in flight finish (at
//! most `drain_timeout`), and only then closes the store with `Store::close`,
//! which itself waits for running store calls.

use tokio::sync::watch;

/// Resolves on the first SIGTERM or SIGINT. If a handler cannot be installed it
/// is logged and that signal is not waited for (the other still is).
pub async fn signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for SIGINT: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}

/// The flag handlers and streams watch.
pub struct Flag {
    tx: watch::Sender<bool>,
}

impl Flag {
    pub fn new() -> (Self, watch::Receiver<bool>) {
        let (tx, rx) = watch::channel(false);
        (Self { tx }, rx)
    }

    /// Raises the flag (idempotent).
    pub fn raise(&self) {
        self.tx.send_replace(true);
    }
}

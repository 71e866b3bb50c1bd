//! What every handler shares: the store, its display persistence, the token
//! table, the limits, metrics, the event buffers and the shutdown flag.

use std::sync::Arc;
use std::time::Duration;

use stowage::{Display, Store};
use tokio::sync::watch;

use crate::auth::Tokens;
use crate::config::{EventOptions, ServerConfig, ServerLimits};
use crate::events::EventHub;
use crate::limits::TenantGates;
use crate::metrics::Metrics;

/// Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    display: Display,
    tokens: Tokens,
    limits: ServerLimits,
    events: EventOptions,
    request_gates: TenantGates,
    stream_gates: TenantGates,
    metrics: Arc<Metrics>,
    hub: EventHub,
    shutdown: watch::Receiver<bool>,
}

impl AppState {
    pub fn new(config: &ServerConfig, store: Store, display: Display, shutdown: watch::Receiver<bool>) -> Self {
        let inner = Inner {
            metrics: Arc::new(Metrics::new(&store)),
            store,
            display,
            tokens: Tokens::new(&config.tokens),
            limits: config.limits.clone(),
            events: config.events.clone(),
            request_gates: TenantGates::new(config.limits.tenant_concurrency),
            stream_gates: TenantGates::new(config.limits.tenant_streams),
            hub: EventHub::new(config.events.clone()),
            shutdown,
        };
        Self { inner: Arc::new(inner) }
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn display(&self) -> &Display {
        &self.inner.display
    }

    pub fn tokens(&self) -> &Tokens {
        &self.inner.tokens
    }

    pub fn limits(&self) -> &ServerLimits {
        &self.inner.limits
    }

    pub fn keep_alive(&self) -> Duration {
        self.inner.events.keep_alive
    }

    pub fn request_gates(&self) -> &TenantGates {
        &self.inner.request_gates
    }

    pub fn stream_gates(&self) -> &TenantGates {
        &self.inner.stream_gates
    }

    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub fn metrics_handle(&self) -> Arc<Metrics> {
        Arc::clone(&self.inner.metrics)
    }

    pub fn hub(&self) -> &EventHub {
        &self.inner.hub
    }

    pub fn shutdown(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.clone()
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.inner.shutdown.borrow()
    }
}

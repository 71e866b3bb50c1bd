//! `/metrics`: Prometheus text (OpenMetrics 1.0), through `prometheus-client`.
//!
//! - `stowage_store_calls_total{store,operation}`: every store or display call.
//! - `stowage_store_errors_total{store,operation,code}`: failed calls, by API code.
//! - `stowage_store_call_duration_seconds{store,operation}`: latency histogram.
//! - `stowage_http_requests_total{route,method,status}`: responses by route
//!   template (never the raw path, so ids do not become labels).
//! - `stowage_http_rejected_total{reason}`: limits hit (concurrency, streams, timeout).
//! - `stowage_event_streams`, `stowage_events_published_total`,
//!   `stowage_events_lost_total`: SSE streams open, events buffered, `events_lost`
//!   notices sent.
//! - `stowage_adapter_status{store}` (0 healthy, 1 degraded, 2 unhealthy) and the
//!   adapter's own counters (`stowage_adapter_{calls,errors,traps,timeouts,
//!   memory_limit_hits,restarts,refused}_total{store}`), read at scrape time.
//!
//! Tenants and users are never labels (unbounded, and not the operator's to see).

use std::future::Future;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use stowage::{HealthStatus, Store};

use crate::errors::{ApiError, Code};
use crate::state::AppState;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    store: String,
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    store: String,
    operation: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabel {
    store: String,
}

type HistogramFamily = Family<OpLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 0.5 ms … ~16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The registry and the handles the server updates.
pub struct Metrics {
    store: String,
    registry: Registry,
    calls: Family<OpLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    latency: HistogramFamily,
    http: Family<HttpLabels, Counter>,
    rejected: Family<ReasonLabels, Counter>,
    streams: Gauge,
    published: Counter,
    lost: Counter,
}

/// Adapter health and counters, read from the store at scrape time.
struct AdapterCollector {
    store: Store,
}

impl std::fmt::Debug for AdapterCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterCollector").field("store", &self.store.name()).finish()
    }
}

impl Collector for AdapterCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let health = self.store.health();
        let label = StoreLabel { store: self.store.name().to_owned() };
        let status: i64 = match health.status {
            HealthStatus::Healthy => 0,
            HealthStatus::Degraded { .. } => 1,
            HealthStatus::Unhealthy { .. } => 2,
        };
        let gauge = ConstGauge::new(status);
        let help = "Adapter health: 0 healthy, 1 degraded (recent failures), 2 unhealthy (calls refused)";
        let mut metric = encoder.encode_descriptor("stowage_adapter_status", help, None, gauge.metric_type())?;
        gauge.encode(metric.encode_family(&label)?)?;
        let s = &health.stats;
        for (name, help, value) in [
            ("stowage_adapter_calls", "Calls made to the adapter", s.calls),
            ("stowage_adapter_errors", "Adapter calls that failed", s.errors),
            ("stowage_adapter_traps", "Adapter traps (instance discarded)", s.traps),
            ("stowage_adapter_timeouts", "Adapter calls past their deadline", s.timeouts),
            ("stowage_adapter_memory_limit_hits", "Adapter memory cap hits", s.memory_limit_hits),
            ("stowage_adapter_restarts", "Adapter instances replaced after a failure", s.restarts),
            ("stowage_adapter_refused", "Calls refused while the store was unhealthy", s.refused),
        ] {
            let counter = ConstCounter::new(value);
            let mut metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric.encode_family(&label)?)?;
        }
        Ok(())
    }
}

impl Metrics {
    pub fn new(store: &Store) -> Self {
        let mut registry = Registry::default();
        let calls = Family::<OpLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let latency: HistogramFamily = Family::new_with_constructor(latency_histogram);
        let http = Family::<HttpLabels, Counter>::default();
        let rejected = Family::<ReasonLabels, Counter>::default();
        let (streams, published, lost) = (Gauge::default(), Counter::default(), Counter::default());
        registry.register("stowage_store_calls", "Store and display operations called", calls.clone());
        registry.register("stowage_store_errors", "Store and display operations that failed, by code", errors.clone());
        registry.register("stowage_store_call_duration_seconds", "Latency of store operations", latency.clone());
        registry.register("stowage_http_requests", "HTTP responses by route template and status", http.clone());
        registry.register("stowage_http_rejected", "Requests refused by a limit", rejected.clone());
        registry.register("stowage_event_streams", "Server-sent event streams open", streams.clone());
        registry.register("stowage_events_published", "Display events put into replay buffers", published.clone());
        registry.register("stowage_events_lost", "events_lost notices sent to streams", lost.clone());
        registry.register_collector(Box::new(AdapterCollector { store: store.clone() }));
        Self {
            store: store.name().to_owned(),
            registry,
            calls,
            errors,
            latency,
            http,
            rejected,
            streams,
            published,
            lost,
        }
    }

    /// Runs one store operation, counting it, timing it and mapping its error.
    pub async fn store_call<T>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, stowage::Error>>,
    ) -> Result<T, ApiError> {
        let labels = OpLabels { store: self.store.clone(), operation };
        let started = Instant::now();
        let result = call.await;
        self.latency.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
        self.calls.get_or_create(&labels).inc();
        result.map_err(|e| {
            let e = ApiError::from(e);
            self.error(operation, e.code);
            e
        })
    }

    /// Counts a failed operation that never reached the store (bad input found
    /// by the server).
    pub fn error(&self, operation: &'static str, code: Code) {
        let labels = ErrorLabels { store: self.store.clone(), operation, code: code.as_str() };
        self.errors.get_or_create(&labels).inc();
    }

    pub fn rejected(&self, reason: &'static str) {
        self.rejected.get_or_create(&ReasonLabels { reason }).inc();
    }

    pub fn stream_opened(&self) {
        self.streams.inc();
    }

    pub fn stream_closed(&self) {
        self.streams.dec();
    }

    pub fn event_published(&self) {
        self.published.inc();
    }

    pub fn events_lost(&self) {
        self.lost.inc();
    }

    /// The exposition text.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// Middleware (outermost): counts every response by route template and status.
pub async fn count_requests(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_owned(), |p| p.as_str().into());
    let method = match request.method().as_str() {
        m @ ("GET" | "PUT" | "POST" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS") => m.to_owned(),
        _ => "other".to_owned(),
    };
    let response = next.run(request).await;
    let labels = HttpLabels { route, method, status: response.status().as_u16() };
    state.metrics().http.get_or_create(&labels).inc();
    response
}

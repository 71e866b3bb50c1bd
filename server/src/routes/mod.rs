//! The router: one table of every route ([`table`]), the middleware stack, and
//! the unauthenticated endpoints (`/healthz`, `/metrics`, `/v1/openapi.json`).
//!
//! Every route is added through [`Table::add`], which records its method and
//! path as it registers the handler; the OpenAPI test compares that record with
//! the checked-in document (and probes the live router), so a route cannot be
//! served without being documented or documented without being served.
//!
//! Middleware, outermost first: request counting (metrics) → for `/v1` data
//! routes: bearer token → per-tenant concurrency cap → request timeout → handler.

pub mod conversations;
pub mod display;
pub mod events;
pub mod messages;

use axum::Router;
use axum::extract::State;
use axum::handler::Handler;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use serde::Serialize;

use crate::auth::require_token;
use crate::errors::{ApiError, Code};
use crate::limits::{tenant_concurrency, timeout};
use crate::metrics::count_requests;
use crate::openapi;
use crate::state::AppState;

/// A route as registered: method and path template (`{name}` parameters).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteInfo {
    pub method: Method,
    pub path: &'static str,
    /// Whether the route needs a bearer token.
    pub authenticated: bool,
}

/// Routes under construction, with the record of what was added.
pub struct Table {
    router: Router<AppState>,
    routes: Vec<RouteInfo>,
    authenticated: bool,
}

impl Table {
    fn new(authenticated: bool) -> Self {
        Self { router: Router::new(), routes: Vec::new(), authenticated }
    }

    /// Registers `handler` for `verb` on `path` and records it.
    pub fn add<H, T>(mut self, verb: Verb, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, on(verb.filter(), handler));
        self.routes.push(RouteInfo { method: verb.method(), path, authenticated: self.authenticated });
        self
    }
}

/// The methods routes use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    Put,
    Post,
    Patch,
    Delete,
}

impl Verb {
    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Put => MethodFilter::PUT,
            Verb::Post => MethodFilter::POST,
            Verb::Patch => MethodFilter::PATCH,
            Verb::Delete => MethodFilter::DELETE,
        }
    }

    fn method(self) -> Method {
        match self {
            Verb::Get => Method::GET,
            Verb::Put => Method::PUT,
            Verb::Post => Method::POST,
            Verb::Patch => Method::PATCH,
            Verb::Delete => Method::DELETE,
        }
    }
}

fn public() -> Table {
    Table::new(false).add(Verb::Get, "/healthz", healthz).add(Verb::Get, "/metrics", metrics).add(
        Verb::Get,
        "/v1/openapi.json",
        openapi_document,
    )
}

fn authenticated() -> Table {
    let table = Table::new(true);
    let table = conversations::routes(table);
    let table = messages::routes(table);
    let table = display::routes(table);
    events::routes(table)
}

/// Every route the server serves.
pub fn table() -> Vec<RouteInfo> {
    let mut routes = public().routes;
    routes.extend(authenticated().routes);
    routes
}

/// The whole application.
pub fn router(state: AppState) -> Router {
    let data = authenticated()
        .router
        .route_layer(from_fn_with_state(state.clone(), timeout))
        .route_layer(from_fn_with_state(state.clone(), tenant_concurrency))
        .route_layer(from_fn_with_state(state.clone(), require_token));
    public()
        .router
        .merge(data)
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state(state.clone(), count_requests))
        .with_state(state)
}

async fn no_route() -> ApiError {
    ApiError::new(Code::NoRoute, "no such route; see /v1/openapi.json")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(Code::MethodNotAllowed, "this route does not take that method; see /v1/openapi.json")
}

#[derive(Serialize)]
struct HealthBody {
    status: &'static str,
    store: String,
    adapter: stowage::HealthStatus,
    contract_version: &'static str,
}

/// 200 while the store takes calls (healthy or degraded), 503 when it refuses
/// them or the server is shutting down. No authentication; no tenant data.
async fn healthz(State(state): State<AppState>) -> Response {
    let health = state.store().health();
    let unhealthy = matches!(health.status, stowage::HealthStatus::Unhealthy { .. });
    let status = if state.is_shutting_down() {
        "shutting_down"
    } else if unhealthy {
        "unhealthy"
    } else {
        "ok"
    };
    let code = if status == "ok" { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = HealthBody {
        status,
        store: state.store().name().to_owned(),
        adapter: health.status,
        contract_version: health.contract_version,
    };
    (code, axum::Json(body)).into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    match state.metrics().render() {
        Ok(text) => {
            let mut response = text.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            );
            response
        }
        Err(_) => ApiError::new(Code::Internal, "encoding metrics failed").into_response(),
    }
}

async fn openapi_document() -> Response {
    let mut response = openapi::DOCUMENT.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

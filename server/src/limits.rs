//! Limits: the request body cap, the per-tenant concurrency caps, the request
//! timeout.
//!
//! - Body: a body longer than `max_body_bytes` is refused with 413
//!   `payload_too_large`, by its `Content-Length` before reading, or as soon as a
//!   chunked body passes the cap (see [`read_body`]).
//! - Concurrency: each tenant may have `tenant_concurrency` requests in flight;
//!   one more is answered at once with **429** `too_many_requests` and
//!   `Retry-After: 1` (never queued: a queue would only move the wait into the
//!   client's timeout). 429, not 503, because it is this tenant's own load — the
//!   server is fine and other tenants are served. Event streams count against a
//!   separate cap, `tenant_streams` (also 429), held for the stream's life.
//! - Timeout: a handler that runs longer than `request_timeout` answers 504
//!   `timeout`. Store operations run as tasks of their own, so the operation
//!   still finishes (or not) as a whole; a client that retries an append with
//!   the same ids or `Idempotency-Key` cannot store it twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::CONTENT_LENGTH;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Tenant;
use crate::errors::{ApiError, Code};
use crate::state::AppState;

/// One semaphore per tenant, created on first use (tenants come from the token
/// table, so there are finitely many).
#[derive(Default)]
pub struct TenantGates {
    permits: u32,
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl TenantGates {
    pub fn new(permits: u32) -> Self {
        Self { permits, gates: Mutex::new(HashMap::new()) }
    }

    /// A permit for `tenant`, or `None` when all of its permits are taken.
    pub fn try_acquire(&self, tenant: &str) -> Option<OwnedSemaphorePermit> {
        let gate = {
            // A poisoned lock only means another thread panicked while inserting;
            // the map itself is still usable.
            let mut gates = self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(
                gates.entry(tenant.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.permits as usize))),
            )
        };
        gate.try_acquire_owned().ok()
    }
}

/// Middleware (after authentication): the per-tenant request cap.
pub async fn tenant_concurrency(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(tenant) = request.extensions().get::<Tenant>().cloned() else {
        return ApiError::new(Code::Unauthorized, "not authenticated").into_response();
    };
    let Some(_permit) = state.request_gates().try_acquire(&tenant.0) else {
        state.metrics().rejected("tenant_concurrency");
        return ApiError::new(
            Code::TooManyRequests,
            format!("this tenant already has {} requests in flight; retry shortly", state.limits().tenant_concurrency),
        )
        .into_response();
    };
    next.run(request).await
}

/// A permit to hold an event stream open for `tenant`.
pub fn stream_permit(state: &AppState, tenant: &str) -> Result<OwnedSemaphorePermit, ApiError> {
    state.stream_gates().try_acquire(tenant).ok_or_else(|| {
        state.metrics().rejected("tenant_streams");
        ApiError::new(
            Code::TooManyRequests,
            format!("this tenant already has {} event streams open", state.limits().tenant_streams),
        )
    })
}

/// Middleware: answers 504 when the handler takes longer than `request_timeout`.
pub async fn timeout(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let limit = state.limits().request_timeout;
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            state.metrics().rejected("request_timeout");
            ApiError::new(
                Code::Timeout,
                format!(
                    "the request took longer than {limit:?}; the operation may still complete — retry with the same \
                     message ids or Idempotency-Key"
                ),
            )
            .into_response()
        }
    }
}

fn too_large(max: usize) -> ApiError {
    ApiError::new(Code::PayloadTooLarge, format!("the request body exceeds the limit of {max} bytes"))
}

/// Reads a whole body of at most `max` bytes.
pub async fn read_body(headers: &axum::http::HeaderMap, body: Body, max: usize) -> Result<Bytes, ApiError> {
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large(max));
    }
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large(max)),
        Err(e) => Err(ApiError::new(Code::InvalidInput, format!("reading the request body failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_count_per_tenant() {
        let gates = TenantGates::new(2);
        let a1 = gates.try_acquire("a");
        let a2 = gates.try_acquire("a");
        assert!(a1.is_some() && a2.is_some());
        assert!(gates.try_acquire("a").is_none(), "a third request of `a` is refused");
        assert!(gates.try_acquire("b").is_some(), "other tenants are not affected");
        drop(a1);
        assert!(gates.try_acquire("a").is_some(), "a finished request frees its permit");
    }
}

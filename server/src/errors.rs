//! Errors as JSON: `{"error":{"code":"not_found","message":"…"}}`.
//!
//! Every [`stowage::Error`] variant maps to one stable machine `code` and one HTTP
//! status ([`ApiError::from`]); the server's own refusals (authentication, limits,
//! bad requests) have codes of their own ([`Code`]). Input the server or the store
//! rejects is always a 4xx: a 5xx means the adapter, its storage or the server
//! failed. Codes are part of the API (listed in the OpenAPI document) and never
//! change meaning; messages are for humans and may change.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The stable machine codes. `as_str` is what goes on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    // From stowage::Error.
    NotFound,
    Conflict,
    InvalidInput,
    InvalidCursor,
    Unsupported,
    Storage,
    InvalidTransition,
    AccessDenied,
    Integrity,
    AdapterTimeout,
    AdapterMemoryLimit,
    AdapterTrap,
    ContractViolation,
    Unhealthy,
    SwapRejected,
    Overloaded,
    AdapterLoad,
    Config,
    Closed,
    Internal,
    // The server's own.
    Unauthorized,
    NoRoute,
    MethodNotAllowed,
    InvalidJson,
    UnsupportedMediaType,
    PayloadTooLarge,
    TooManyRequests,
    Timeout,
    UnsupportedFormat,
    InvalidIdempotencyKey,
    InvalidLastEventId,
    ShuttingDown,
}

impl Code {
    /// Every code, for the OpenAPI test (each must be documented).
    pub const ALL: [Code; 32] = [
        Code::NotFound,
        Code::Conflict,
        Code::InvalidInput,
        Code::InvalidCursor,
        Code::Unsupported,
        Code::Storage,
        Code::InvalidTransition,
        Code::AccessDenied,
        Code::Integrity,
        Code::AdapterTimeout,
        Code::AdapterMemoryLimit,
        Code::AdapterTrap,
        Code::ContractViolation,
        Code::Unhealthy,
        Code::SwapRejected,
        Code::Overloaded,
        Code::AdapterLoad,
        Code::Config,
        Code::Closed,
        Code::Internal,
        Code::Unauthorized,
        Code::NoRoute,
        Code::MethodNotAllowed,
        Code::InvalidJson,
        Code::UnsupportedMediaType,
        Code::PayloadTooLarge,
        Code::TooManyRequests,
        Code::Timeout,
        Code::UnsupportedFormat,
        Code::InvalidIdempotencyKey,
        Code::InvalidLastEventId,
        Code::ShuttingDown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::NotFound => "not_found",
            Code::Conflict => "conflict",
            Code::InvalidInput => "invalid_input",
            Code::InvalidCursor => "invalid_cursor",
            Code::Unsupported => "unsupported",
            Code::Storage => "storage",
            Code::InvalidTransition => "invalid_transition",
            Code::AccessDenied => "access_denied",
            Code::Integrity => "integrity",
            Code::AdapterTimeout => "adapter_timeout",
            Code::AdapterMemoryLimit => "adapter_memory_limit",
            Code::AdapterTrap => "adapter_trap",
            Code::ContractViolation => "contract_violation",
            Code::Unhealthy => "unhealthy",
            Code::SwapRejected => "swap_rejected",
            Code::Overloaded => "overloaded",
            Code::AdapterLoad => "adapter_load",
            Code::Config => "config",
            Code::Closed => "closed",
            Code::Internal => "internal",
            Code::Unauthorized => "unauthorized",
            Code::NoRoute => "no_route",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::InvalidJson => "invalid_json",
            Code::UnsupportedMediaType => "unsupported_media_type",
            Code::PayloadTooLarge => "payload_too_large",
            Code::TooManyRequests => "too_many_requests",
            Code::Timeout => "timeout",
            Code::UnsupportedFormat => "unsupported_format",
            Code::InvalidIdempotencyKey => "invalid_idempotency_key",
            Code::InvalidLastEventId => "invalid_last_event_id",
            Code::ShuttingDown => "shutting_down",
        }
    }

    /// The HTTP status the code is sent with.
    pub fn status(self) -> StatusCode {
        match self {
            Code::NotFound | Code::NoRoute => StatusCode::NOT_FOUND,
            Code::Conflict | Code::InvalidTransition => StatusCode::CONFLICT,
            Code::InvalidInput
            | Code::InvalidCursor
            | Code::InvalidJson
            | Code::UnsupportedFormat
            | Code::InvalidIdempotencyKey
            | Code::InvalidLastEventId => StatusCode::BAD_REQUEST,
            Code::Unsupported => StatusCode::NOT_IMPLEMENTED,
            Code::AccessDenied => StatusCode::FORBIDDEN,
            Code::Unauthorized => StatusCode::UNAUTHORIZED,
            Code::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Code::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Code::AdapterTimeout | Code::Timeout => StatusCode::GATEWAY_TIMEOUT,
            Code::Unhealthy | Code::Overloaded | Code::Closed | Code::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Code::Storage
            | Code::Integrity
            | Code::AdapterMemoryLimit
            | Code::AdapterTrap
            | Code::ContractViolation
            | Code::SwapRejected
            | Code::AdapterLoad
            | Code::Config
            | Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Whether a client may retry the same request later (sent as `Retry-After`).
    fn retry_after(self) -> Option<u32> {
        match self {
            Code::TooManyRequests | Code::Overloaded | Code::ShuttingDown => Some(1),
            Code::Unhealthy => Some(5),
            _ => None,
        }
    }
}

/// An error response.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// Extra machine-readable fields (`expected`/`actual` of a conflict, …).
    pub details: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), details: None }
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<stowage::Error> for ApiError {
    fn from(e: stowage::Error) -> Self {
        use stowage::Error as E;
        let message = e.to_string();
        let (code, details) = match &e {
            E::NotFound => (Code::NotFound, None),
            E::Conflict { expected, actual } => {
                (Code::Conflict, Some(serde_json::json!({ "expected": expected, "actual": actual })))
            }
            E::InvalidInput(_) => (Code::InvalidInput, None),
            E::InvalidCursor => (Code::InvalidCursor, None),
            E::Unsupported(_) => (Code::Unsupported, None),
            E::Storage(_) => (Code::Storage, None),
            E::InvalidTransition { from, to } => {
                (Code::InvalidTransition, Some(serde_json::json!({ "from": from, "to": to })))
            }
            E::AccessDenied(_) => (Code::AccessDenied, None),
            E::Integrity { .. } => (Code::Integrity, None),
            E::Timeout { .. } => (Code::AdapterTimeout, None),
            E::MemoryLimit { .. } => (Code::AdapterMemoryLimit, None),
            E::Trap { .. } => (Code::AdapterTrap, None),
            E::ContractViolation { .. } => (Code::ContractViolation, None),
            E::Unhealthy { .. } => (Code::Unhealthy, None),
            E::SwapRejected { .. } => (Code::SwapRejected, None),
            E::Overloaded { .. } => (Code::Overloaded, None),
            E::Load(_) => (Code::AdapterLoad, None),
            E::Config(_) => (Code::Config, None),
            E::Closed { .. } => (Code::Closed, None),
            E::Internal(_) => (Code::Internal, None),
            // `stowage::Error` is non-exhaustive: a variant added later is a 500
            // until it gets a code of its own.
            _ => (Code::Internal, None),
        };
        if code.status().is_server_error() {
            tracing::warn!(code = code.as_str(), "store call failed: {message}");
        }
        Self { code, message, details }
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    error: Body<'a>,
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a serde_json::Value>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let envelope = Envelope {
            error: Body { code: self.code.as_str(), message: &self.message, details: self.details.as_ref() },
        };
        // Serialising a struct of strings and a JSON value cannot fail; fall back
        // to a fixed body rather than panic if it ever does.
        let body = serde_json::to_vec(&envelope)
            .unwrap_or_else(|_| br#"{"error":{"code":"internal","message":"error encoding failed"}}"#.to_vec());
        let mut response = (self.code.status(), body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(seconds) = self.code.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.code == Code::Unauthorized {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response.extensions_mut().insert(self.code);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_bad_input_is_never_a_server_error() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()), "{code:?} duplicated");
        }
        for code in [
            Code::InvalidInput,
            Code::InvalidCursor,
            Code::InvalidJson,
            Code::PayloadTooLarge,
            Code::UnsupportedFormat,
            Code::InvalidIdempotencyKey,
            Code::InvalidLastEventId,
            Code::UnsupportedMediaType,
            Code::NotFound,
            Code::Conflict,
            Code::InvalidTransition,
        ] {
            assert!(code.status().is_client_error(), "{code:?}");
        }
    }

    #[test]
    fn store_errors_map_to_stable_codes() {
        let cases = [
            (stowage::Error::NotFound, "not_found", 404),
            (stowage::Error::Conflict { expected: 1, actual: 2 }, "conflict", 409),
            (stowage::Error::InvalidInput("x".into()), "invalid_input", 400),
            (stowage::Error::InvalidCursor, "invalid_cursor", 400),
            (stowage::Error::Closed { store: "s".into() }, "closed", 503),
            (stowage::Error::Storage("disk".into()), "storage", 500),
        ];
        for (error, code, status) in cases {
            let api = ApiError::from(error);
            assert_eq!((api.code.as_str(), api.code.status().as_u16()), (code, status));
        }
        let conflict = ApiError::from(stowage::Error::Conflict { expected: 1, actual: 2 });
        assert_eq!(conflict.details, Some(serde_json::json!({ "expected": 1, "actual": 2 })));
    }
}

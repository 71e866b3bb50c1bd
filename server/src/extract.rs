//! Extractors whose rejections are API errors (axum's own answer in plain text).
//!
//! - [`JsonBody`]: `Content-Type: application/json` (or `…+json`), at most
//!   `max_body_bytes`, decoded straight from the bytes so JSON-valued fields keep
//!   their exact text; a decoding error names the field (`messages[2].role: …`).
//! - [`MaybeJson`]: the same, but an empty body is the default value.
//! - [`ApiPath`], [`ApiQuery`]: axum's, with 400 `invalid_input` on failure.

use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::errors::{ApiError, Code};
use crate::limits::read_body;
use crate::state::AppState;

/// A JSON request body decoded into `T`.
pub struct JsonBody<T>(pub T);

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Decodes `bytes` as one JSON value of type `T`, naming the failing field.
pub fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path == "." { inner.to_string() } else { format!("{path}: {inner}") };
        ApiError::new(Code::InvalidJson, message)
    })?;
    deserializer.end().map_err(|e| ApiError::new(Code::InvalidJson, format!("trailing characters: {e}")))?;
    Ok(value)
}

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        let content_type = parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if !is_json(content_type) {
            return Err(ApiError::new(Code::UnsupportedMediaType, "the request body must be `application/json`"));
        }
        let bytes = read_body(&parts.headers, body, state.limits().max_body_bytes).await?;
        decode_json(&bytes).map(JsonBody)
    }
}

/// A JSON body that may be left out (an empty body is `T::default()`).
pub struct MaybeJson<T>(pub T);

impl<T: DeserializeOwned + Default> FromRequest<AppState> for MaybeJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        let bytes = read_body(&parts.headers, body, state.limits().max_body_bytes).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(MaybeJson(T::default()));
        }
        let content_type = parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if !is_json(content_type) {
            return Err(ApiError::new(Code::UnsupportedMediaType, "the request body must be `application/json`"));
        }
        decode_json(&bytes).map(MaybeJson)
    }
}

/// Path parameters.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| ApiPath(value))
            .map_err(|e| ApiError::new(Code::InvalidInput, format!("path: {}", e.body_text())))
    }
}

/// Query parameters.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| ApiQuery(value))
            .map_err(|e| ApiError::new(Code::InvalidInput, format!("query: {}", e.body_text())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/vnd.stowage+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json(""));
    }

    #[test]
    fn decoding_errors_name_the_field() {
        #[derive(serde::Deserialize, Debug)]
        struct Outer {
            #[allow(dead_code)]
            items: Vec<Inner>,
        }
        #[derive(serde::Deserialize, Debug)]
        struct Inner {
            #[allow(dead_code)]
            n: u32,
        }
        let e = decode_json::<Outer>(br#"{"items":[{"n":1},{"n":"x"}]}"#).map(|_| ()).unwrap_err();
        assert_eq!(e.code, Code::InvalidJson);
        assert!(e.message.starts_with("items[1].n:"), "{}", e.message);
        let e = decode_json::<Outer>(br#"{"items":[]} x"#).map(|_| ()).unwrap_err();
        assert!(e.message.contains("trailing"), "{}", e.message);
    }
}

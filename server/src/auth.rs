//! Bearer tokens, each bound to one tenant, and the scope of a request.
//!
//! The server keeps only SHA-256 hashes of tokens. A request's tenant always
//! comes from its token, never from the request; the user comes from the
//! `Stowage-User` header (UTF-8; absent: the empty user). A missing, malformed or
//! unknown token is 401 `unauthorized`, with the same message for each, so the
//! answer does not tell which tokens exist. Another tenant's conversation is
//! simply not in the caller's scope, so it answers exactly like a missing one.

use std::collections::HashMap;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use stowage::Scope;

use crate::config::TokenEntry;
use crate::errors::{ApiError, Code};
use crate::state::AppState;

/// The header that names the user within the token's tenant.
pub const USER_HEADER: &str = "stowage-user";

/// SHA-256 of a bearer token.
pub type TokenHash = [u8; 32];

/// SHA-256 of `token`.
pub fn hash_token(token: &str) -> TokenHash {
    Sha256::digest(token.as_bytes()).into()
}

/// Lower-case hex SHA-256 of `token`: what goes into `[[server.tokens]] sha256`.
pub fn token_hash_hex(token: &str) -> String {
    hash_token(token).iter().map(|b| format!("{b:02x}")).collect()
}

/// 64 hex digits, either case.
pub fn parse_hex_hash(hex: &str) -> Option<TokenHash> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The token table: hash → tenant.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    by_hash: HashMap<TokenHash, String>,
}

impl Tokens {
    pub fn new(entries: &[TokenEntry]) -> Self {
        Self { by_hash: entries.iter().map(|e| (e.hash, e.tenant.clone())).collect() }
    }

    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// Every tenant some token is bound to.
    pub fn tenants(&self) -> impl Iterator<Item = &str> {
        self.by_hash.values().map(String::as_str)
    }

    /// The tenant of `Authorization: Bearer <token>`.
    fn tenant_of(&self, header: Option<&str>) -> Option<&str> {
        let token = header?.strip_prefix("Bearer ").or_else(|| header?.strip_prefix("bearer "))?.trim();
        if token.is_empty() {
            return None;
        }
        // A hash-map lookup by the token's hash: timing depends only on the hash.
        self.by_hash.get(&hash_token(token)).map(String::as_str)
    }
}

/// The authenticated tenant of a request (set by [`require_token`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant(pub String);

/// Middleware: 401 unless the request carries a known bearer token.
pub async fn require_token(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let header = request.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    let Some(tenant) = state.tokens().tenant_of(header) else {
        return ApiError::new(Code::Unauthorized, "a valid `Authorization: Bearer <token>` header is required")
            .into_response();
    };
    let tenant = Tenant(tenant.to_owned());
    request.extensions_mut().insert(tenant);
    next.run(request).await
}

/// The scope of a request: the token's tenant and the `Stowage-User` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller(pub Scope);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let tenant = parts.extensions.get::<Tenant>().ok_or_else(|| {
            ApiError::new(Code::Unauthorized, "a valid `Authorization: Bearer <token>` header is required")
        })?;
        let user = match parts.headers.get(USER_HEADER) {
            None => "",
            Some(value) => std::str::from_utf8(value.as_bytes())
                .map_err(|_| ApiError::new(Code::InvalidInput, "the Stowage-User header must be UTF-8"))?,
        };
        Ok(Caller(Scope::new(tenant.0.clone(), user)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_resolve_only_by_exact_bearer() {
        let entry = TokenEntry { tenant: "acme".into(), hash: hash_token("s3cret-token-0001") };
        let tokens = Tokens::new(&[entry]);
        assert_eq!(tokens.tenant_of(Some("Bearer s3cret-token-0001")), Some("acme"));
        assert_eq!(tokens.tenant_of(Some("Bearer s3cret-token-0002")), None);
        assert_eq!(tokens.tenant_of(Some("Basic s3cret-token-0001")), None);
        assert_eq!(tokens.tenant_of(Some("Bearer ")), None);
        assert_eq!(tokens.tenant_of(None), None);
    }

    #[test]
    fn hex_hashes_round_trip() {
        let hex = token_hash_hex("abc");
        assert_eq!(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(parse_hex_hash(&hex), Some(hash_token("abc")));
        assert_eq!(parse_hex_hash(&hex.to_uppercase()), Some(hash_token("abc")));
        assert_eq!(parse_hex_hash("zz"), None);
        assert_eq!(parse_hex_hash(&"é".repeat(32)), None);
    }
}

//! `Idempotency-Key`: retry-safe appends for batches whose messages carry no id.
//!
//! Appends are idempotent by message id: a message whose id is already stored in
//! the conversation is not stored again and keeps its seq. A client that does not
//! choose ids sends `Idempotency-Key: <key>` instead, and every message of the
//! batch without an id gets a deterministic one:
//!
//! ```text
//! id = "idem-" + hex(SHA-256(len‖tenant ‖ len‖user ‖ len‖conversation ‖ len‖key))[..32] + "-" + index
//! ```
//!
//! where `len‖x` is x's byte length as 8 bytes big-endian followed by x (so no two
//! different inputs hash the same bytes), and `index` is the message's position
//! in the batch (0-based, decimal). A retry of the same batch with the same key
//! after a lost response derives the same ids, so the store finds them stored and
//! answers with their original seqs (`stored: 0`): nothing is stored twice. The
//! key is scoped to the conversation: the same key in another conversation (or
//! scope) derives other ids. Messages that carry their own id keep it.
//!
//! A key identifies one batch. Reusing it for a different batch stores only the
//! positions that were never stored (`stored` in the response says how many); the
//! server does not compare bodies. Keys never expire: the ids are the record.

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};
use stowage::{NewMessage, Scope};

use crate::errors::{ApiError, Code};

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// Longest accepted key.
pub const MAX_KEY_BYTES: usize = 255;

/// The key of a request, if any: 1 to 255 visible ASCII characters.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(HEADER) else { return Ok(None) };
    let invalid = || {
        ApiError::new(
            Code::InvalidIdempotencyKey,
            format!("Idempotency-Key must be 1 to {MAX_KEY_BYTES} visible ASCII characters"),
        )
    };
    let text = value.to_str().map_err(|_| invalid())?;
    if text.is_empty() || text.len() > MAX_KEY_BYTES || !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid());
    }
    Ok(Some(text.to_owned()))
}

fn framed(hasher: &mut Sha256, part: &str) {
    hasher.update((part.len() as u64).to_be_bytes());
    hasher.update(part.as_bytes());
}

/// The id prefix a key derives in one conversation.
pub fn prefix(scope: &Scope, conversation: &str, key: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [scope.tenant.as_str(), scope.user.as_str(), conversation, key] {
        framed(&mut hasher, part);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("idem-{hex}")
}

/// Gives every message without an id its derived id.
pub fn assign_ids(scope: &Scope, conversation: &str, key: &str, messages: &mut [NewMessage]) {
    let prefix = prefix(scope, conversation, key);
    for (index, message) in messages.iter_mut().enumerate() {
        if message.id.is_none() {
            message.id = Some(format!("{prefix}-{index}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stowage::Role;

    #[test]
    fn ids_are_deterministic_per_key_conversation_and_scope() {
        let scope = Scope::new("acme", "alice");
        let batch = || vec![NewMessage::text(Role::User, "a"), NewMessage::text(Role::User, "b").with_id("mine")];
        let (mut first, mut retry) = (batch(), batch());
        assign_ids(&scope, "c1", "k-1", &mut first);
        assign_ids(&scope, "c1", "k-1", &mut retry);
        assert_eq!(first, retry);
        assert_eq!(first[1].id.as_deref(), Some("mine"), "own ids are kept");
        let id = first[0].id.clone().unwrap_or_default();
        assert!(id.starts_with("idem-") && id.ends_with("-0") && id.len() == 5 + 32 + 2, "{id}");
        assert_ne!(prefix(&scope, "c2", "k-1"), prefix(&scope, "c1", "k-1"));
        assert_ne!(prefix(&Scope::new("other", "alice"), "c1", "k-1"), prefix(&scope, "c1", "k-1"));
        // Length framing: moving a boundary changes the hash.
        assert_ne!(prefix(&Scope::new("ab", "c"), "x", "k"), prefix(&Scope::new("a", "bc"), "x", "k"));
    }

    #[test]
    fn keys_are_checked() {
        let mut headers = HeaderMap::new();
        assert_eq!(key(&headers).ok(), Some(None));
        headers.insert(HEADER, axum::http::HeaderValue::from_static("retry-7"));
        assert_eq!(key(&headers).ok(), Some(Some("retry-7".to_owned())));
        headers.insert(HEADER, axum::http::HeaderValue::from_static("has space"));
        assert_eq!(key(&headers).map_err(|e| e.code), Err(Code::InvalidIdempotencyKey));
    }
}

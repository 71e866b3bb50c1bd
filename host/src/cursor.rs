//! Opaque paging cursors. A cursor names a position and is bound to the listing it
//! came from by a checksum, so a cursor from another conversation, scope or
//! listing, or an edited one, is refused with `invalid-cursor`. (Scope is still
//! checked on every call: the checksum is about mistakes, not security.)

use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::model::Scope;
use crate::util::hex;

/// Where a message page continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessagePosition {
    /// Older messages: seq strictly less than this.
    Before(u64),
    /// Newer messages: seq strictly greater than this.
    After(u64),
}

fn tag(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex::encode(&hasher.finalize()[..8])
}

pub fn encode_message(scope: &Scope, conversation_id: &str, position: MessagePosition) -> String {
    let (dir, seq) = match position {
        MessagePosition::Before(seq) => ("b", seq),
        MessagePosition::After(seq) => ("a", seq),
    };
    let seq = seq.to_string();
    let tag = tag(&[
        b"m1",
        scope.tenant.as_bytes(),
        scope.user.as_bytes(),
        conversation_id.as_bytes(),
        dir.as_bytes(),
        seq.as_bytes(),
    ]);
    format!("m1.{dir}{seq}.{tag}")
}

pub fn decode_message(scope: &Scope, conversation_id: &str, cursor: &str) -> Result<MessagePosition, Error> {
    let rest = cursor.strip_prefix("m1.").ok_or(Error::InvalidCursor)?;
    let (position, _) = rest.split_once('.').ok_or(Error::InvalidCursor)?;
    let (dir, seq) = position.split_at_checked(1).ok_or(Error::InvalidCursor)?;
    let seq: u64 = seq.parse().map_err(|_| Error::InvalidCursor)?;
    let decoded = match dir {
        "b" => MessagePosition::Before(seq),
        "a" => MessagePosition::After(seq),
        _ => return Err(Error::InvalidCursor),
    };
    if encode_message(scope, conversation_id, decoded) != cursor {
        return Err(Error::InvalidCursor);
    }
    Ok(decoded)
}

pub fn encode_list(scope: &Scope, last_id: &str) -> String {
    let id = hex::encode(last_id.as_bytes());
    let tag = tag(&[b"l1", scope.tenant.as_bytes(), scope.user.as_bytes(), id.as_bytes()]);
    format!("l1.{id}.{tag}")
}

pub fn decode_list(scope: &Scope, cursor: &str) -> Result<String, Error> {
    let rest = cursor.strip_prefix("l1.").ok_or(Error::InvalidCursor)?;
    let (id_hex, _) = rest.split_once('.').ok_or(Error::InvalidCursor)?;
    let bytes = hex::decode(id_hex).ok_or(Error::InvalidCursor)?;
    let id = String::from_utf8(bytes).map_err(|_| Error::InvalidCursor)?;
    if encode_list(scope, &id) != cursor {
        return Err(Error::InvalidCursor);
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_tampering_and_reuse() {
        let scope = Scope::new("t", "u");
        let c = encode_message(&scope, "conv", MessagePosition::Before(42));
        assert_eq!(decode_message(&scope, "conv", &c).ok(), Some(MessagePosition::Before(42)));
        assert!(decode_message(&scope, "other", &c).is_err());
        assert!(decode_message(&Scope::new("t", "v"), "conv", &c).is_err());
        assert!(decode_message(&scope, "conv", &c.replace("b42", "b41")).is_err());
        assert!(decode_message(&scope, "conv", "garbage").is_err());
        let l = encode_list(&scope, "日本");
        assert_eq!(decode_list(&scope, &l).ok().as_deref(), Some("日本"));
        assert!(decode_list(&Scope::new("x", "u"), &l).is_err());
        assert!(decode_list(&scope, "l1.aéb.x").is_err(), "non-ASCII must not panic");
    }
}

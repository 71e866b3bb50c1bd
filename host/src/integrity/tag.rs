//! Integrity tags: a keyed MAC (HMAC-SHA256, truncated to 128 bits) over a
//! record's bytes and its binding — what it is, whose it is, where it sits.
//!
//! Tag format: `[1][key id: u32 BE][16 MAC bytes]`. The key id lets keys rotate
//! without rewriting history: a record verifies with the key it names.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Version byte of the tag format.
const FORMAT: u8 = 1;
/// MAC bytes kept (HMAC-SHA256 truncated, as RFC 2104 §5 allows).
const MAC_LEN: usize = 16;
/// Length of a tag.
pub const TAG_LEN: usize = 1 + 4 + MAC_LEN;

/// Canonical, unambiguous bytes of a record's binding: each field is a kind byte
/// then its length-prefixed bytes, so no two different bindings encode the same.
#[derive(Default)]
pub struct Binding {
    bytes: Vec<u8>,
}

impl Binding {
    /// A binding for records of `domain` (e.g. `"stowage/message/v1"`).
    pub fn new(domain: &str) -> Self {
        // A message's binding (eight fields, a UUID among them) is ~170 bytes.
        let mut binding = Self { bytes: Vec::with_capacity(256) };
        binding.push(b'd', domain.as_bytes());
        binding
    }

    fn push(&mut self, kind: u8, bytes: &[u8]) {
        self.bytes.push(kind);
        self.bytes.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        self.bytes.extend_from_slice(bytes);
    }

    pub fn text(mut self, value: &str) -> Self {
        self.push(b's', value.as_bytes());
        self
    }

    pub fn optional(mut self, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.push(b's', value.as_bytes()),
            None => self.bytes.push(b'n'),
        }
        self
    }

    pub fn number(mut self, value: u64) -> Self {
        self.push(b'u', &value.to_be_bytes());
        self
    }

    pub fn signed(mut self, value: i64) -> Self {
        self.push(b'i', &value.to_be_bytes());
        self
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A MAC key with its id, pre-keyed so each tag costs one clone.
#[derive(Clone)]
pub struct MacKey {
    id: u32,
    mac: Hmac<Sha256>,
}

impl MacKey {
    pub fn new(id: u32, key: &[u8; 32]) -> Self {
        // A 32-byte key is always a valid HMAC key.
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
        Self { id, mac }
    }

    fn mac(&self, binding: &Binding, payload: &[u8]) -> [u8; MAC_LEN] {
        let mut mac = self.mac.clone();
        mac.update(binding.bytes());
        mac.update(&(payload.len() as u64).to_be_bytes());
        mac.update(payload);
        let full = mac.finalize().into_bytes();
        let mut out = [0u8; MAC_LEN];
        out.copy_from_slice(&full[..MAC_LEN]);
        out
    }

    /// The tag of `payload` under `binding`.
    pub fn tag(&self, binding: &Binding, payload: &[u8]) -> Vec<u8> {
        let mut tag = Vec::with_capacity(TAG_LEN);
        tag.push(FORMAT);
        tag.extend_from_slice(&self.id.to_be_bytes());
        tag.extend_from_slice(&self.mac(binding, payload));
        tag
    }

    /// Whether `tag` is this key's tag of `payload` under `binding` (constant time).
    pub fn verify(&self, tag: &[u8], binding: &Binding, payload: &[u8]) -> bool {
        tag.len() == TAG_LEN && tag[5..].ct_eq(&self.mac(binding, payload)).into()
    }
}

/// The key id a tag names, if it is a well-formed tag.
pub fn key_id(tag: &[u8]) -> Option<u32> {
    match tag {
        [FORMAT, a, b, c, d, ..] if tag.len() == TAG_LEN => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(conversation: &str, seq: u64) -> Binding {
        Binding::new("test").text("tenant").text(conversation).number(seq)
    }

    #[test]
    fn a_tag_verifies_only_for_its_key_binding_and_bytes() {
        let key = MacKey::new(7, &[1; 32]);
        let tag = key.tag(&binding("c", 1), b"payload");
        assert_eq!(key_id(&tag), Some(7));
        assert!(key.verify(&tag, &binding("c", 1), b"payload"));
        assert!(!key.verify(&tag, &binding("c", 2), b"payload"), "another seq");
        assert!(!key.verify(&tag, &binding("d", 1), b"payload"), "another conversation");
        assert!(!key.verify(&tag, &binding("c", 1), b"payloaD"), "other bytes");
        assert!(!MacKey::new(7, &[2; 32]).verify(&tag, &binding("c", 1), b"payload"), "another key");
        assert!(!key.verify(&tag[..10], &binding("c", 1), b"payload"), "a cut tag");
    }

    #[test]
    fn bindings_are_unambiguous() {
        let ab_c = Binding::new("x").text("ab").text("c");
        let a_bc = Binding::new("x").text("a").text("bc");
        assert_ne!(ab_c.bytes(), a_bc.bytes());
        assert_ne!(Binding::new("x").optional(None).bytes(), Binding::new("x").optional(Some("")).bytes());
    }
}

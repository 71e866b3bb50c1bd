//! Sealed content: XChaCha20-Poly1305 under per-tenant keys derived from the
//! store key (HKDF-SHA256), with the record's binding as associated data, so a
//! sealed blob moved to another tenant, conversation or message fails to open.
//!
//! Format: `[codec::SEALED][key id: u32 BE][24-byte random nonce][ciphertext + 16-byte tag]`.

use chacha20poly1305::aead::Aead;
use chacha20poly1305::aead::Payload;
use chacha20poly1305::{KeyInit, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use sha2::Sha256;

use super::codec::SEALED;
use super::tag::Binding;

const NONCE_LEN: usize = 24;
const HEADER_LEN: usize = 1 + 4 + NONCE_LEN;

/// The sealing key of one tenant under one store key.
pub struct SealKey {
    id: u32,
    cipher: XChaCha20Poly1305,
}

impl SealKey {
    /// Derives `tenant`'s key from the store key `master` (id `id`).
    pub fn derive(id: u32, master: &[u8; 32], tenant: &str) -> Result<Self, String> {
        let mut key = [0u8; 32];
        let mut info = b"stowage seal v1\0".to_vec();
        info.extend_from_slice(tenant.as_bytes());
        Hkdf::<Sha256>::new(Some(b"stowage"), master)
            .expand(&info, &mut key)
            .map_err(|e| format!("deriving a sealing key: {e}"))?;
        let cipher = XChaCha20Poly1305::new_from_slice(&key).map_err(|e| format!("sealing key: {e}"))?;
        Ok(Self { id, cipher })
    }

    /// Encrypts `plain` bound to `binding`.
    pub fn seal(&self, binding: &Binding, plain: &[u8]) -> Result<Vec<u8>, String> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| format!("no randomness for a nonce: {e}"))?;
        let sealed = self
            .cipher
            .encrypt(&XNonce::from(nonce), Payload { msg: plain, aad: binding.bytes() })
            .map_err(|_| "sealing failed".to_owned())?;
        let mut out = Vec::with_capacity(HEADER_LEN + sealed.len());
        out.push(SEALED);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Decrypts a sealed blob bound to `binding`.
    pub fn open(&self, binding: &Binding, sealed: &[u8]) -> Result<Vec<u8>, String> {
        if sealed.len() < HEADER_LEN {
            return Err("sealed content is truncated".into());
        }
        let nonce = XNonce::try_from(&sealed[5..HEADER_LEN]).map_err(|_| "bad nonce".to_owned())?;
        self.cipher
            .decrypt(&nonce, Payload { msg: &sealed[HEADER_LEN..], aad: binding.bytes() })
            .map_err(|_| "sealed content does not open with its key and binding".to_owned())
    }
}

/// The key id a sealed blob names.
pub fn key_id(sealed: &[u8]) -> Option<u32> {
    match sealed {
        [SEALED, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_content_opens_only_with_its_tenant_key_and_binding() -> Result<(), String> {
        let master = [9u8; 32];
        let key = SealKey::derive(1, &master, "acme")?;
        let binding = Binding::new("m").text("acme").text("c1");
        let sealed = key.seal(&binding, b"secret plans")?;
        assert_eq!(key_id(&sealed), Some(1));
        assert!(!sealed.windows(6).any(|w| w == b"secret"), "plaintext visible");
        assert_eq!(key.open(&binding, &sealed)?, b"secret plans");
        assert!(key.open(&Binding::new("m").text("acme").text("c2"), &sealed).is_err(), "moved to c2");
        assert!(SealKey::derive(1, &master, "other")?.open(&binding, &sealed).is_err(), "another tenant");
        let mut flipped = sealed.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(key.open(&binding, &flipped).is_err(), "tampered");
        Ok(())
    }
}

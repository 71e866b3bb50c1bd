//! Where things live under `/data`, and how ids become file names.
//!
//! ```text
//! /data/stowage-v1/<tenant>/<user>/<conversation>/meta.json
//!                                                /messages.log
//!                                                /display.log
//! /data/stowage-v1/.trash/…      conversations being deleted
//! ```
//!
//! Every id is encoded into one path component that cannot collide with another
//! id's, cannot be `.`/`..`, and holds no separator or NUL: `c-` followed by the
//! id with every byte outside `[a-z0-9_.-]` written as `%XX` (upper-case letters
//! too, so case-insensitive filesystems cannot merge two ids). Names that would
//! exceed common file-name limits become `h-` and the SHA-256 of the id; the id
//! itself is always kept in `meta.json`.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::exports::stowage::store::conversation_store::Scope;

pub const ROOT: &str = "/data/stowage-v1";
const MAX_NAME: usize = 200;

pub fn encode_name(id: &str) -> String {
    let mut name = String::with_capacity(id.len() + 2);
    name.push_str("c-");
    for byte in id.bytes() {
        match byte {
            b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' => name.push(byte as char),
            _ => name.push_str(&format!("%{byte:02X}")),
        }
        if name.len() > MAX_NAME {
            let digest = Sha256::digest(id.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            return format!("h-{hex}");
        }
    }
    name
}

pub fn scope_dir(scope: &Scope) -> PathBuf {
    PathBuf::from(ROOT)
        .join(encode_name(&scope.tenant))
        .join(encode_name(&scope.user))
}

pub fn conversation_dir(scope: &Scope, conversation_id: &str) -> PathBuf {
    scope_dir(scope).join(encode_name(conversation_id))
}

pub fn trash_dir() -> PathBuf {
    PathBuf::from(ROOT).join(".trash")
}

pub const META: &str = "meta.json";
pub const MESSAGES: &str = "messages.log";
pub const DISPLAY: &str = "display.log";

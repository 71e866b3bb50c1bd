//! Where things live under the store's root, and how ids become file names.
//!
//! ```text
//! <root>/<tenant>/<user>/<conversation>/meta.json      identity and metadata
//!                                      /messages.log   message history
//!                                      /display.log    display records
//! <root>/.trash/…                      conversations being deleted
//! ```
//!
//! The root is `/data/stowage-v1` in the adapter (the same as the 0.1.0
//! adapter's, so its stores open unchanged) and a temporary directory in tests.
//!
//! Every id is encoded into one path component that cannot collide with another
//! id's, cannot be `.`/`..`, and holds no separator or NUL: `c-` followed by the
//! id with every byte outside `[a-z0-9_.-]` written as `%XX` (upper-case letters
//! too, so case-insensitive filesystems cannot merge two ids). Names that would
//! exceed common file-name limits become `h-` and the SHA-256 of the id; the id
//! itself is always kept inside the files. File-name order is not id order, so
//! listings sort by the decoded (or stored) ids, never by names.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::stowage::store::types::Scope;

/// The adapter's root inside the WASI preopen.
pub const ROOT: &str = "/data/stowage-v1";
const MAX_NAME: usize = 200;

pub const META: &str = "meta.json";
pub const MESSAGES: &str = "messages.log";
pub const DISPLAY: &str = "display.log";
const TRASH: &str = ".trash";

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

/// The id a `c-` name encodes; `None` for hashed or foreign names (their id is
/// read from the files inside). Only canonical encodings decode, so a decoded
/// id always maps back to the same name.
pub fn decode_name(name: &str) -> Option<String> {
    let encoded = name.strip_prefix("c-")?.as_bytes();
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut i = 0;
    while i < encoded.len() {
        if encoded[i] == b'%' {
            let hex = std::str::from_utf8(encoded.get(i + 1..i + 3)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            bytes.push(encoded[i]);
            i += 1;
        }
    }
    let id = String::from_utf8(bytes).ok()?;
    (encode_name(&id) == name).then_some(id)
}

pub fn scope_dir(root: &Path, scope: &Scope) -> PathBuf {
    root.join(encode_name(&scope.tenant)).join(encode_name(&scope.user))
}

pub fn conversation_dir(root: &Path, scope: &Scope, conversation_id: &str) -> PathBuf {
    scope_dir(root, scope).join(encode_name(conversation_id))
}

pub fn trash_dir(root: &Path) -> PathBuf {
    root.join(TRASH)
}

/// Sub-directories of `dir` with their names, skipping hidden entries (the
/// trash, temporary files); empty if `dir` does not exist.
pub fn subdirs(dir: &Path) -> Result<Vec<(String, PathBuf)>, crate::Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::io_error(&format!("listing {}", dir.display()), e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| crate::io_error(&format!("listing {}", dir.display()), e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push((name, entry.path()));
        }
    }
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_distinct_and_decode_back() {
        let ids = ["", ".", "..", "a/b", "A", "a", "%41", "nul\0x", "é", "~", "c-x", "h-1", "a b"];
        let names: Vec<String> = ids.iter().map(|id| encode_name(id)).collect();
        for (id, name) in ids.iter().zip(&names) {
            assert!(!name.contains(['/', '\\', '\0']) && name != "." && name != "..");
            assert!(name.starts_with("c-"));
            assert_eq!(decode_name(name).as_deref(), Some(*id), "{name}");
        }
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn long_ids_are_hashed_and_do_not_decode() {
        let long = "x".repeat(300);
        let name = encode_name(&long);
        assert!(name.starts_with("h-") && name.len() == 66);
        assert_eq!(decode_name(&name), None);
    }

    #[test]
    fn non_canonical_names_do_not_decode() {
        for name in ["c-%61", "c-%4", "c-%zz", "c-A", "c-%FF", "x-a", "c-%2f"] {
            assert_eq!(decode_name(name), None, "{name}");
        }
    }
}

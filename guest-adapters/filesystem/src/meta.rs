//! `meta.json`: a conversation's identity and metadata, written once by `open`
//! and never changed (a conversation that exists is returned as it is).
//!
//! Format 2 (this adapter):
//! `{"format":2,"id":…,"scope":{"tenant":…,"user":…},"created_at":…,"content":"<hex>","tag":"<hex>"}`
//! with the host's opaque bytes in lower-case hex. A file without `format` is
//! the 0.1.0 shape `{"id","scope","meta":{"agent_id","title","metadata"},"created_at"}`,
//! read in the plain-legacy form. The file's presence is what makes the
//! conversation exist; it is written atomically (temporary file, fsync, rename,
//! directory fsync).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::durable;
use crate::io_error;
use crate::layout;
use crate::legacy;
use crate::stowage::store::types::{ConversationMeta, Error, Scope};

/// A conversation's fixed facts.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    pub id: String,
    pub scope: Scope,
    pub meta: ConversationMeta,
    pub created_at: i64,
}

impl Meta {
    /// True if this is the conversation `(scope, id)`. Only a SHA-256
    /// collision of two long ids could make a directory hold another one.
    pub fn is(&self, scope: &Scope, id: &str) -> bool {
        self.id == id && &self.scope == scope
    }

    pub fn weight(&self) -> usize {
        self.id.len() + self.scope.tenant.len() + self.scope.user.len() + self.meta.content.len() + self.meta.tag.len()
    }
}

const FORMAT: u32 = 2;

#[derive(Serialize, Deserialize)]
struct ScopeJson {
    tenant: String,
    user: String,
}

#[derive(Deserialize)]
struct MetaFile {
    #[serde(default)]
    format: Option<u32>,
    id: String,
    scope: ScopeJson,
    created_at: i64,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tag: Option<String>,
    /// 0.1.0 only.
    #[serde(default)]
    meta: Option<legacy::types::ConversationMeta>,
}

#[derive(Serialize)]
struct MetaFileOut<'a> {
    format: u32,
    id: &'a str,
    scope: ScopeJson,
    created_at: i64,
    content: String,
    tag: String,
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes.chunks(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

/// The meta of the conversation in `dir`; `None` if it has none.
pub fn read(dir: &Path) -> Result<Option<Meta>, Error> {
    let path = dir.join(layout::META);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&format!("reading {}", path.display()), e)),
    };
    let bad = |what: String| Error::Storage(format!("{} cannot be decoded: {what}", path.display()));
    let file: MetaFile = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    let meta = match (file.format, file.meta) {
        (Some(FORMAT), _) => {
            let field = |value: Option<String>, name: &str| {
                value.as_deref().and_then(unhex).ok_or_else(|| bad(format!("`{name}` is missing or not hex")))
            };
            ConversationMeta { content: field(file.content, "content")?, tag: field(file.tag, "tag")? }
        }
        (Some(other), _) => {
            return Err(bad(format!("format {other} was written by a newer adapter (this one reads {FORMAT})")));
        }
        (None, Some(legacy_meta)) => legacy::convert::conversation_meta(&legacy_meta).map_err(bad)?,
        (None, None) => return Err(bad("it has neither `format` nor `meta`".into())),
    };
    Ok(Some(Meta {
        id: file.id,
        scope: Scope { tenant: file.scope.tenant, user: file.scope.user },
        meta,
        created_at: file.created_at,
    }))
}

/// Writes `meta` as the meta of the conversation in `dir` (which exists), durably.
pub fn write(dir: &Path, meta: &Meta) -> Result<(), Error> {
    let out = MetaFileOut {
        format: FORMAT,
        id: &meta.id,
        scope: ScopeJson { tenant: meta.scope.tenant.clone(), user: meta.scope.user.clone() },
        created_at: meta.created_at,
        content: hex(&meta.meta.content),
        tag: hex(&meta.meta.tag),
    };
    let bytes = serde_json::to_vec(&out).map_err(|e| Error::Storage(format!("encoding conversation metadata: {e}")))?;
    durable::write_atomically(&dir.join(layout::META), &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(unhex(&hex(&bytes)), Some(bytes));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("0G"), None);
        assert_eq!(unhex("AB"), None);
    }
}

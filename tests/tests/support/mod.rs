//! Helpers shared by the fault-injection suites (`swap`, `faults`, `damage`,
//! `crash`, `soak`, `supervision`). Each test binary uses a subset, hence the
//! `dead_code` allowance.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, ensure};
use stowage::{Message, NewMessage, Role, Scope, Store};

pub fn scope() -> Scope {
    Scope::new("t", "u")
}

/// A user message with a caller-chosen id (so a retry is recognised).
pub fn text(id: impl Into<String>) -> NewMessage {
    let id = id.into();
    NewMessage::text(Role::User, format!("body of {id}")).with_id(id)
}

/// Every message of conversation `id` in [`scope`], oldest first.
pub async fn all(store: &Store, id: &str) -> anyhow::Result<Vec<Message>> {
    stowage_tests::all_messages(store, &scope(), id).await
}

/// Seqs 1..=n with no gap, and no message id twice.
pub fn check_contiguous(messages: &[Message], what: &str) -> anyhow::Result<()> {
    let seqs: Vec<u64> = messages.iter().map(|m| m.seq).collect();
    ensure!(seqs.iter().copied().eq(1..=messages.len() as u64), "{what}: seqs not contiguous from 1: {seqs:?}");
    let mut seen = HashSet::new();
    for m in messages {
        ensure!(seen.insert(m.id.as_str()), "{what}: message id {} is stored twice", m.id);
    }
    Ok(())
}

fn leb128(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The component with a custom section appended: the same code under a new
/// digest — a different version of the adapter as far as the host can tell.
pub fn new_version(wasm: &[u8], tag: &str) -> Arc<[u8]> {
    let name = b"stowage-test-version";
    let mut body = Vec::new();
    leb128(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(tag.as_bytes());
    let mut out = wasm.to_vec();
    out.push(0);
    leb128(body.len(), &mut out);
    out.extend(body);
    out.into()
}

/// Every regular file under `dir` with its length.
pub fn file_lengths(dir: &Path) -> anyhow::Result<BTreeMap<PathBuf, u64>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, u64>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let meta = std::fs::symlink_metadata(&path)?;
            if meta.is_dir() {
                walk(&path, out)?;
            } else if meta.is_file() {
                out.insert(path, meta.len());
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out)?;
    Ok(out)
}

/// Runs `write` and returns the one file under `dir` that it created or grew
/// (an append's log), whatever the adapter's layout.
pub async fn file_grown_by<F: Future<Output = anyhow::Result<()>>>(dir: &Path, write: F) -> anyhow::Result<PathBuf> {
    let before = file_lengths(dir)?;
    write.await?;
    let after = file_lengths(dir)?;
    let grown: Vec<&PathBuf> =
        after.iter().filter(|(path, len)| before.get(*path).is_none_or(|old| *len > old)).map(|(p, _)| p).collect();
    match grown[..] {
        [log] => Ok(log.clone()),
        _ => bail!("expected exactly one file to grow with the write, found {grown:?}"),
    }
}

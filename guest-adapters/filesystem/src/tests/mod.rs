//! Tests of the whole adapter over real files in temporary directories (the
//! store's root is a parameter, so std::fs works natively as in the guest).

mod cache;
mod conversation;
mod display;
mod legacy_store;
mod speed;
mod torn;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::exports::stowage::store::conversation_store::{AppendOutcome, MessageRange};
use crate::exports::stowage::store::display_store::{DisplayRecord, StoredDisplayRecord};
use crate::store::{Limits, Store};
use crate::stowage::store::types::{ConversationMeta, Message, Role, Scope, StoredMessage};

/// A directory removed when dropped; `root()` is the store root inside it.
pub struct Temp {
    dir: PathBuf,
}

impl Temp {
    pub fn new() -> Self {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "stowage-fs-test-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self { dir }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.join("stowage-v1")
    }

    pub fn store(&self) -> Store {
        Store::new(self.root(), Limits::default())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn scope(tenant: &str, user: &str) -> Scope {
    Scope { tenant: tenant.into(), user: user.into() }
}

pub fn meta(tag: u8) -> ConversationMeta {
    ConversationMeta { content: vec![0x02, 0, 0xff, tag], tag: vec![tag; 3] }
}

/// A message whose opaque bytes include every kind of byte.
pub fn msg(seq: u64, id: &str) -> StoredMessage {
    let mut content = vec![0x02, 0x00, 0xff, b'{'];
    content.extend_from_slice(id.as_bytes());
    content.extend_from_slice(&seq.to_le_bytes());
    StoredMessage {
        seq,
        message: Message {
            id: id.into(),
            role: Role::Assistant,
            created_at: seq as i64 * 10,
            content,
            tag: vec![seq as u8; 32],
        },
    }
}

/// Messages `first..=last` with ids `m<seq>`.
pub fn batch(first: u64, last: u64) -> Vec<StoredMessage> {
    (first..=last).map(|seq| msg(seq, &format!("m{seq}"))).collect()
}

pub fn record(seq: u64, tool_call_id: Option<&str>, status: Option<&str>) -> StoredDisplayRecord {
    StoredDisplayRecord {
        seq,
        record: DisplayRecord {
            message_id: Some(format!("m{seq}")),
            message_type: "assistant".into(),
            content_type: "tool_call".into(),
            tool_call_id: tool_call_id.map(Into::into),
            status: status.map(Into::into),
            body: vec![0x02, seq as u8, 0, 0xfe],
            created_at: seq as i64,
            updated_at: seq as i64 + 1,
            tag: vec![7; 16],
        },
    }
}

/// Opens `(scope, id)` and appends messages `1..=count` in batches of `per`.
pub fn fill(store: &mut Store, scope: &Scope, id: &str, count: u64, per: u64) {
    store.open(scope, id, meta(1), 1).expect("open");
    let mut seq = 1;
    while seq <= count {
        let last = count.min(seq + per - 1);
        let outcome = store.append(scope, id, batch(seq, last), None, seq as i64);
        assert!(matches!(outcome, Ok(AppendOutcome::Stored(_))), "{outcome:?}");
        seq = last + 1;
    }
}

pub fn load_all(store: &mut Store, scope: &Scope, id: &str) -> Vec<StoredMessage> {
    store.load(scope, id, MessageRange::After(0), u32::MAX).expect("load")
}

pub fn seqs(messages: &[StoredMessage]) -> Vec<u64> {
    messages.iter().map(|m| m.seq).collect()
}

/// Copies the directory tree `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// Offsets of the frames of a log's bytes, in order.
pub fn frame_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 0;
    while let Some((len, _)) = crate::frame::parse_header(&bytes[at..]) {
        starts.push(at);
        at += crate::frame::HEADER_LEN + len;
    }
    starts
}

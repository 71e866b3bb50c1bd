//! The message history of one conversation, replayed from its log.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::exports::stowage::store::conversation_store::{
    AppendOutcome, ConversationInfo, ConversationMeta, Message, MessageRange, Scope,
    StoredMessage, TruncateOutcome,
};
use crate::frame::{self, LogContents};
use crate::io_error;
use crate::layout;
use crate::stowage::store::types::{Conflict, Error};

/// What `meta.json` holds: the parts of a conversation that never change.
#[derive(Serialize, Deserialize)]
struct Meta {
    id: String,
    scope: Scope,
    meta: ConversationMeta,
    created_at: i64,
}

/// One frame of `messages.log`.
#[derive(Serialize, Deserialize)]
enum Entry {
    /// New messages, already numbered.
    Append { version: u64, at: i64, messages: Vec<StoredMessage> },
    /// Everything after `after` removed.
    Truncate { version: u64, at: i64, after: u64 },
    /// The first frame of a rewritten history: all that came before is replaced.
    Reset { version: u64, at: i64, messages: Vec<StoredMessage> },
}

/// A conversation's current state, replayed from its files.
pub struct Conversation {
    dir: PathBuf,
    meta: Meta,
    messages: Vec<StoredMessage>,
    version: u64,
    updated_at: i64,
    log: LogContents,
}

fn check_version(expected: Option<u64>, actual: u64) -> Result<(), Error> {
    match expected {
        Some(expected) if expected != actual => Err(Error::Conflict(Conflict {
            expected_version: expected,
            actual_version: actual,
        })),
        _ => Ok(()),
    }
}

fn encode_entry(entry: &Entry) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(entry).map_err(|e| Error::Storage(format!("encoding a log entry: {e}")))
}

fn read_meta(dir: &std::path::Path) -> Result<Option<Meta>, Error> {
    let path = dir.join(layout::META);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::Storage(format!("{} cannot be decoded: {e}", path.display()))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(&format!("reading {}", path.display()), e)),
    }
}

pub fn open(
    scope: &Scope,
    conversation_id: &str,
    meta: ConversationMeta,
    now: i64,
) -> Result<ConversationInfo, Error> {
    let dir = layout::conversation_dir(scope, conversation_id);
    if let Some(conversation) = Conversation::load_dir(dir.clone(), scope, conversation_id)? {
        return conversation.info();
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| io_error(&format!("creating {}", dir.display()), e))?;
    let meta = Meta {
        id: conversation_id.to_owned(),
        scope: scope.clone(),
        meta,
        created_at: now,
    };
    let bytes = serde_json::to_vec(&meta)
        .map_err(|e| Error::Storage(format!("encoding conversation metadata: {e}")))?;
    frame::write_atomically(&dir.join(layout::META), &bytes)?;
    if let Some(parent) = dir.parent() {
        frame::sync_dir(parent);
    }
    Conversation::existing(scope, conversation_id)?.info()
}

impl Conversation {
    /// The conversation, or `not-found` when it was never opened in this scope.
    pub fn existing(scope: &Scope, conversation_id: &str) -> Result<Self, Error> {
        let dir = layout::conversation_dir(scope, conversation_id);
        Self::load_dir(dir, scope, conversation_id)?.ok_or(Error::NotFound)
    }

    fn load_dir(dir: PathBuf, scope: &Scope, conversation_id: &str) -> Result<Option<Self>, Error> {
        let Some(meta) = read_meta(&dir)? else {
            return Ok(None);
        };
        // A hashed directory name could in theory be shared; the stored identity decides.
        if meta.id != conversation_id || &meta.scope != scope {
            return Ok(None);
        }
        Self::replay(dir, meta).map(Some)
    }

    fn replay(dir: PathBuf, meta: Meta) -> Result<Self, Error> {
        let log = frame::read_log(&dir.join(layout::MESSAGES))?;
        Self::replay_log(dir, meta, log)
    }

    /// Replays what is readable: a damaged log counts up to the damage. For
    /// listing, so one damaged conversation does not hide the others; loading it
    /// still reports the damage.
    fn replay_readable(dir: PathBuf, meta: Meta) -> Result<Self, Error> {
        let (log, _) = frame::read_log_prefix(&dir.join(layout::MESSAGES))?;
        Self::replay_log(dir, meta, log)
    }

    fn replay_log(dir: PathBuf, meta: Meta, log: LogContents) -> Result<Self, Error> {
        let path = dir.join(layout::MESSAGES);
        let mut messages: Vec<StoredMessage> = Vec::new();
        let mut version = 0;
        let mut updated_at = meta.created_at;
        for (index, payload) in log.frames.iter().enumerate() {
            let entry: Entry = serde_json::from_slice(payload).map_err(|e| {
                Error::Storage(format!(
                    "{}: record {} cannot be decoded: {e}",
                    path.display(),
                    index + 1
                ))
            })?;
            match entry {
                Entry::Append { version: v, at, messages: new } => {
                    messages.extend(new);
                    (version, updated_at) = (v, at);
                }
                Entry::Truncate { version: v, at, after } => {
                    messages.retain(|m| m.seq <= after);
                    (version, updated_at) = (v, at);
                }
                Entry::Reset { version: v, at, messages: all } => {
                    messages = all;
                    (version, updated_at) = (v, at);
                }
            }
        }
        Ok(Self { dir, meta, messages, version, updated_at, log })
    }

    fn last_seq(&self) -> u64 {
        self.messages.last().map_or(0, |m| m.seq)
    }

    pub fn info(&self) -> Result<ConversationInfo, Error> {
        Ok(ConversationInfo {
            id: self.meta.id.clone(),
            scope: self.meta.scope.clone(),
            meta: self.meta.meta.clone(),
            created_at: self.meta.created_at,
            updated_at: self.updated_at,
            message_count: self.messages.len() as u64,
            last_seq: self.last_seq(),
            version: self.version,
        })
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(layout::MESSAGES)
    }

    pub fn append(
        self,
        messages: Vec<Message>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<AppendOutcome, Error> {
        let existing: HashMap<&str, u64> = self
            .messages
            .iter()
            .map(|m| (m.message.id.as_str(), m.seq))
            .collect();
        let mut seqs = Vec::with_capacity(messages.len());
        let mut new = Vec::new();
        let mut next = self.last_seq() + 1;
        for message in messages {
            match existing.get(message.id.as_str()) {
                Some(&seq) => seqs.push(seq),
                None => {
                    seqs.push(next);
                    new.push(StoredMessage { seq: next, message });
                    next += 1;
                }
            }
        }
        if new.is_empty() {
            return Ok(AppendOutcome { seqs, stored: 0, version: self.version });
        }
        check_version(expected_version, self.version)?;
        let version = self.version + 1;
        let stored = new.len() as u32;
        let entry = Entry::Append { version, at: now, messages: new };
        frame::append_frame(&self.log_path(), &self.log, &encode_entry(&entry)?)?;
        Ok(AppendOutcome { seqs, stored, version })
    }

    pub fn replace(
        self,
        messages: Vec<Message>,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<u64, Error> {
        check_version(expected_version, self.version)?;
        let version = self.version + 1;
        let messages = messages
            .into_iter()
            .zip(1..)
            .map(|(message, seq)| StoredMessage { seq, message })
            .collect();
        let entry = Entry::Reset { version, at: now, messages };
        frame::write_log(&self.log_path(), &[encode_entry(&entry)?])?;
        Ok(version)
    }

    pub fn load(self, range: MessageRange, limit: u32) -> Result<Vec<StoredMessage>, Error> {
        let limit = limit as usize;
        let messages = self.messages;
        // Seqs are contiguous and sorted, so positions can be found by search.
        let page: Vec<StoredMessage> = match range {
            MessageRange::Latest => {
                let start = messages.len().saturating_sub(limit);
                messages.into_iter().skip(start).collect()
            }
            MessageRange::After(seq) => {
                let start = messages.partition_point(|m| m.seq <= seq);
                messages.into_iter().skip(start).take(limit).collect()
            }
            MessageRange::Before(seq) => {
                let end = messages.partition_point(|m| m.seq < seq);
                let start = end.saturating_sub(limit);
                messages.into_iter().take(end).skip(start).collect()
            }
        };
        Ok(page)
    }

    pub fn truncate_after(
        self,
        seq: u64,
        expected_version: Option<u64>,
        now: i64,
    ) -> Result<TruncateOutcome, Error> {
        let removed = self.messages.iter().filter(|m| m.seq > seq).count() as u64;
        if removed == 0 {
            return Ok(TruncateOutcome { removed, version: self.version });
        }
        check_version(expected_version, self.version)?;
        let version = self.version + 1;
        // Rewriting the log drops the removed messages for good (no dead bytes).
        let path = self.log_path();
        let kept: Vec<StoredMessage> = self.messages.into_iter().filter(|m| m.seq <= seq).collect();
        let entry = Entry::Reset { version, at: now, messages: kept };
        frame::write_log(&path, &[encode_entry(&entry)?])?;
        Ok(TruncateOutcome { removed, version })
    }
}

pub fn delete(scope: &Scope, conversation_id: &str) -> Result<bool, Error> {
    let dir = layout::conversation_dir(scope, conversation_id);
    let exists = match std::fs::symlink_metadata(&dir) {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(io_error(&format!("inspecting {}", dir.display()), e)),
    };
    if !exists {
        return Ok(false);
    }
    if let Some(meta) = read_meta(&dir)? {
        if meta.id != conversation_id || &meta.scope != scope {
            return Ok(false);
        }
    }
    static DELETIONS: AtomicU64 = AtomicU64::new(0);
    let trash = layout::trash_dir();
    std::fs::create_dir_all(&trash)
        .map_err(|e| io_error(&format!("creating {}", trash.display()), e))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let unique = format!("{nanos}-{}", DELETIONS.fetch_add(1, Ordering::Relaxed));
    let mut target = trash.join(&unique);
    let mut attempt = 0;
    while target.exists() {
        attempt += 1;
        target = trash.join(format!("{unique}-{attempt}"));
    }
    std::fs::rename(&dir, &target)
        .map_err(|e| io_error(&format!("moving {} to the trash", dir.display()), e))?;
    if let Some(parent) = dir.parent() {
        frame::sync_dir(parent);
    }
    // The conversation is gone once renamed; emptying the trash may be retried later.
    let _ = std::fs::remove_dir_all(&target);
    Ok(true)
}

pub fn list(scope: &Scope, after: Option<&str>, limit: u32) -> Result<Vec<ConversationInfo>, Error> {
    let dir = layout::scope_dir(scope);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(&format!("listing {}", dir.display()), e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(&format!("listing {}", dir.display()), e))?;
        let path = entry.path();
        let Some(meta) = read_meta(&path)? else {
            continue; // display records only, or a conversation still being created
        };
        if &meta.scope != scope || after.is_some_and(|a| meta.id.as_str() <= a) {
            continue;
        }
        found.push((meta.id.clone(), path, meta));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
        .into_iter()
        .take(limit as usize)
        .map(|(_, path, meta)| Conversation::replay_readable(path, meta)?.info())
        .collect()
}

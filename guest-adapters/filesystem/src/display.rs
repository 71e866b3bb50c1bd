//! Display records of one conversation: a log of inserts and overwrites.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::exports::stowage::store::display_store::{
    DisplayRecord, LocatedDisplayRecord, Scope, StoredDisplayRecord,
};
use crate::frame::{self, LogContents};
use crate::io_error;
use crate::layout;
use crate::stowage::store::types::Error;

#[derive(Serialize, Deserialize)]
enum Entry {
    /// New records. Each insert names its conversation, so a scan of the data
    /// directory (the start-up sweep) knows where a record belongs.
    Insert {
        scope: Scope,
        conversation_id: String,
        records: Vec<StoredDisplayRecord>,
    },
    Update(StoredDisplayRecord),
}

struct Display {
    path: PathBuf,
    records: Vec<StoredDisplayRecord>,
    /// (scope, conversation id) from the first insert; `None` for an empty log.
    owner: Option<(Scope, String)>,
    log: LogContents,
}

impl Display {
    fn read(scope: &Scope, conversation_id: &str) -> Result<Self, Error> {
        let path = layout::conversation_dir(scope, conversation_id).join(layout::DISPLAY);
        let display = Self::read_path(path)?;
        match &display.owner {
            // Only possible if two ids hashed to one directory name (SHA-256).
            Some((s, id)) if s != scope || id != conversation_id => Err(Error::Storage(format!(
                "{} belongs to another conversation",
                display.path.display()
            ))),
            _ => Ok(display),
        }
    }

    fn read_path(path: PathBuf) -> Result<Self, Error> {
        let log = frame::read_log(&path)?;
        Self::from_log(path, log)
    }

    fn from_log(path: PathBuf, log: LogContents) -> Result<Self, Error> {
        let mut owner = None;
        let mut records: Vec<StoredDisplayRecord> = Vec::new();
        for (index, payload) in log.frames.iter().enumerate() {
            let entry: Entry = serde_json::from_slice(payload).map_err(|e| {
                Error::Storage(format!(
                    "{}: record {} cannot be decoded: {e}",
                    path.display(),
                    index + 1
                ))
            })?;
            match entry {
                Entry::Insert { scope, conversation_id, records: new } => {
                    owner.get_or_insert((scope, conversation_id));
                    records.extend(new);
                }
                Entry::Update(updated) => {
                    // Seqs are contiguous from 1, so the position is seq - 1.
                    let slot = usize::try_from(updated.seq.wrapping_sub(1))
                        .ok()
                        .and_then(|i| records.get_mut(i));
                    match slot {
                        Some(slot) => *slot = updated,
                        None => {
                            return Err(Error::Storage(format!(
                                "{}: record {} updates display record {} which does not exist",
                                path.display(),
                                index + 1,
                                updated.seq
                            )));
                        }
                    }
                }
            }
        }
        Ok(Self { path, records, owner, log })
    }

    fn append(&self, entry: &Entry) -> Result<(), Error> {
        let payload = serde_json::to_vec(entry)
            .map_err(|e| Error::Storage(format!("encoding a display entry: {e}")))?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| io_error(&format!("creating {}", dir.display()), e))?;
        }
        frame::append_frame(&self.path, &self.log, &payload)
    }
}

pub fn insert(
    scope: &Scope,
    conversation_id: &str,
    records: Vec<DisplayRecord>,
) -> Result<Vec<u64>, Error> {
    let display = Display::read(scope, conversation_id)?;
    let first = display.records.len() as u64 + 1;
    let stored: Vec<StoredDisplayRecord> = records
        .into_iter()
        .zip(first..)
        .map(|(record, seq)| StoredDisplayRecord { seq, record })
        .collect();
    let seqs = stored.iter().map(|r| r.seq).collect();
    if !stored.is_empty() {
        display.append(&Entry::Insert {
            scope: scope.clone(),
            conversation_id: conversation_id.to_owned(),
            records: stored,
        })?;
    }
    Ok(seqs)
}

pub fn by_tool_call_id(
    scope: &Scope,
    conversation_id: &str,
    tool_call_id: &str,
) -> Result<Vec<StoredDisplayRecord>, Error> {
    Ok(Display::read(scope, conversation_id)?
        .records
        .into_iter()
        .filter(|r| r.record.tool_call_id.as_deref() == Some(tool_call_id))
        .collect())
}

pub fn update(
    scope: &Scope,
    conversation_id: &str,
    seq: u64,
    record: DisplayRecord,
) -> Result<(), Error> {
    let display = Display::read(scope, conversation_id)?;
    if seq == 0 || seq > display.records.len() as u64 {
        return Err(Error::NotFound);
    }
    display.append(&Entry::Update(StoredDisplayRecord { seq, record }))
}

pub fn list(
    scope: &Scope,
    conversation_id: &str,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredDisplayRecord>, Error> {
    Ok(Display::read(scope, conversation_id)?
        .records
        .into_iter()
        .filter(|r| r.seq > after)
        .take(limit as usize)
        .collect())
}

/// Directories directly below `dir` (none if it does not exist).
fn subdirs(dir: &std::path::Path) -> Result<Vec<PathBuf>, Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(&format!("listing {}", dir.display()), e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(&format!("listing {}", dir.display()), e))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue; // the trash, temporary files
        }
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

pub fn find_by_status(statuses: &[String], limit: u32) -> Result<Vec<LocatedDisplayRecord>, Error> {
    let mut found = Vec::new();
    for tenant in subdirs(std::path::Path::new(layout::ROOT))? {
        for user in subdirs(&tenant)? {
            for conversation in subdirs(&user)? {
                // A damaged log must not stop a scan of every other conversation:
                // what precedes the damage is used.
                let path = conversation.join(layout::DISPLAY);
                let Ok((log, _)) = frame::read_log_prefix(&path) else { continue };
                let Ok(display) = Display::from_log(path, log) else { continue };
                let Some((scope, conversation_id)) = display.owner else { continue };
                for stored in display.records {
                    if found.len() >= limit as usize {
                        return Ok(found);
                    }
                    if stored.record.status.as_ref().is_some_and(|s| statuses.contains(s)) {
                        found.push(LocatedDisplayRecord {
                            scope: scope.clone(),
                            conversation_id: conversation_id.clone(),
                            stored,
                        });
                    }
                }
            }
        }
    }
    Ok(found)
}

//! Display records of one conversation: a log of inserts and overwrites.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::exports::stowage::store::display_store::{DisplayRecord, Scope, StoredDisplayRecord};
use crate::frame::{self, LogContents};
use crate::io_error;
use crate::layout;
use crate::stowage::store::types::Error;

#[derive(Serialize, Deserialize)]
enum Entry {
    Insert(Vec<StoredDisplayRecord>),
    Update(StoredDisplayRecord),
}

struct Display {
    path: PathBuf,
    records: Vec<StoredDisplayRecord>,
    log: LogContents,
}

impl Display {
    fn read(scope: &Scope, conversation_id: &str) -> Result<Self, Error> {
        let path = layout::conversation_dir(scope, conversation_id).join(layout::DISPLAY);
        let log = frame::read_log(&path)?;
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
                Entry::Insert(new) => records.extend(new),
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
        Ok(Self { path, records, log })
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
        display.append(&Entry::Insert(stored))?;
    }
    Ok(seqs)
}

pub fn get_tool_call(
    scope: &Scope,
    conversation_id: &str,
    tool_call_id: &str,
) -> Result<StoredDisplayRecord, Error> {
    Display::read(scope, conversation_id)?
        .records
        .into_iter()
        .rev()
        .find(|r| r.record.tool_call_id.as_deref() == Some(tool_call_id))
        .ok_or(Error::NotFound)
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

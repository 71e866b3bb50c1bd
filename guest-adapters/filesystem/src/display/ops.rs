//! The per-conversation display calls: `insert` and `update` (one frame each,
//! `sync_data`ed before returning), `list` and `by-tool-call-id` (reading only
//! the frames of the records they return).
//!
//! The first write to a conversation without a display log, or with a 0.1.0
//! one, writes the whole log anew (header naming the owner, the converted
//! records, then the new frame) through an atomic rewrite.

use super::entry::{self, Owner};
use super::{DisplayState, LiveDisplay, read_records};
use crate::durable;
use crate::exports::stowage::store::display_store::{InsertOutcome, StoredDisplayRecord};
use crate::frame::{self, FrameLoc};
use crate::layout;
use crate::logfile::{Damage, LogState, new_log_id};
use crate::rewrite::{CHUNK_BYTES, CHUNK_RECORDS, Rewrite};
use crate::store::Store;
use crate::stowage::store::types::{Error, Scope};

/// Seqs contiguous in batch order.
fn check_contiguous(records: &[StoredDisplayRecord]) -> Result<(), Error> {
    for (i, pair) in records.windows(2).enumerate() {
        if pair[0].seq.checked_add(1) != Some(pair[1].seq) {
            return Err(Error::InvalidInput(format!(
                "display record {} of the batch has seq {} after seq {}: seqs must be contiguous",
                i + 1,
                pair[1].seq,
                pair[0].seq
            )));
        }
    }
    Ok(())
}

/// Writes `payload` as the log's next frame: appended to a log of this
/// format, or as the last frame of a rewrite otherwise.
fn write_frame(live: &mut LiveDisplay, owner: &Owner, payload: &[u8]) -> Result<(), Error> {
    live.cacheable = false;
    match (&live.file, live.state.tail.log_id) {
        (Some(file), Some(_)) => {
            let bytes = frame::encode(payload)?;
            let tail = &live.state.tail;
            durable::append_frame(file, &live.path, tail.valid_len, tail.file_len, &bytes)?;
            let loc = FrameLoc { offset: tail.valid_len, len: bytes.len() as u32 };
            live.state.apply(&live.path, loc, payload)?;
            live.state.tail.valid_len = loc.end();
            live.state.tail.file_len = loc.end();
        }
        _ => {
            durable::ensure_dir(&live.dir)?;
            let header = entry::encode_header(new_log_id(), owner)?;
            let mut rewrite: Rewrite<DisplayState> = Rewrite::start(&live.path, &header)?;
            if let Some(file) = &live.file {
                let mut first = 1;
                while first <= live.state.last_seq() {
                    let last = live.state.last_seq().min(first + CHUNK_RECORDS as u64 - 1);
                    let seqs: Vec<u64> = (first..=last).collect();
                    let records = read_records(file, &live.path, &live.state, &seqs)?;
                    for chunk in chunks(&records) {
                        rewrite.frame(&entry::encode_insert(chunk)?)?;
                    }
                    first = last + 1;
                }
            }
            rewrite.frame(payload)?;
            live.state = rewrite.commit()?;
        }
    }
    live.cacheable = true;
    Ok(())
}

/// `records` split into runs of bounded byte size.
fn chunks(records: &[StoredDisplayRecord]) -> Vec<&[StoredDisplayRecord]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, r) in records.iter().enumerate() {
        bytes += r.record.body.len() + r.record.tag.len();
        if bytes >= CHUNK_BYTES || i + 1 == records.len() {
            out.push(&records[start..=i]);
            (start, bytes) = (i + 1, 0);
        }
    }
    out
}

fn insert_into(live: &mut LiveDisplay, owner: &Owner, records: &[StoredDisplayRecord]) -> Result<InsertOutcome, Error> {
    let last = live.state.last_seq();
    match records.first() {
        None => Ok(InsertOutcome::Stored),
        Some(first) if first.seq != last + 1 => Ok(InsertOutcome::OutOfSequence(last)),
        Some(_) => {
            write_frame(live, owner, &entry::encode_insert(records)?)?;
            Ok(InsertOutcome::Stored)
        }
    }
}

impl Store {
    /// The display log of `(scope, id)`; a log naming another owner (only
    /// possible if two hashed directory names collide) is an error.
    fn display_of(&mut self, scope: &Scope, id: &str, write: bool) -> Result<(LiveDisplay, Owner), Error> {
        let dir = layout::conversation_dir(&self.root, scope, id);
        let live = self.live_display(dir, write, Damage::Fail)?;
        let owner = Owner { scope: scope.clone(), conversation_id: id.to_owned() };
        if live.state.owner.as_ref().is_some_and(|o| o != &owner) {
            return Err(Error::Storage(format!("{} belongs to another conversation", live.path.display())));
        }
        Ok((live, owner))
    }

    pub fn insert(
        &mut self,
        scope: &Scope,
        id: &str,
        records: Vec<StoredDisplayRecord>,
    ) -> Result<InsertOutcome, Error> {
        check_contiguous(&records)?;
        let (mut live, owner) = self.display_of(scope, id, true)?;
        let outcome = insert_into(&mut live, &owner, &records);
        self.keep_display(live);
        outcome
    }

    pub fn update(&mut self, scope: &Scope, id: &str, record: StoredDisplayRecord) -> Result<(), Error> {
        let (mut live, owner) = self.display_of(scope, id, true)?;
        let outcome = if record.seq == 0 || record.seq > live.state.last_seq() {
            Err(Error::NotFound)
        } else {
            entry::encode_update(&record)
                .map_err(Error::from)
                .and_then(|payload| write_frame(&mut live, &owner, &payload))
        };
        self.keep_display(live);
        outcome
    }

    pub fn list_display(
        &mut self,
        scope: &Scope,
        id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        let (live, _) = self.display_of(scope, id, false)?;
        let last = live.state.last_seq();
        let end = last.min(after.saturating_add(u64::from(limit)));
        let seqs: Vec<u64> = (after.saturating_add(1)..=end).collect();
        let records = match &live.file {
            Some(file) if !seqs.is_empty() => read_records(file, &live.path, &live.state, &seqs),
            _ => Ok(Vec::new()),
        };
        self.keep_display(live);
        records
    }

    pub fn by_tool_call_id(
        &mut self,
        scope: &Scope,
        id: &str,
        tool_call_id: &str,
    ) -> Result<Vec<StoredDisplayRecord>, Error> {
        let (live, _) = self.display_of(scope, id, false)?;
        let seqs: Vec<u64> = (1..)
            .zip(&live.state.locs)
            .filter(|(_, loc)| loc.tool_call_id.as_deref() == Some(tool_call_id))
            .map(|(seq, _)| seq)
            .collect();
        let records = match &live.file {
            Some(file) if !seqs.is_empty() => read_records(file, &live.path, &live.state, &seqs),
            _ => Ok(Vec::new()),
        };
        self.keep_display(live);
        records
    }
}

//! The index of a display log: its owner and, per seq, where the current
//! version of the record is stored plus the two fields calls select on
//! (`tool-call-id`, `status`). Bodies stay on disk.

use std::path::Path;

use super::entry::{self, INSERT_KIND, Owner, UPDATE_KIND};
use crate::frame::FrameLoc;
use crate::legacy::{self, JSON_START, types::DisplayEntry};
use crate::logfile::{self, HEADER_KIND, LogState, LogTail, undecodable};
use crate::lru::Weigh;
use crate::stowage::store::types::{Error, Scope};

/// Where the current version of one record is stored, and what it is selected by.
#[derive(Clone, Debug, PartialEq)]
pub struct DisplayLoc {
    pub frame: FrameLoc,
    /// Position of the record in its frame.
    pub index: u32,
    pub tool_call_id: Option<Box<str>>,
    pub status: Option<Box<str>>,
}

#[derive(Debug, Default)]
pub struct DisplayState {
    pub tail: LogTail,
    /// From the header (or, in a 0.1.0 log, the first insert).
    pub owner: Option<Owner>,
    /// `locs[seq - 1]`.
    pub locs: Vec<DisplayLoc>,
    text_bytes: usize,
}

impl DisplayState {
    pub fn last_seq(&self) -> u64 {
        self.locs.len() as u64
    }

    fn set(
        &mut self,
        path: &Path,
        loc: FrameLoc,
        index: usize,
        seq: u64,
        tool_call_id: Option<&str>,
        status: Option<&str>,
    ) -> Result<(), Error> {
        let index = u32::try_from(index).map_err(|_| undecodable(path, loc, "too many records"))?;
        self.text_bytes += tool_call_id.map_or(0, str::len) + status.map_or(0, str::len);
        let new = DisplayLoc {
            frame: loc,
            index,
            tool_call_id: tool_call_id.map(Into::into),
            status: status.map(Into::into),
        };
        if seq == self.last_seq() + 1 {
            self.locs.push(new);
            return Ok(());
        }
        match usize::try_from(seq.wrapping_sub(1)).ok().and_then(|i| self.locs.get_mut(i)) {
            // Only updates address an existing seq; inserts are checked by the caller.
            Some(slot) => {
                let old = slot.tool_call_id.as_deref().map_or(0, str::len) + slot.status.as_deref().map_or(0, str::len);
                self.text_bytes = self.text_bytes.saturating_sub(old);
                *slot = new;
                Ok(())
            }
            None => Err(Error::Storage(format!(
                "{}: the record at byte {} stores display record {seq}, but the log holds {}",
                path.display(),
                loc.offset,
                self.last_seq()
            ))),
        }
    }

    fn insert(
        &mut self,
        path: &Path,
        loc: FrameLoc,
        index: usize,
        seq: u64,
        tool_call_id: Option<&str>,
        status: Option<&str>,
    ) -> Result<(), Error> {
        if seq != self.last_seq() + 1 {
            return Err(Error::Storage(format!(
                "{}: the record at byte {} inserts display record {seq} after {}",
                path.display(),
                loc.offset,
                self.last_seq()
            )));
        }
        self.set(path, loc, index, seq, tool_call_id, status)
    }

    fn update(
        &mut self,
        path: &Path,
        loc: FrameLoc,
        seq: u64,
        tool_call_id: Option<&str>,
        status: Option<&str>,
    ) -> Result<(), Error> {
        if seq == 0 || seq > self.last_seq() {
            return Err(Error::Storage(format!(
                "{}: the record at byte {} updates display record {seq}, which does not exist",
                path.display(),
                loc.offset
            )));
        }
        self.set(path, loc, 0, seq, tool_call_id, status)
    }

    fn apply_legacy(&mut self, path: &Path, loc: FrameLoc, payload: &[u8]) -> Result<(), Error> {
        match legacy::display_entry(payload).map_err(|e| undecodable(path, loc, e))? {
            DisplayEntry::Insert { scope, conversation_id, records } => {
                if self.owner.is_none() {
                    let scope = Scope { tenant: scope.tenant, user: scope.user };
                    self.owner = Some(Owner { scope, conversation_id });
                }
                for (index, r) in records.iter().enumerate() {
                    self.insert(path, loc, index, r.seq, r.record.tool_call_id.as_deref(), r.record.status.as_deref())?;
                }
                Ok(())
            }
            DisplayEntry::Update(r) => {
                self.update(path, loc, r.seq, r.record.tool_call_id.as_deref(), r.record.status.as_deref())
            }
        }
    }
}

impl LogState for DisplayState {
    fn empty() -> Self {
        Self::default()
    }

    fn tail(&self) -> &LogTail {
        &self.tail
    }

    fn tail_mut(&mut self) -> &mut LogTail {
        &mut self.tail
    }

    fn apply(&mut self, path: &Path, loc: FrameLoc, payload: &[u8]) -> Result<(), Error> {
        match payload.first() {
            Some(&HEADER_KIND) => {
                let header = entry::decode_header(payload).map_err(|e| undecodable(path, loc, e))?;
                logfile::check_format(path, loc, header.format)?;
                *self = Self::empty();
                self.tail.log_id = Some(header.log_id);
                self.owner = header.owner;
                Ok(())
            }
            Some(&INSERT_KIND) => {
                let records = entry::summarize_records(payload).map_err(|e| undecodable(path, loc, e))?;
                for (index, r) in records.iter().enumerate() {
                    self.insert(path, loc, index, r.seq, r.tool_call_id, r.status)?;
                }
                Ok(())
            }
            Some(&UPDATE_KIND) => {
                let records = entry::summarize_records(payload).map_err(|e| undecodable(path, loc, e))?;
                for r in &records {
                    self.update(path, loc, r.seq, r.tool_call_id, r.status)?;
                }
                Ok(())
            }
            Some(&JSON_START) => self.apply_legacy(path, loc, payload),
            Some(other) => Err(undecodable(path, loc, format!("unknown record kind {other}"))),
            None => Err(undecodable(path, loc, "empty record")),
        }
    }
}

impl Weigh for DisplayState {
    fn weight(&self) -> usize {
        self.locs.capacity() * std::mem::size_of::<DisplayLoc>() + self.text_bytes + 256
    }
}

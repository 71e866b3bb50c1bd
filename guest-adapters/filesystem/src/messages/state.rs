//! The index of a conversation's message log: version, time of the last
//! change, and for every seq where its message is stored (which frame, which
//! position in it) plus every id's seq, for `append`'s idempotency check.
//! Message content stays on disk; loads read only the frames they need.

use std::collections::HashMap;
use std::path::Path;

use super::entry::{self, APPEND_KIND};
use crate::frame::FrameLoc;
use crate::legacy::{self, JSON_START, types::Entry as LegacyEntry};
use crate::logfile::{self, HEADER_KIND, LogState, LogTail, undecodable};
use crate::lru::Weigh;
use crate::stowage::store::types::Error;

/// Where one message is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MessageLoc {
    pub frame: FrameLoc,
    /// Position of the message in its frame.
    pub index: u32,
}

#[derive(Debug, Default)]
pub struct MessageState {
    pub tail: LogTail,
    pub version: u64,
    /// Time of the last change; `None` until the first one (then `created_at`).
    pub updated_at: Option<i64>,
    /// `locs[seq - 1]`: seqs are contiguous from 1.
    pub locs: Vec<MessageLoc>,
    /// Every stored message's id and seq.
    pub ids: HashMap<Box<str>, u64>,
    id_bytes: usize,
}

impl MessageState {
    pub fn last_seq(&self) -> u64 {
        self.locs.len() as u64
    }

    fn push(&mut self, path: &Path, loc: FrameLoc, seq: u64, index: usize, id: &str) -> Result<(), Error> {
        if seq != self.last_seq() + 1 {
            return Err(Error::Storage(format!(
                "{}: the record at byte {} stores seq {seq} after seq {}",
                path.display(),
                loc.offset,
                self.last_seq()
            )));
        }
        let index = u32::try_from(index).map_err(|_| undecodable(path, loc, "too many messages"))?;
        self.locs.push(MessageLoc { frame: loc, index });
        self.id_bytes += id.len();
        self.ids.insert(id.into(), seq);
        Ok(())
    }

    fn clear_messages(&mut self) {
        self.locs.clear();
        self.ids.clear();
        self.id_bytes = 0;
    }

    fn apply_legacy(&mut self, path: &Path, loc: FrameLoc, payload: &[u8]) -> Result<(), Error> {
        let entry = legacy::message_entry(payload).map_err(|e| undecodable(path, loc, e))?;
        let (version, at) = match entry {
            LegacyEntry::Append { version, at, messages } => {
                for (index, m) in messages.iter().enumerate() {
                    self.push(path, loc, m.seq, index, &m.message.id)?;
                }
                (version, at)
            }
            LegacyEntry::Reset { version, at, messages } => {
                self.clear_messages();
                for (index, m) in messages.iter().enumerate() {
                    self.push(path, loc, m.seq, index, &m.message.id)?;
                }
                (version, at)
            }
            LegacyEntry::Truncate { version, at, after } => {
                if after < self.last_seq() {
                    self.locs.truncate(after as usize);
                    self.ids.retain(|_, seq| *seq <= after);
                    self.id_bytes = self.ids.keys().map(|id| id.len()).sum();
                }
                (version, at)
            }
        };
        self.version = version;
        self.updated_at = Some(at);
        Ok(())
    }
}

impl LogState for MessageState {
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
                self.version = header.version;
                self.updated_at = Some(header.updated_at);
                Ok(())
            }
            Some(&APPEND_KIND) => {
                let summary = entry::summarize_append(payload).map_err(|e| undecodable(path, loc, e))?;
                for (index, id) in summary.ids.iter().enumerate() {
                    self.push(path, loc, summary.first_seq.wrapping_add(index as u64), index, id)?;
                }
                self.version = summary.version;
                self.updated_at = Some(summary.at);
                Ok(())
            }
            Some(&JSON_START) => self.apply_legacy(path, loc, payload),
            Some(other) => Err(undecodable(path, loc, format!("unknown record kind {other}"))),
            None => Err(undecodable(path, loc, "empty record")),
        }
    }
}

impl Weigh for MessageState {
    fn weight(&self) -> usize {
        self.locs.capacity() * std::mem::size_of::<MessageLoc>() + self.ids.capacity() * 40 + self.id_bytes + 128
    }
}

//! Writing a whole log anew: a header frame with a fresh log id, then frames,
//! into a temporary file that replaces the log only on [`Rewrite::commit`]
//! (fsync, rename, directory fsync). Used by `replace`, `truncate-after` (which
//! keeps the log compact) and the first write to a 0.1.0 log or to a
//! conversation without one.
//!
//! Every frame written is also applied to a fresh index, through the same
//! [`LogState::apply`] a reader uses, so the index handed back after the commit
//! is exactly what a replay of the new file would build.

use std::path::{Path, PathBuf};

use crate::durable::AtomicFile;
use crate::frame::{self, FrameLoc};
use crate::logfile::LogState;
use crate::stowage::store::types::Error;

pub struct Rewrite<S> {
    path: PathBuf,
    out: AtomicFile,
    state: S,
}

impl<S: LogState> Rewrite<S> {
    /// Starts the new log at `path` with `header` (the payload of its header frame).
    pub fn start(path: &Path, header: &[u8]) -> Result<Self, Error> {
        let mut rewrite = Self { path: path.to_owned(), out: AtomicFile::create(path)?, state: S::empty() };
        rewrite.frame(header)?;
        Ok(rewrite)
    }

    /// Writes one frame (buffered until the commit) and indexes it.
    pub fn frame(&mut self, payload: &[u8]) -> Result<(), Error> {
        let bytes = frame::encode(payload)?;
        let loc = FrameLoc { offset: self.out.position(), len: bytes.len() as u32 };
        self.out.write(&bytes)?;
        self.state.apply(&self.path, loc, payload)
    }

    /// Makes the new log durable and current; returns its index.
    pub fn commit(self) -> Result<S, Error> {
        let Self { out, mut state, .. } = self;
        let len = out.position();
        out.commit()?;
        let tail = state.tail_mut();
        tail.valid_len = len;
        tail.file_len = len;
        Ok(state)
    }
}

/// Frames of a rewritten log hold at most this many records…
pub const CHUNK_RECORDS: usize = 256;
/// …or about this many bytes, so a load reads little beyond what it returns.
pub const CHUNK_BYTES: usize = 256 * 1024;

//! Keeping an in-memory index of a log in step with the file, cheaply.
//!
//! Every log written by this adapter starts with a header frame holding a random
//! 16-byte *log id*. A log only ever changes in two ways: frames are appended
//! (after cutting a torn tail), or the whole file is replaced by a rename, and a
//! replacing file always gets a fresh log id. So an index built from the first
//! `valid_len` bytes of the log with id X is still exact for any file whose id
//! is X and whose length is at least `valid_len`: only the frames after
//! `valid_len` are new. [`sync`] checks exactly that on every call (one `fstat`
//! and one small read of the header, on a handle the call needs anyway), reads
//! only the new tail when the file grew, and replays the whole file when the id
//! changed or the file shrank. Logs of the 0.1.0 adapter have no header (id
//! `None`); they are only replaced by a rewrite that adds one.

use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;

use crate::durable;
use crate::frame::{self, End, FrameLoc, HEADER_LEN};
use crate::io_error;
use crate::stowage::store::types::Error;

/// The random id in a log's header frame.
pub type LogId = [u8; 16];

/// First byte of a header frame's payload, in both logs.
pub const HEADER_KIND: u8 = b'H';
/// Second byte of a header frame's payload: the format of this adapter's logs.
pub const FORMAT: u8 = 2;

/// Which log the index describes and how much of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogTail {
    /// From the header frame; `None` for a log without one (0.1.0, or absent).
    pub log_id: Option<LogId>,
    /// End of the last intact frame indexed.
    pub valid_len: u64,
    /// File length when last looked at; more than `valid_len` means a torn tail.
    pub file_len: u64,
}

/// An index rebuilt from a log's frames.
pub trait LogState: Sized {
    fn empty() -> Self;
    fn tail(&self) -> &LogTail;
    fn tail_mut(&mut self) -> &mut LogTail;
    /// Adds one intact frame read at `loc` (frames arrive in file order).
    fn apply(&mut self, path: &Path, loc: FrameLoc, payload: &[u8]) -> Result<(), Error>;
}

/// Whether damage fails the read or ends the log where it starts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    Fail,
    /// Keep what precedes the damage (for listings, so one damaged
    /// conversation does not hide the others).
    Tolerate,
}

/// The outcome of [`sync`].
pub struct Synced<S> {
    pub state: S,
    /// The whole log was read (no usable cached index).
    pub replayed: bool,
    /// Where damage starts, when tolerated.
    pub damaged_at: Option<u64>,
}

/// Brings `cached` (if any) up to date with the open log `file`.
pub fn sync<S: LogState>(file: &File, path: &Path, cached: Option<S>, damage: Damage) -> Result<Synced<S>, Error> {
    let file_len = durable::file_len(file, path)?;
    let log_id = probe_log_id(file, path, file_len)?;
    let (mut state, replayed) = match cached {
        Some(s) if s.tail().log_id == log_id && file_len >= s.tail().valid_len => (s, false),
        _ => (S::empty(), true),
    };
    // Unchanged. (A known torn tail is always re-read: another writer may have
    // cut it and appended a frame of the same length.)
    let tail = state.tail();
    if !replayed && tail.file_len == file_len && tail.valid_len == file_len {
        return Ok(Synced { state, replayed, damaged_at: None });
    }
    let start = state.tail().valid_len;
    let mut reader = file;
    let scan = frame::read_frames(&mut reader, start, file_len, |loc, payload| state.apply(path, loc, payload))
        .map_err(|e| io_error(&format!("reading {}", path.display()), e))??;
    let damaged_at = match scan.end {
        End::Damaged(at) if damage == Damage::Fail => {
            return Err(Error::Storage(format!(
                "{} is damaged at byte {at}: a record that does not read back intact is \
                 followed by more data",
                path.display()
            )));
        }
        End::Damaged(at) => Some(at),
        End::Clean | End::Torn => None,
    };
    let tail = state.tail_mut();
    tail.valid_len = scan.valid_end;
    tail.file_len = file_len;
    Ok(Synced { state, replayed, damaged_at })
}

/// The log id in the header frame at the start of the file, if it has one.
fn probe_log_id(file: &File, path: &Path, file_len: u64) -> Result<Option<LogId>, Error> {
    const PROBE: usize = HEADER_LEN + 2 + 16;
    if file_len < PROBE as u64 {
        return Ok(None);
    }
    let bytes = durable::read_at(file, path, 0, PROBE)?;
    if bytes.len() < PROBE || frame::parse_header(&bytes).is_none() || bytes[HEADER_LEN] != HEADER_KIND {
        return Ok(None);
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(&bytes[HEADER_LEN + 2..PROBE]);
    Ok(Some(id))
}

/// Checks the header frame's format byte; the log id follows it.
pub fn check_format(path: &Path, loc: FrameLoc, format: u8) -> Result<(), Error> {
    if loc.offset != 0 {
        return Err(Error::Storage(format!(
            "{}: a header record at byte {} is not at the start of the log",
            path.display(),
            loc.offset
        )));
    }
    if format != FORMAT {
        return Err(Error::Storage(format!(
            "{} has format {format}, which this adapter (format {FORMAT}) cannot read; \
             it was written by a newer adapter",
            path.display()
        )));
    }
    Ok(())
}

/// A fresh log id: unique across rewrites, instances and hosts with
/// overwhelming probability (host randomness, wall clock and a counter).
pub fn new_log_id() -> LogId {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut id = [0u8; 16];
    for (half, chunk) in id.chunks_mut(8).enumerate() {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u64(count);
        hasher.write_usize(half);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    id
}

/// A short string unique to this call (for temporary and trash names).
pub fn unique_suffix(count: u64) -> String {
    let id = new_log_id();
    let hex: String = id[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{count}")
}

/// Maps a record that does not decode to a `storage` error naming it.
pub fn undecodable(path: &Path, loc: FrameLoc, what: impl std::fmt::Display) -> Error {
    Error::Storage(format!("{}: the record at byte {} cannot be decoded: {what}", path.display(), loc.offset))
}

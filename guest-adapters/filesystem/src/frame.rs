//! Append-only logs of checksummed frames.
//!
//! A frame is `MAGIC | payload length (u32 LE) | CRC-32 of payload (u32 LE) | payload`.
//! A log is read front to back; it ends at the first frame that is incomplete or
//! whose checksum fails *at the end of the file* (a torn tail: the write that was in
//! progress when the process died, never acknowledged). A bad frame followed by more
//! data is corruption and is reported, never skipped.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::io_error;
use crate::stowage::store::types::Error;

const MAGIC: [u8; 4] = *b"STW1";
const HEADER_LEN: usize = 12;
/// Frames larger than this are rejected on write and treated as corruption on read.
const MAX_FRAME: usize = 1 << 30;

/// The frames of a log, and where its valid part ends.
pub struct LogContents {
    pub frames: Vec<Vec<u8>>,
    /// Byte length of the valid prefix; anything after it is a torn tail.
    pub valid_len: u64,
    pub file_len: u64,
}

/// Reads every intact frame of the log at `path`; a missing file is an empty log;
/// damage followed by more data is an error naming the offset.
pub fn read_log(path: &Path) -> Result<LogContents, Error> {
    let (contents, corrupt_at) = read_log_prefix(path)?;
    match corrupt_at {
        None => Ok(contents),
        Some(offset) => Err(Error::Storage(format!(
            "{} is corrupt at byte {offset}: a damaged record is followed by more data",
            path.display()
        ))),
    }
}

/// Like [`read_log`], but damage ends the log instead of failing: the frames
/// before it, and where the damage starts.
pub fn read_log_prefix(path: &Path) -> Result<(LogContents, Option<u64>), Error> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes)
                .map_err(|e| io_error(&format!("reading {}", path.display()), e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&format!("opening {}", path.display()), e)),
    }
    Ok(parse_prefix(&bytes))
}

/// Splits `bytes` into frames. `Err(offset)` means a damaged frame in the middle.
#[cfg(test)]
fn parse(bytes: &[u8]) -> Result<LogContents, u64> {
    match parse_prefix(bytes) {
        (contents, None) => Ok(contents),
        (_, Some(offset)) => Err(offset),
    }
}

/// The intact frames, and the offset of a damaged frame followed by more data.
fn parse_prefix(bytes: &[u8]) -> (LogContents, Option<u64>) {
    let mut frames = Vec::new();
    let mut offset = 0usize;
    let mut corrupt = None;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        if rest.len() < HEADER_LEN {
            break; // torn header
        }
        if rest[..4] != MAGIC {
            corrupt = damaged_unless_tail(bytes, offset);
            break;
        }
        let len = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
        let crc = u32::from_le_bytes([rest[8], rest[9], rest[10], rest[11]]);
        if len > MAX_FRAME {
            corrupt = damaged_unless_tail(bytes, offset);
            break;
        }
        if rest.len() < HEADER_LEN + len {
            break; // torn payload
        }
        let payload = &rest[HEADER_LEN..HEADER_LEN + len];
        if crc32fast::hash(payload) != crc {
            if rest.len() == HEADER_LEN + len {
                break; // the last frame was torn (e.g. zero-filled by the filesystem)
            }
            corrupt = Some(offset as u64);
            break;
        }
        frames.push(payload.to_vec());
        offset += HEADER_LEN + len;
    }
    let contents = LogContents { frames, valid_len: offset as u64, file_len: bytes.len() as u64 };
    (contents, corrupt)
}

/// A bad frame at `offset` is a torn tail (a crash while extending the file can
/// leave a zeroed or garbage header) unless an intact frame follows it somewhere;
/// then it is damage, reported at `offset`.
fn damaged_unless_tail(bytes: &[u8], offset: usize) -> Option<u64> {
    let mut at = offset + 1;
    while let Some(found) = bytes[at..].windows(MAGIC.len()).position(|w| w == MAGIC) {
        let start = at + found;
        let rest = &bytes[start..];
        if rest.len() >= HEADER_LEN {
            let len = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
            let crc = u32::from_le_bytes([rest[8], rest[9], rest[10], rest[11]]);
            if len <= MAX_FRAME
                && rest.len() >= HEADER_LEN + len
                && crc32fast::hash(&rest[HEADER_LEN..HEADER_LEN + len]) == crc
            {
                return Some(offset as u64);
            }
        }
        at = start + 1;
    }
    None
}

fn encode(payload: &[u8]) -> Result<Vec<u8>, Error> {
    if payload.len() > MAX_FRAME {
        return Err(Error::InvalidInput(format!(
            "a record of {} bytes exceeds the filesystem adapter's limit of {MAX_FRAME} bytes",
            payload.len()
        )));
    }
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// Appends one frame durably. `contents` is the caller's fresh read of the log: a
/// torn tail is cut off first, so the new frame follows the last intact one.
pub fn append_frame(path: &Path, contents: &LogContents, payload: &[u8]) -> Result<(), Error> {
    let frame = encode(payload)?;
    let what = |op: &str| format!("{op} {}", path.display());
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| io_error(&what("opening"), e))?;
    if contents.file_len != contents.valid_len {
        file.set_len(contents.valid_len)
            .map_err(|e| io_error(&what("repairing the torn tail of"), e))?;
    }
    let new_file = contents.file_len == 0;
    file.seek(SeekFrom::Start(contents.valid_len))
        .map_err(|e| io_error(&what("seeking in"), e))?;
    let result = file.write_all(&frame).and_then(|()| file.sync_data());
    if let Err(e) = result {
        // Leave no half frame behind for the next writer to mistake for a torn tail.
        let _ = file.set_len(contents.valid_len);
        return Err(io_error(&what("appending to"), e));
    }
    // A new file's directory entry must be durable too.
    if new_file && let Some(dir) = path.parent() {
        sync_dir(dir);
    }
    Ok(())
}

/// Replaces the file at `path` with `frames`, atomically (temp file, fsync, rename).
pub fn write_log(path: &Path, frames: &[Vec<u8>]) -> Result<(), Error> {
    let mut bytes = Vec::new();
    for payload in frames {
        bytes.extend_from_slice(&encode(payload)?);
    }
    write_atomically(path, &bytes)
}

/// Writes `bytes` to `path` atomically: a reader sees the old or the new content.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = path.with_extension("tmp");
    let what = |op: &str| format!("{op} {}", tmp.display());
    let mut file = File::create(&tmp).map_err(|e| io_error(&what("creating"), e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(&what("writing"), e))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| io_error(&what("renaming"), e))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir);
    }
    Ok(())
}

/// Best effort: make a rename or a new entry durable. Not every WASI host lets a
/// directory be opened as a file, and a failure here loses nothing already written.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(payloads: &[&[u8]]) -> Vec<u8> {
        payloads.iter().filter_map(|p| encode(p).ok()).flatten().collect()
    }

    #[test]
    fn every_truncation_of_the_last_frame_is_a_torn_tail() {
        let bytes = log_of(&[b"first", b"second frame"]);
        let first_len = HEADER_LEN + 5;
        for cut in first_len..bytes.len() {
            let contents = parse(&bytes[..cut]);
            assert!(
                matches!(&contents, Ok(c) if c.frames == [b"first".to_vec()] && c.valid_len == first_len as u64),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_zeroed_tail_is_torn_not_corrupt() {
        let mut bytes = log_of(&[b"first"]);
        bytes.extend([0u8; 40]);
        assert!(matches!(parse(&bytes), Ok(c) if c.frames.len() == 1));
    }

    #[test]
    fn damage_in_the_middle_is_corruption() {
        let mut bytes = log_of(&[b"first", b"second", b"third"]);
        bytes[HEADER_LEN + 2] ^= 0xff;
        assert_eq!(parse(&bytes).err(), Some(0));
    }
}

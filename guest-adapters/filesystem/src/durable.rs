//! Durable file operations: every function returns only once what it wrote is
//! on stable storage, so the caller may acknowledge it.
//!
//! - [`append_frame`] cuts a torn tail, writes one frame at the end of a log and
//!   `sync_data`s the file (the file's directory entry is already durable: logs
//!   are only ever created by [`AtomicFile::commit`]).
//! - [`AtomicFile`] writes a whole file beside its target, `sync_all`s it,
//!   renames it over the target and fsyncs the directory, so a reader (and a
//!   crash) sees the old file or the new one, never a mix.
//! - [`ensure_dir`] creates missing directories and fsyncs the parent of each one
//!   it created, so the new entry survives power loss.
//!
//! Nothing here creates symlinks or hard links (the host denies them).

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::frame::{self, FrameLoc};
use crate::io_error;
use crate::stowage::store::types::Error;

/// Opens `path` for reading (and writing if `write`); `None` if it does not exist.
pub fn open_existing(path: &Path, write: bool) -> Result<Option<File>, Error> {
    match OpenOptions::new().read(true).write(write).open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(&format!("opening {}", path.display()), e)),
    }
}

/// The current length of an open file.
pub fn file_len(file: &File, path: &Path) -> Result<u64, Error> {
    file.metadata().map(|m| m.len()).map_err(|e| io_error(&format!("inspecting {}", path.display()), e))
}

/// Reads `len` bytes at `offset`, or fewer if the file ends first.
pub fn read_at(file: &File, path: &Path, offset: u64, len: usize) -> Result<Vec<u8>, Error> {
    let mut reader = file;
    let mut out = Vec::with_capacity(len);
    reader
        .seek(SeekFrom::Start(offset))
        .and_then(|_| reader.take(len as u64).read_to_end(&mut out))
        .map_err(|e| io_error(&format!("reading {} at byte {offset}", path.display()), e))?;
    Ok(out)
}

/// Calls `each` with the index and payload of every frame of `frames` (sorted
/// by offset, no duplicates), in that order. Adjacent frames are read with one
/// call. A frame that is no longer intact is a `storage` error naming the file
/// and the frame's offset.
pub fn for_each_payload(
    file: &File,
    path: &Path,
    frames: &[FrameLoc],
    mut each: impl FnMut(usize, FrameLoc, &[u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    /// Bound on one read, so a huge page does not need one huge buffer.
    const MAX_RUN: u64 = 4 << 20;
    let mut i = 0;
    while i < frames.len() {
        let start = frames[i].offset;
        let mut j = i + 1;
        while j < frames.len() && frames[j].offset == frames[j - 1].end() && frames[j].end() - start <= MAX_RUN {
            j += 1;
        }
        let run = read_at(file, path, start, (frames[j - 1].end() - start) as usize)?;
        for (k, loc) in frames.iter().enumerate().take(j).skip(i) {
            let from = (loc.offset - start) as usize;
            let bytes = run.get(from..from + loc.len as usize).unwrap_or_default();
            let payload = frame::whole_frame(bytes).ok_or_else(|| {
                Error::Storage(format!(
                    "{} is damaged at byte {}: a stored record no longer reads back intact",
                    path.display(),
                    loc.offset
                ))
            })?;
            each(k, *loc, payload)?;
        }
        i = j;
    }
    Ok(())
}

/// Writes `frame` at `valid_len`, after cutting whatever follows it (a torn
/// tail), and syncs the file's data. On failure the log is cut back to
/// `valid_len`, so no half frame is left for a later reader.
pub fn append_frame(mut file: &File, path: &Path, valid_len: u64, file_len: u64, frame: &[u8]) -> Result<(), Error> {
    let what = |op: &str| format!("{op} {}", path.display());
    if file_len != valid_len {
        file.set_len(valid_len).map_err(|e| io_error(&what("cutting the torn tail of"), e))?;
    }
    let result =
        file.seek(SeekFrom::Start(valid_len)).and_then(|_| file.write_all(frame)).and_then(|()| file.sync_data());
    if let Err(e) = result {
        let _ = file.set_len(valid_len).and_then(|()| file.sync_data());
        return Err(io_error(&what("appending to"), e));
    }
    Ok(())
}

/// A file written beside its target and renamed over it on [`commit`](Self::commit).
/// Dropped without a commit, the temporary file is removed and the target is
/// untouched.
pub struct AtomicFile {
    target: PathBuf,
    tmp: PathBuf,
    out: std::io::BufWriter<File>,
    written: u64,
    committed: bool,
}

impl AtomicFile {
    pub fn create(target: &Path) -> Result<Self, Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let unique = crate::logfile::unique_suffix(COUNTER.fetch_add(1, Ordering::Relaxed));
        let tmp = target.with_file_name(format!(".{name}.{unique}.tmp"));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_error(&format!("creating {}", tmp.display()), e))?;
        Ok(Self {
            target: target.to_owned(),
            tmp,
            out: std::io::BufWriter::with_capacity(256 * 1024, file),
            written: 0,
            committed: false,
        })
    }

    /// Bytes written so far: the offset the next write lands at.
    pub fn position(&self) -> u64 {
        self.written
    }

    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out.write_all(bytes).map_err(|e| io_error(&format!("writing {}", self.tmp.display()), e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Syncs the file, renames it over the target and syncs the directory.
    pub fn commit(mut self) -> Result<(), Error> {
        let what = |op: &str, p: &Path| format!("{op} {}", p.display());
        self.out
            .flush()
            .and_then(|()| self.out.get_ref().sync_all())
            .map_err(|e| io_error(&what("writing", &self.tmp), e))?;
        std::fs::rename(&self.tmp, &self.target)
            .map_err(|e| io_error(&what("renaming into place", &self.target), e))?;
        self.committed = true;
        match self.target.parent() {
            Some(dir) => sync_dir(dir),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` atomically and durably.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut file = AtomicFile::create(path)?;
    file.write(bytes)?;
    file.commit()
}

/// Makes the entries of `dir` (a rename, a new file or directory) durable.
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(&format!("syncing the directory {}", dir.display()), e))
}

/// Creates `dir` and any missing parent, fsyncing the parent of every directory
/// it creates.
pub fn ensure_dir(dir: &Path) -> Result<(), Error> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(Error::Storage(format!("{} exists but is not a directory", dir.display())));
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&format!("inspecting {}", dir.display()), e)),
    }
    let parent = dir.parent();
    if let Some(parent) = parent {
        ensure_dir(parent)?;
    }
    match std::fs::create_dir(dir) {
        // Created by a concurrent writer: its entry may not be durable yet either.
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_error(&format!("creating {}", dir.display()), e)),
    }
    match parent {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

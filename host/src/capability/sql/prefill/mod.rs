//! Writing the WAL's next frames ahead of the writers, as zeros, so that a
//! commit overwrites file space instead of growing the file.
//!
//! A flush (`fdatasync`) of a file that grew must also write its inode, for the
//! new length: one more synchronous write per flush (bench machine: 198 against
//! 132 µs for an 8 KiB write and its flush). SQLite grows the WAL frame by frame
//! until a checkpoint lets the next writer start it over, and then overwrites it
//! in place; with checkpoints at [`CHECKPOINT_FRAMES`] that growth spans the
//! first ~16 MiB a fresh store writes (phase A's first 1,300 appends). Space
//! that `fallocate` reserves does not help (its extents are marked unwritten,
//! and the first write to them changes the inode too); written zeros do.
//!
//! Unflushed commits (`sql_sync = "normal"`) get the same room, for CPU rather
//! than flushes: a frame past the file's end makes the kernel allocate and
//! reserve a new page-cache page, a frame over zeros reuses one.
//!
//! SQLite ignores what follows the WAL's last valid frame (a frame of zeros has
//! page number 0, never valid), so zeros past the end are as good as the stale
//! frames a restarted WAL leaves behind. They are written holding SQLite's own
//! write lock (`BEGIN IMMEDIATE` on a connection of the host's), so no writer of
//! any process appends a frame meanwhile, and this host's write gate, so its own
//! writers queue as usual instead of polling SQLite's lock.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::checkpoint::{CHECKPOINT_FRAMES, ClearOnDrop};
use super::gate::WriteGate;
use super::identity::{self, Identity};

/// The WAL length, in frames, from which commits are kept within written room:
/// a store that opens, appends once and closes gains nothing from it.
pub const FIRST_FRAMES: u64 = 256;

/// Frames of room a new WAL gets with its first frame ([`first_room`]): a new
/// store's first calls (its schema, a conversation, the first appends) commit
/// into written space, so their flushes write no inode (bench machine: 116–134
/// against 208 µs for a first append's 41 KB of frames and its flush), and
/// their frames reuse page-cache pages.
pub const FIRST_ROOM_FRAMES: u64 = 16;

/// The WAL is prefilled in chunks of this many frames (4 MiB at 4 KiB pages),
/// starting when a commit leaves less than half a chunk of room. Each prefill
/// makes the commit that comes next wait (for the write turn, and at FULL for its
/// flush, which writes the zeros too): a few big chunks delay a few calls, where
/// small ones would delay many (phase A: p99 3× higher with 1 MiB chunks).
pub const CHUNK_FRAMES: u64 = 1024;

/// The WAL is prefilled up to this many frames: a checkpoint starts it over
/// near [`CHECKPOINT_FRAMES`]. Past it (checkpoints held back by a reader) the
/// file grows as SQLite writes.
pub const MAX_FRAMES: u64 = CHECKPOINT_FRAMES + CHUNK_FRAMES;

/// The room a prefill makes when the WAL holds `frames` frames: whole chunks,
/// at least half a chunk past `frames` (so, from one prefill to the next, one
/// chunk more).
pub fn target(frames: u64) -> u64 {
    (frames + CHUNK_FRAMES / 2).div_ceil(CHUNK_FRAMES) * CHUNK_FRAMES
}

/// The WAL's header, before its first frame.
const WAL_HEADER: u64 = 32;

/// A frame's header, before its page.
const FRAME_HEADER: u64 = 24;

/// Why a prefill stopped (it is tried again half a chunk later).
#[derive(Debug, thiserror::Error)]
pub enum PrefillError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("writing the WAL ahead: {0}")]
    Io(#[from] io::Error),
    #[error("flushing the WAL's new room: {0}")]
    Flush(io::Error),
    #[error("another writer held the write turn")]
    Busy,
}

/// Starts prefills of one database's WAL after commits.
pub struct Prefiller {
    db: PathBuf,
    wal: PathBuf,
    /// Commits are flushed (`sql_sync = "full"`): so are the zeros, once written.
    flush: bool,
    writers: Option<Arc<WriteGate>>,
    busy_timeout: Duration,
    /// The WAL file a prefill last measured, and the frames it has room for
    /// (after a failed prefill: the frames at which to try again).
    room: Mutex<Option<(Identity, u64)>>,
    /// Unflushed commits only: the frames of the latest commit, and the WAL file
    /// looked up since they last went down.
    seen: Mutex<(u64, Option<Identity>)>,
    running: Arc<AtomicBool>,
    /// Set when a flush of the room failed (see `Durability::refuse_flushes`);
    /// no prefill runs once it is.
    refused: Arc<AtomicBool>,
    /// Makes the next prefill's flush count as failed (tests).
    #[cfg(test)]
    fail_flush: AtomicBool,
}

impl Prefiller {
    pub fn new(
        db: &Path,
        wal: &Path,
        flush: bool,
        writers: Option<Arc<WriteGate>>,
        busy_timeout: Duration,
        refused: Arc<AtomicBool>,
    ) -> Self {
        Self {
            db: db.to_path_buf(),
            wal: wal.to_path_buf(),
            flush,
            writers,
            busy_timeout,
            room: Mutex::new(None),
            seen: Mutex::new((0, None)),
            running: Arc::new(AtomicBool::new(false)),
            refused,
            #[cfg(test)]
            fail_flush: AtomicBool::new(false),
        }
    }

    /// Set while a prefill is under way.
    pub fn running_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.running)
    }

    /// A prefill is under way.
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    fn room(&self) -> MutexGuard<'_, Option<(Identity, u64)>> {
        self.room.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// After a commit that is not flushed (`sql_sync = "normal"`), which left
    /// `frames` frames in the WAL: as [`after_commit`](Self::after_commit), with
    /// the WAL looked up here. Unflushed, a growing WAL costs CPU rather than
    /// flushes: each frame past the end makes the kernel allocate and reserve a
    /// new page-cache page, where a frame over zeros overwrites one (bench
    /// machine: ~5.5 against ~2.6 µs per frame). The file is looked up, and its
    /// room measured, again only when its frame count went down (a checkpoint
    /// started it over, or SQLite made it anew after every connection closed),
    /// not on every commit.
    pub fn after_unflushed_commit(self: &Arc<Self>, frames: u64) {
        let wal = {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            let (last, wal) = &mut *seen;
            if frames < *last {
                // Nothing holds the WAL open between flushes here, so a file made
                // anew may even reuse the old one's inode: measure again.
                *wal = None;
                *self.room() = None;
            }
            *last = frames;
            if frames >= FIRST_FRAMES && wal.is_none() {
                *wal = identity::of_path(&self.wal).ok();
            }
            *wal
        };
        self.after_commit(frames, wal);
    }

    /// After a commit that left `frames` frames in the WAL the host flushes as
    /// `wal` (`None` when not known yet): starts a prefill on a blocking task
    /// when the commits come within half a chunk of the end of the room written
    /// ahead, so that they overwrite zeros instead of growing the file. Room
    /// measured on another file (the WAL was deleted and made anew) counts as none.
    pub fn after_commit(self: &Arc<Self>, frames: u64, wal: Option<Identity>) {
        let room = match (*self.room(), wal) {
            (Some((measured, room)), Some(wal)) if measured == wal => room,
            _ => 0,
        };
        let near_end = frames + CHUNK_FRAMES / 2 > room && room < MAX_FRAMES;
        let refused = self.refused.load(Ordering::Acquire);
        if frames < FIRST_FRAMES || !near_end || refused || self.running.swap(true, Ordering::AcqRel) {
            return;
        }
        let running = ClearOnDrop(Arc::clone(&self.running));
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        let me = Arc::clone(self);
        drop(handle.spawn_blocking(move || {
            let _running = running;
            let writers = me.writers.as_ref();
            let filled = prefill(&me.db, &me.wal, target(frames), me.flush, writers, me.busy_timeout);
            #[cfg(test)]
            let filled = if me.fail_flush.swap(false, Ordering::AcqRel) {
                Err(PrefillError::Flush(io::Error::other("injected flush failure")))
            } else {
                filled
            };
            match filled {
                Ok(Some(measured)) => {
                    *me.room() = Some(measured);
                    if !me.flush {
                        // Unflushed commits look the WAL up only when its frame
                        // count goes down; a WAL made anew without that happening
                        // is the file measured here.
                        me.seen.lock().unwrap_or_else(PoisonError::into_inner).1 = Some(measured.0);
                    }
                }
                Ok(None) => {}
                // The zeros' pages may be marked clean off the disk, and the
                // file's new length with them: as a failed flush of the WAL.
                Err(error @ PrefillError::Flush(_)) => {
                    me.refused.store(true, Ordering::Release);
                    tracing::error!(db = %me.db.display(), %error, "flushing the WAL's new room failed; no later commit will be acknowledged as durable");
                }
                Err(error) => {
                    tracing::warn!(db = %me.db.display(), %error, "WAL prefill failed; retried half a chunk later");
                    if let Some(wal) = wal {
                        *me.room() = Some((wal, frames + CHUNK_FRAMES));
                    }
                }
            }
        }));
    }
}

/// Makes sure the WAL of `db` holds written space for `frames` frames (at most
/// [`MAX_FRAMES`]) and, with `flush`, flushes what it added. Returns the WAL
/// file's identity and the frames it now has room for; `None` when there is no
/// WAL to fill.
pub fn prefill(
    db: &Path,
    wal: &Path,
    frames: u64,
    flush: bool,
    writers: Option<&Arc<WriteGate>>,
    busy_timeout: Duration,
) -> Result<Option<(Identity, u64)>, PrefillError> {
    // Looked up without reading its times (see `identity`).
    match identity::of_path(wal) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    let conn = super::checkpoint::open_aside(db)?;
    conn.busy_timeout(busy_timeout)?;
    let page: i64 = conn.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    let frame = u64::try_from(page).unwrap_or(0).max(512) + FRAME_HEADER;
    let want = WAL_HEADER + frames.min(MAX_FRAMES) * frame;
    let (file, length, added) = {
        let _turn = match writers.map(|gate| gate.enter(busy_timeout)) {
            Some(Err(_)) => return Err(PrefillError::Busy),
            Some(Ok(turn)) => Some(turn),
            None => None,
        };
        conn.execute_batch("BEGIN IMMEDIATE")?;
        // Opened only now: this connection has the WAL open, so no other
        // connection's close can delete it before the zeros are in.
        let extended = open_wal(wal).and_then(|file| extend(&file, want).map(|(length, added)| (file, length, added)));
        conn.execute_batch("ROLLBACK")?;
        extended?
    };
    if added && flush {
        file.sync_data().map_err(PrefillError::Flush)?;
    }
    Ok(Some((identity::of_file(&file)?, length.saturating_sub(WAL_HEADER) / frame)))
}

/// Writes zeros past the first frame of the WAL at `wal`, just started, up to
/// [`FIRST_ROOM_FRAMES`] frames of the page size its header gives. The caller
/// holds SQLite's write lock, so no writer appends a frame meanwhile. `true` if
/// the file grew.
pub fn first_room(wal: &Path) -> io::Result<bool> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(wal)?;
    let mut header = [0u8; WAL_HEADER as usize];
    file.read_exact_at(&mut header, 0)?;
    let page = u64::from(u32::from_be_bytes([header[8], header[9], header[10], header[11]]));
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a WAL header with page size {page}")));
    }
    Ok(extend(&file, WAL_HEADER + FIRST_ROOM_FRAMES * (page + FRAME_HEADER))?.1)
}

/// The WAL, for writing; a symbolic link in its place is refused.
fn open_wal(wal: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed()).open(wal)
}

/// Writes zeros from the end of `file` to `want` bytes: (the length now, whether
/// it grew). Its length is read with a seek, not a stat, which would mark its
/// times as read (see `identity`).
fn extend(mut file: &File, want: u64) -> io::Result<(u64, bool)> {
    let length = file.seek(SeekFrom::End(0))?;
    if length >= want {
        return Ok((length, false));
    }
    let zeros = [0u8; 64 * 1024];
    let mut at = length;
    while at < want {
        let n = usize::try_from(want - at).unwrap_or(usize::MAX).min(zeros.len());
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok((want, true))
}

#[cfg(test)]
mod tests;

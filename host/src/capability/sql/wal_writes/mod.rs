//! A commit's WAL frames written with one system call (a VFS shim over SQLite's
//! `unix` VFS, used by the adapters' connections).
//!
//! SQLite writes a WAL frame as two `pwrite`s, its 24-byte header and then its
//! page, so a commit of n pages makes 2n system calls: 2.4 µs a frame on the
//! bench machine, against 0.85 µs when eight frames go in one write. The shim
//! holds the writes a commit appends to the WAL (contiguous by construction) and
//! writes them at once when the commit's last frame, the one whose header
//! carries the database's size, is complete.
//!
//! What SQLite or any reader can observe does not change:
//! - A commit is written before SQLite publishes it: its last frame ends the
//!   commit's writes, and readers find frames only through the wal-index header
//!   SQLite updates afterwards. A failed write is reported by the `xWrite` that
//!   made it, so the commit fails unpublished, as a failed `pwrite` would.
//! - Anything else held (frames a cache spill wrote before its commit, a rewritten
//!   frame header) is written before any other operation on the WAL file (read,
//!   size, sync, truncate, lock, close, file control) and before any operation on
//!   its database file, whose methods hold the wal-index's locks, maps and the
//!   barrier that publishes a commit.
//! - A held write that fails is reported by the operation that made it, and,
//!   since SQLite ignores some of those errors (a lock release's, a file
//!   control's), it also fails every later write of that WAL, and every read
//!   of what was lost, until the transaction ends (SQLite releases the WAL's
//!   write lock, lock 0, only then): a transaction that lost frames can never
//!   commit over the hole, even after a `ROLLBACK TO` past them, while its
//!   rollback still reads the committed frames. Releases (unlocks, unmaps,
//!   close) are always passed on, so a failure never leaves a lock held. This
//!   relies on SQLite's shared-memory locks, which `locking_mode=EXCLUSIVE`
//!   would skip; the authorizer denies that pragma to adapters.
//! - At most [`HOLD`] bytes are held.
//! - Flushes (`fdatasync`) are unchanged: with `synchronous=NORMAL` SQLite never
//!   flushed at commit either; the host's group commit flushes afterwards.
//!
//! The wal-index barrier cannot report an error. Held bytes found there would
//! mean SQLite changed how it writes a commit; they are written, counted (a
//! test keeps the count at zero), and a failure there refuses every later write
//! and read of that WAL.

use std::ffi::{CStr, c_int};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use rusqlite::ffi;

mod methods;
#[cfg(test)]
mod tests;

use self::methods::METHODS;

/// The shim's name, for `sqlite3_open_v2`.
const NAME: &CStr = c"stowage-wal";

/// The VFS wrapped. Its methods other than `xOpen` ignore their VFS argument
/// (SQLite 3.54's `unix*` functions), so the shim's copy of it serves them
/// unchanged; `xOpen` is handed the wrapped VFS itself.
const WRAPPED: &CStr = c"unix";

/// Bytes held at most before they are written: under 128 KiB, since the `unix`
/// VFS writes at most 128 KiB - 1 bytes a `pwrite` (`seekAndWriteFd` masks the
/// length with `0x1ffff`, and a write of exactly 128 KiB writes nothing).
pub const HOLD: usize = 120 << 10;

/// A WAL frame's header: page number, database size after a commit (0 before the
/// commit's last frame), salts and checksums.
const FRAME_HEADER: usize = 24;

/// Where the wrapped VFS's file sits within the shim's.
const REAL_OFFSET: usize = std::mem::size_of::<Shim>().next_multiple_of(16);

static REAL_VFS: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(ptr::null_mut());
static REGISTERED: OnceLock<bool> = OnceLock::new();
static LATE: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
thread_local! {
    /// Writes this thread's shim files made to the wrapped VFS (tests).
    static WRITES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Held writes on this thread fail with `SQLITE_FULL` while set (tests).
    static FAIL_HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Bytes the WAL last touched on this thread holds (tests).
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The shim's VFS name once registered; `None` when the platform's VFS is not
/// `unix` (connections then use the default VFS).
pub fn vfs() -> Option<&'static CStr> {
    // SAFETY: registration runs once; see `register`.
    let registered = *REGISTERED.get_or_init(|| unsafe { register() });
    registered.then_some(NAME)
}

/// Held writes that reached the wal-index barrier unwritten (zero unless SQLite
/// changed how it writes a commit).
#[cfg(test)]
fn late_writes() -> u64 {
    LATE.load(Ordering::Relaxed)
}

/// # Safety
/// Called once, through `REGISTERED`.
unsafe fn register() -> bool {
    // SAFETY: `sqlite3_vfs_find` initialises SQLite and returns a VFS that lives
    // as long as the process (the built-in `unix` VFS is never unregistered).
    let real = unsafe { ffi::sqlite3_vfs_find(WRAPPED.as_ptr()) };
    if real.is_null() {
        return false;
    }
    REAL_VFS.store(real, Ordering::Release);
    // SAFETY: `real` is a valid VFS (above); the copy is leaked, so it lives as
    // long as SQLite may use it.
    unsafe {
        let mut vfs = *real;
        let Ok(size) = c_int::try_from(REAL_OFFSET) else { return false };
        vfs.szOsFile = size + (*real).szOsFile;
        vfs.zName = NAME.as_ptr();
        vfs.pNext = ptr::null_mut();
        vfs.xOpen = Some(open);
        let vfs = Box::leak(Box::new(vfs));
        ffi::sqlite3_vfs_register(vfs, 0) == ffi::SQLITE_OK
    }
}

/// A file opened through the shim: a database or a WAL, with the wrapped VFS's
/// file after it. SQLite runs a connection's calls one at a time, and a database
/// file and its WAL belong to one connection, so nothing here is shared.
#[repr(C)]
struct Shim {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    wal: bool,
    /// A database file's open WAL, or a WAL's database file (null: none).
    peer: *mut Shim,
    held: Vec<u8>,
    /// The offset of `held`'s first byte.
    at: i64,
    /// Where the page of a commit's last frame goes, once its header is written.
    commit_page_at: Option<i64>,
    /// Where the first held write that failed began: the transaction's later
    /// writes, and reads from there on, fail until the write lock is released.
    lost_from: Option<i64>,
    /// A held write failed at the barrier, where SQLite cannot be told: writes
    /// and reads fail for good.
    refused: bool,
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let real_vfs = REAL_VFS.load(Ordering::Acquire);
    // SAFETY: the shim is registered only after `REAL_VFS` is set.
    let Some(real_open) = (unsafe { (*real_vfs).xOpen }) else { return ffi::SQLITE_CANTOPEN };
    if flags & (ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_WAL) == 0 {
        // Journals, temporary files: the wrapped VFS's own file, in place.
        // SAFETY: `file` has room for it (`szOsFile` is larger).
        return unsafe { real_open(real_vfs, name, file, flags, out_flags) };
    }
    // SAFETY: SQLite allocated `szOsFile` bytes at `file`: the shim, then the
    // wrapped file at `REAL_OFFSET`.
    unsafe {
        let real = file.cast::<u8>().add(REAL_OFFSET).cast::<ffi::sqlite3_file>();
        let rc = real_open(real_vfs, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            if let Some(real_close) = (*real).pMethods.as_ref().and_then(|m| m.xClose) {
                real_close(real);
            }
            (*file).pMethods = ptr::null();
            return rc;
        }
        let wal = flags & ffi::SQLITE_OPEN_WAL != 0;
        let shim = file.cast::<Shim>();
        let mut peer = ptr::null_mut();
        if wal && !name.is_null() {
            // SAFETY: for a WAL, `name` is the pager's, as this function requires.
            let db = ffi::sqlite3_database_file_object(name).cast::<Shim>();
            if !db.is_null() && ptr::eq((*db).base.pMethods, &METHODS) {
                (*db).peer = shim;
                peer = db;
            }
        }
        let fresh = Shim {
            base: ffi::sqlite3_file { pMethods: &METHODS },
            real,
            wal,
            peer,
            held: Vec::new(),
            at: 0,
            commit_page_at: None,
            lost_from: None,
            refused: false,
        };
        ptr::write(shim, fresh);
    }
    ffi::SQLITE_OK
}

/// # Safety
/// `file` was opened by [`open`] as a shim and not closed.
unsafe fn shim<'a>(file: *mut ffi::sqlite3_file) -> &'a mut Shim {
    // SAFETY: as the caller promises.
    unsafe { &mut *file.cast::<Shim>() }
}

impl Shim {
    fn methods(&self) -> &ffi::sqlite3_io_methods {
        // SAFETY: the wrapped file opened successfully, so its methods are set.
        unsafe { &*(*self.real).pMethods }
    }

    /// The WAL this file's held writes go to: itself, or its database's WAL.
    fn wal(&mut self) -> Option<&mut Shim> {
        // SAFETY: a peer unlinks itself when it closes, so a set one is open.
        if self.wal { Some(self) } else { unsafe { self.peer.as_mut() } }
    }

    /// Writes what this WAL holds; a failure fails the WAL's transaction.
    fn write_held(&mut self) -> c_int {
        if self.held.is_empty() {
            return ffi::SQLITE_OK;
        }
        #[cfg(test)]
        let rc = if FAIL_HELD.with(std::cell::Cell::get) {
            ffi::SQLITE_FULL
        } else {
            self.write_through(self.held.as_ptr(), self.held.len(), self.at)
        };
        #[cfg(not(test))]
        let rc = self.write_through(self.held.as_ptr(), self.held.len(), self.at);
        self.held.clear();
        #[cfg(test)]
        HELD.with(|held| held.set(0));
        if rc != ffi::SQLITE_OK {
            self.lost_from = Some(self.lost_from.map_or(self.at, |lost| lost.min(self.at)));
        }
        rc
    }

    /// Whether a read of the WAL would meet bytes a failed write lost (or the
    /// WAL is refused). What lies before them is what SQLite wrote, so a
    /// rollback still reads the committed frames it needs.
    fn meets_lost(&self, offset: i64, amount: c_int) -> bool {
        self.refused || self.lost_from.is_some_and(|lost| offset.saturating_add(i64::from(amount)) > lost)
    }

    fn write_through(&mut self, data: *const u8, len: usize, offset: i64) -> c_int {
        let (Some(write), Ok(amount)) = (self.methods().xWrite, c_int::try_from(len)) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        #[cfg(test)]
        WRITES.with(|writes| writes.set(writes.get() + 1));
        // SAFETY: `data` holds `len` bytes; `real` is open.
        unsafe { write(self.real, data.cast(), amount, offset) }
    }

    /// Before an operation: the held writes are written, and a WAL that lost
    /// some refuses it.
    fn settle(&mut self) -> c_int {
        let Some(wal) = self.wal() else { return ffi::SQLITE_OK };
        let rc = wal.write_held();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        // The database file itself is intact: only the WAL's reads and writes
        // could meet lost frames (see `meets_lost` and `hold`).
        if self.wal && self.refused { ffi::SQLITE_IOERR_WRITE } else { ffi::SQLITE_OK }
    }

    /// Before a release, which is always passed on: the held writes are written
    /// if they can be (a failure fails the WAL's transaction, as above).
    fn settle_for_release(&mut self) {
        if let Some(wal) = self.wal() {
            wal.write_held();
        }
    }

    /// SQLite released the WAL's write lock: the transaction is over, committed
    /// or rolled back, and what a failed write lost lies past its last frame.
    fn transaction_ended(&mut self) {
        if let Some(wal) = self.wal() {
            wal.lost_from = None;
        }
    }

    /// The barrier that publishes a commit: anything still held is written, and
    /// a failure, which SQLite cannot be told of, refuses the WAL for good.
    fn before_barrier(&mut self) {
        let Some(wal) = self.wal().filter(|wal| !wal.held.is_empty()) else { return };
        LATE.fetch_add(1, Ordering::Relaxed);
        if wal.write_held() != ffi::SQLITE_OK {
            tracing::error!("a WAL write failed where SQLite could not be told; the connection's WAL is refused");
            wal.refused = true;
        }
    }

    /// A write to the WAL: held, or written at once with what is held.
    fn hold(&mut self, bytes: &[u8], offset: i64) -> c_int {
        if self.lost_from.is_some() || self.refused {
            return ffi::SQLITE_IOERR_WRITE;
        }
        let completes = self.commit_page_at.take() == Some(offset);
        let end = self.at.saturating_add(self.held.len() as i64);
        if !self.held.is_empty() && (offset != end || self.held.len() + bytes.len() > HOLD) {
            let rc = self.write_held();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        let commit_header = bytes.len() == FRAME_HEADER && bytes[4..8] != [0; 4];
        if commit_header {
            self.commit_page_at = Some(offset.saturating_add(FRAME_HEADER as i64));
        }
        // Nothing to join: a commit's last frame alone, or a header rewritten
        // after the commit's frames (its checksums) goes at once.
        if self.held.is_empty() && (commit_header || completes || bytes.len() > HOLD) {
            return self.write_through(bytes.as_ptr(), bytes.len(), offset);
        }
        if self.held.is_empty() {
            self.at = offset;
        }
        self.held.extend_from_slice(bytes);
        #[cfg(test)]
        HELD.with(|held| held.set(self.held.len()));
        if completes { self.write_held() } else { ffi::SQLITE_OK }
    }
}

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
//!   barrier that publishes a commit; failures are reported by that operation.
//! - At most [`HOLD`] bytes are held.
//! - Flushes (`fdatasync`) are unchanged: with `synchronous=NORMAL` SQLite never
//!   flushed at commit either; the host's group commit flushes afterwards.
//!
//! The wal-index barrier cannot report an error. Held bytes found there would
//! mean SQLite changed how it writes a commit; they are written, counted
//! ([`late_writes`]; a test keeps it at zero), and a failure there fails every
//! later operation on that WAL.

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use rusqlite::ffi;

#[cfg(test)]
mod tests;

/// The shim's name, for `sqlite3_open_v2`.
const NAME: &CStr = c"stowage-wal";

/// The VFS wrapped. Its methods other than `xOpen` ignore their VFS argument and
/// read only `pAppData`, so the shim's copy of it serves them unchanged.
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
    /// A held write failed where it could not be reported (WAL files).
    failed: bool,
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

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
            failed: false,
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

    /// Writes what this WAL holds.
    fn write_held(&mut self) -> c_int {
        if self.held.is_empty() {
            return ffi::SQLITE_OK;
        }
        let rc = self.write_through(self.held.as_ptr(), self.held.len(), self.at);
        self.held.clear();
        rc
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

    /// Before any operation but a WAL write: the WAL's held writes are written
    /// (this file's, or its database's WAL's).
    fn settle(&mut self) -> c_int {
        if self.wal {
            if self.failed {
                return ffi::SQLITE_IOERR_WRITE;
            }
            return self.write_held();
        }
        // SAFETY: a peer unlinks itself when it closes, so a set one is open.
        match unsafe { self.peer.as_mut() } {
            Some(wal) => wal.settle(),
            None => ffi::SQLITE_OK,
        }
    }

    /// A write to the WAL: held, or written at once with what is held.
    fn hold(&mut self, bytes: &[u8], offset: i64) -> c_int {
        if self.failed {
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
        if completes { self.write_held() } else { ffi::SQLITE_OK }
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes an open shim file once; it is dropped here.
    unsafe {
        let shim = shim(file);
        let settled = if shim.wal && !shim.failed { shim.write_held() } else { ffi::SQLITE_OK };
        if let Some(peer) = shim.peer.as_mut() {
            peer.peer = ptr::null_mut();
        }
        let closed = match shim.methods().xClose {
            Some(close) => close(shim.real),
            None => ffi::SQLITE_OK,
        };
        ptr::drop_in_place(file.cast::<Shim>());
        if settled != ffi::SQLITE_OK { settled } else { closed }
    }
}

unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, data: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: SQLite passes an open file and `amount` readable bytes at `data`.
    unsafe {
        let shim = shim(file);
        let Ok(len) = usize::try_from(amount) else { return ffi::SQLITE_IOERR_WRITE };
        if shim.wal {
            return shim.hold(std::slice::from_raw_parts(data.cast::<u8>(), len), offset);
        }
        let rc = shim.settle();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        shim.write_through(data.cast(), len, offset)
    }
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite passes an open file.
    unsafe {
        let shim = shim(file);
        if let Some(wal) = shim.peer.as_mut().filter(|wal| !wal.held.is_empty()) {
            LATE.fetch_add(1, Ordering::Relaxed);
            if wal.write_held() != ffi::SQLITE_OK {
                tracing::error!("a WAL write failed where SQLite could not be told; the connection's WAL is refused");
                wal.failed = true;
            }
        }
        if let Some(barrier) = shim.methods().xShmBarrier {
            barrier(shim.real);
        }
    }
}

/// Forwards a method to the wrapped file once the WAL's held writes are written.
macro_rules! settled {
    ($name:ident, $method:ident, $missing:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite passes an open file and the method's own arguments.
            unsafe {
                let shim = shim(file);
                let rc = shim.settle();
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                match shim.methods().$method {
                    Some(method) => method(shim.real $(, $arg)*),
                    None => $missing,
                }
            }
        }
    };
}

settled!(read, xRead, ffi::SQLITE_IOERR_READ, (data: *mut c_void, amount: c_int, offset: i64));
settled!(truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: i64));
settled!(sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int));
settled!(file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut i64));
settled!(lock, xLock, ffi::SQLITE_IOERR_LOCK, (level: c_int));
settled!(unlock, xUnlock, ffi::SQLITE_IOERR_UNLOCK, (level: c_int));
settled!(check_reserved_lock, xCheckReservedLock, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, (out: *mut c_int));
settled!(file_control, xFileControl, ffi::SQLITE_NOTFOUND, (op: c_int, arg: *mut c_void));
settled!(shm_map, xShmMap, ffi::SQLITE_IOERR_SHMMAP, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
settled!(shm_lock, xShmLock, ffi::SQLITE_IOERR_SHMLOCK, (offset: c_int, n: c_int, flags: c_int));
settled!(shm_unmap, xShmUnmap, ffi::SQLITE_OK, (delete: c_int));
settled!(unfetch, xUnfetch, ffi::SQLITE_OK, (offset: i64, page: *mut c_void));

unsafe extern "C" fn fetch(file: *mut ffi::sqlite3_file, offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int {
    // SAFETY: SQLite passes an open file and a place for the result.
    unsafe {
        let shim = shim(file);
        let rc = shim.settle();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        match shim.methods().xFetch {
            Some(fetch) => fetch(shim.real, offset, amount, out),
            None => {
                *out = ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite passes an open file.
    unsafe {
        let shim = shim(file);
        shim.methods().xSectorSize.map_or(4096, |method| method(shim.real))
    }
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite passes an open file.
    unsafe {
        let shim = shim(file);
        shim.methods().xDeviceCharacteristics.map_or(0, |method| method(shim.real))
    }
}

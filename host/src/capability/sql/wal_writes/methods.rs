//! The shim's file methods, as SQLite calls them: each writes what is held
//! first (see the module's documentation), then calls the wrapped file's.

use std::ffi::{c_int, c_void};
use std::ptr;

use rusqlite::ffi;

use super::shim;

pub(super) static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
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

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes an open shim file once; it is dropped here.
    unsafe {
        let shim = shim(file);
        let settled =
            if shim.wal && shim.lost_from.is_none() && !shim.refused { shim.write_held() } else { ffi::SQLITE_OK };
        if let Some(peer) = shim.peer.as_mut() {
            peer.peer = ptr::null_mut();
        }
        let closed = match shim.methods().xClose {
            Some(close) => close(shim.real),
            None => ffi::SQLITE_OK,
        };
        ptr::drop_in_place(shim);
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

unsafe extern "C" fn shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    // SAFETY: SQLite passes an open file.
    unsafe {
        let shim = shim(file);
        let release = flags & ffi::SQLITE_SHM_UNLOCK != 0;
        if release {
            shim.settle_for_release();
        } else {
            let rc = shim.settle();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        let Some(lock) = shim.methods().xShmLock else { return ffi::SQLITE_IOERR_SHMLOCK };
        let rc = lock(shim.real, offset, n, flags);
        // Lock 0 is the WAL's write lock (`WAL_WRITE_LOCK`).
        if release && offset == 0 && n > 0 {
            shim.transaction_ended();
        }
        rc
    }
}

unsafe extern "C" fn read(file: *mut ffi::sqlite3_file, data: *mut c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: SQLite passes an open file and room for `amount` bytes at `data`.
    unsafe {
        let shim = shim(file);
        let rc = shim.settle();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if shim.wal && shim.meets_lost(offset, amount) {
            return ffi::SQLITE_IOERR_READ;
        }
        match shim.methods().xRead {
            Some(read) => read(shim.real, data, amount, offset),
            None => ffi::SQLITE_IOERR_READ,
        }
    }
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite passes an open file.
    unsafe {
        let shim = shim(file);
        shim.before_barrier();
        if let Some(barrier) = shim.methods().xShmBarrier {
            barrier(shim.real);
        }
    }
}

/// Forwards a method to the wrapped file once the held writes are written; a
/// failure to write them is the method's result.
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

/// Forwards a release to the wrapped file whatever happens to the held writes
/// (a failure to write them fails the WAL's transaction instead), so that no
/// lock or mapping is ever kept.
macro_rules! released {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite passes an open file and the method's own arguments.
            unsafe {
                let shim = shim(file);
                shim.settle_for_release();
                match shim.methods().$method {
                    Some(method) => method(shim.real $(, $arg)*),
                    None => ffi::SQLITE_OK,
                }
            }
        }
    };
}

settled!(truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: i64));
settled!(sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int));
settled!(file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut i64));
settled!(lock, xLock, ffi::SQLITE_IOERR_LOCK, (level: c_int));
settled!(check_reserved_lock, xCheckReservedLock, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, (out: *mut c_int));
settled!(file_control, xFileControl, ffi::SQLITE_NOTFOUND, (op: c_int, arg: *mut c_void));
settled!(shm_map, xShmMap, ffi::SQLITE_IOERR_SHMMAP, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
released!(unlock, xUnlock, (level: c_int));
released!(shm_unmap, xShmUnmap, (delete: c_int));
released!(unfetch, xUnfetch, (offset: i64, page: *mut c_void));

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

//! SQLite's page cache, wrapped so that a commit does not walk the whole cache
//! for pages that are not there.
//!
//! When a b-tree balance leaves its new pages out of order, SQLite swaps them
//! through a temporary page number, the locking page's (1 GiB into the file):
//! three moves, after which no page sits there. The default cache (`pcache1`)
//! keeps that number as the highest it has seen, so every transaction that did
//! such a swap ends by truncating the cache to the database's size the slow way:
//! a walk of every hash bucket and every page, not of the few buckets past the
//! end. Inserts inside a table's b-tree (the SQLite adapter's, clustered by
//! conversation) make such swaps on most multi-message appends: phase B of the
//! bench did 646 of them in 500 turns, each about 34 µs of cold cache misses.
//!
//! The wrapper passes every call to the default cache unchanged and keeps its
//! own bound of the page numbers held ([`bound::Bound`]), in which the temporary
//! number counts only while a page sits there. A truncation past the bound would
//! drop nothing; it is not passed on. Any other (a rollback that grew the
//! database, a cache reset) is, and the default cache does it as before.
//!
//! The page cache is process-wide: [`install`] must run before SQLite is first
//! initialised, and the host calls it before it opens any SQLite file. In a
//! process whose SQLite was already in use, it does nothing and SQLite keeps its
//! own cache (a `tracing` event says so).

mod bound;
#[cfg(test)]
mod tests;

use std::ffi::{c_int, c_uint, c_void};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

use self::bound::Bound;

/// The default cache's methods, copied when the wrapper is installed.
struct Inner(ffi::sqlite3_pcache_methods2);

// SAFETY: the methods are plain functions and `pArg` is SQLite's own (null for
// the default cache); SQLite calls them from any thread.
unsafe impl Send for Inner {}
// SAFETY: as above; the copy is never written after it is set.
unsafe impl Sync for Inner {}

static INNER: OnceLock<Inner> = OnceLock::new();
static INSTALLED: OnceLock<bool> = OnceLock::new();

#[cfg(test)]
static SKIPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
#[cfg(test)]
static PASSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
#[cfg(test)]
static MOVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One cache: the default cache's, and the bound of what it holds.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    bound: Bound,
}

/// Installs the wrapper, once per process; whether it is in place.
pub fn install() -> bool {
    // SAFETY: runs once, through `INSTALLED`.
    *INSTALLED.get_or_init(|| unsafe { install_once() })
}

/// # Safety
/// Called once, through `INSTALLED`. `sqlite3_config` is refused (`SQLITE_MISUSE`)
/// once SQLite is initialised, so a process already using it is left as it is.
unsafe fn install_once() -> bool {
    // SAFETY: `sqlite3_pcache_methods2` is plain data; all-zero is "no methods".
    let mut default: ffi::sqlite3_pcache_methods2 = unsafe { std::mem::zeroed() };
    // SAFETY: GETPCACHE2 writes the current methods into the struct it is given.
    let got = unsafe {
        ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, &mut default as *mut ffi::sqlite3_pcache_methods2)
    };
    let complete = [default.xCreate.is_some(), default.xFetch.is_some(), default.xTruncate.is_some()]
        .into_iter()
        .chain([default.xUnpin.is_some(), default.xRekey.is_some(), default.xDestroy.is_some()])
        .chain([default.xCachesize.is_some(), default.xPagecount.is_some()])
        .all(|present| present);
    if got != ffi::SQLITE_OK || !complete || INNER.set(Inner(default)).is_err() {
        tracing::debug!(code = got, "SQLite is already in use: its own page cache stays");
        return false;
    }
    let wrapper = ffi::sqlite3_pcache_methods2 {
        iVersion: 1,
        pArg: ptr::null_mut(),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        xCreate: Some(create),
        xCachesize: Some(cachesize),
        xPagecount: Some(pagecount),
        xFetch: Some(fetch),
        xUnpin: Some(unpin),
        xRekey: Some(rekey),
        xTruncate: Some(truncate),
        xDestroy: Some(destroy),
        xShrink: Some(shrink),
    };
    // SAFETY: PCACHE2 copies the struct; every method in it is defined below.
    let set =
        unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE2, &wrapper as *const ffi::sqlite3_pcache_methods2) };
    if set != ffi::SQLITE_OK {
        tracing::debug!(code = set, "SQLite refused the page cache: its own stays");
    }
    set == ffi::SQLITE_OK
}

fn inner() -> &'static ffi::sqlite3_pcache_methods2 {
    match INNER.get() {
        Some(Inner(methods)) => methods,
        // The wrapper is configured only after INNER is set.
        None => unreachable!("the page cache wrapper runs only once installed"),
    }
}

/// # Safety
/// `p` is a pointer `create` returned and `destroy` has not freed.
unsafe fn cache<'a>(p: *mut ffi::sqlite3_pcache) -> &'a Cache {
    // SAFETY: the caller's contract.
    unsafe { &*(p as *const Cache) }
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    let inner = inner();
    // SAFETY: the default cache's own initialiser, with its own argument.
    inner.xInit.map_or(ffi::SQLITE_OK, |f| unsafe { f(inner.pArg) })
}

unsafe extern "C" fn shutdown(_: *mut c_void) {
    let inner = inner();
    if let Some(f) = inner.xShutdown {
        // SAFETY: as in `init`.
        unsafe { f(inner.pArg) }
    }
}

unsafe extern "C" fn create(page: c_int, extra: c_int, purgeable: c_int) -> *mut ffi::sqlite3_pcache {
    let Some(create) = inner().xCreate else { return ptr::null_mut() };
    // SAFETY: SQLite's arguments, passed on.
    let made = unsafe { create(page, extra, purgeable) };
    if made.is_null() {
        return made;
    }
    Box::into_raw(Box::new(Cache { inner: made, bound: Bound::default() })) as *mut ffi::sqlite3_pcache
}

unsafe extern "C" fn cachesize(p: *mut ffi::sqlite3_pcache, pages: c_int) {
    if let Some(f) = inner().xCachesize {
        // SAFETY: `p` came from `create` (SQLite's contract); its inner cache is live.
        unsafe { f(cache(p).inner, pages) }
    }
}

unsafe extern "C" fn pagecount(p: *mut ffi::sqlite3_pcache) -> c_int {
    // SAFETY: as in `cachesize`.
    inner().xPagecount.map_or(0, |f| unsafe { f(cache(p).inner) })
}

unsafe extern "C" fn fetch(p: *mut ffi::sqlite3_pcache, key: c_uint, create: c_int) -> *mut ffi::sqlite3_pcache_page {
    let Some(f) = inner().xFetch else { return ptr::null_mut() };
    // SAFETY: as in `cachesize`.
    let cache = unsafe { cache(p) };
    // SAFETY: SQLite's arguments, passed on.
    let page = unsafe { f(cache.inner, key, create) };
    if !page.is_null() {
        cache.bound.fetched(key);
    }
    page
}

unsafe extern "C" fn unpin(p: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, discard: c_int) {
    if let Some(f) = inner().xUnpin {
        // SAFETY: as in `cachesize`; `page` is the inner cache's.
        unsafe { f(cache(p).inner, page, discard) }
    }
}

unsafe extern "C" fn rekey(p: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, old: c_uint, new: c_uint) {
    if let Some(f) = inner().xRekey {
        // SAFETY: as in `unpin`.
        let cache = unsafe { cache(p) };
        // SAFETY: SQLite's arguments, passed on.
        unsafe { f(cache.inner, page, old, new) };
        cache.bound.moved(old, new);
        #[cfg(test)]
        MOVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

unsafe extern "C" fn truncate(p: *mut ffi::sqlite3_pcache, limit: c_uint) {
    // SAFETY: as in `cachesize`.
    let cache = unsafe { cache(p) };
    if !cache.bound.truncate(limit) {
        #[cfg(test)]
        SKIPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return;
    }
    #[cfg(test)]
    PASSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Some(f) = inner().xTruncate {
        // SAFETY: SQLite's arguments, passed on.
        unsafe { f(cache.inner, limit) }
    }
}

unsafe extern "C" fn destroy(p: *mut ffi::sqlite3_pcache) {
    // SAFETY: `p` came from `create` and SQLite never uses it after this call.
    let cache = unsafe { Box::from_raw(p as *mut Cache) };
    if let Some(f) = inner().xDestroy {
        // SAFETY: the inner cache is destroyed once, with its wrapper.
        unsafe { f(cache.inner) }
    }
}

unsafe extern "C" fn shrink(p: *mut ffi::sqlite3_pcache) {
    if let Some(f) = inner().xShrink {
        // SAFETY: as in `cachesize`.
        unsafe { f(cache(p).inner) }
    }
}

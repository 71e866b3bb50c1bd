//! The adapter's state: its root directory and its bounded caches of log
//! indexes. One [`Store`] lives in each adapter instance (instances are reused
//! between calls, so the caches outlive a call); tests build their own over a
//! temporary directory.
//!
//! A cache entry is only ever a shortcut: every call re-validates it against
//! the file ([`crate::logfile::sync`]), so other instances, other hosts and
//! crashes can change the files at any time between two calls.

use std::cell::RefCell;
use std::path::PathBuf;

use crate::display::DisplayState;
use crate::lru::{self, Lru};
use crate::messages::Conversation;
use crate::stowage::store::types::Error;

/// Cache bounds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub conversations: lru::Limits,
    pub displays: lru::Limits,
}

impl Default for Limits {
    /// About 100 bytes per cached message (id map and location) and 50 per
    /// display record, so the default holds the indexes of about 120,000
    /// messages and 80,000 display records in 16 MiB, a small part of the
    /// host's default per-instance memory (256 MiB).
    fn default() -> Self {
        Self {
            conversations: lru::Limits { max_entries: 1024, max_bytes: 12 << 20 },
            displays: lru::Limits { max_entries: 1024, max_bytes: 4 << 20 },
        }
    }
}

/// How the caches were used; for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Logs read from their start (no usable cached index).
    pub replays: u64,
    /// Cached indexes extended by reading only the new tail of the log.
    pub tail_reads: u64,
    /// Cached indexes used as they were.
    pub hits: u64,
}

pub struct Store {
    pub(crate) root: PathBuf,
    pub(crate) conversations: Lru<Conversation>,
    pub(crate) displays: Lru<DisplayState>,
    pub(crate) stats: Stats,
}

impl Store {
    pub fn new(root: PathBuf, limits: Limits) -> Self {
        Self {
            root,
            conversations: Lru::new(limits.conversations),
            displays: Lru::new(limits.displays),
            stats: Stats::default(),
        }
    }

    /// Counts how a log index was brought up to date.
    pub(crate) fn record_sync(&mut self, replayed: bool, cached_len: Option<u64>, new_len: u64) {
        match (replayed, cached_len) {
            (true, _) | (false, None) => self.stats.replays += 1,
            (false, Some(len)) if len == new_len => self.stats.hits += 1,
            (false, Some(_)) => self.stats.tail_reads += 1,
        }
    }
}

thread_local! {
    static STORE: RefCell<Store> = RefCell::new(Store::new(PathBuf::from(crate::layout::ROOT), Limits::default()));
}

/// Runs `f` on this instance's store.
pub fn with_store<T>(f: impl FnOnce(&mut Store) -> Result<T, Error>) -> Result<T, Error> {
    STORE.with(|store| match store.try_borrow_mut() {
        Ok(mut store) => f(&mut store),
        Err(_) => Err(Error::Storage("the filesystem adapter was called re-entrantly".into())),
    })
}

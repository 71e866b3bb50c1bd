//! Flushing the WAL: its data, and its directory entry the first time a WAL
//! file is seen; and the database file with its directory entry when the file
//! was put in place without flushing either.

use std::fs::File;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::super::identity;
use super::{Durability, io};
use crate::wit::SqlErrorKind;

/// The leader's turn: dropping it (a failed flush, or a lead given up before its
/// flush started) clears `syncing` and wakes the waiters so one of them leads
/// next; a flush that worked disarms it ([`Durability::led`]). A flush on the
/// blocking pool owns its turn (`Leading<Arc<_>>`), so a caller that stops
/// waiting for it does not hand the lead on while it runs.
pub(super) struct Leading<D: Deref<Target = Durability>>(Option<D>);

impl<D: Deref<Target = Durability>> Leading<D> {
    pub(super) fn new(durability: D) -> Self {
        Self(Some(durability))
    }

    /// Ends the turn without waking anyone (the caller publishes the flush).
    pub(super) fn disarm(mut self) {
        self.0 = None;
    }
}

impl<D: Deref<Target = Durability>> Drop for Leading<D> {
    fn drop(&mut self) {
        if let Some(durability) = self.0.take() {
            durability.state().syncing = false;
            durability.durable.send_modify(|_| {});
        }
    }
}

impl Durability {
    /// Flushes the WAL's data. A failure refuses every later flush: the kernel
    /// may have marked the pages it could not write clean, so a later flush
    /// would not write them again and could succeed, acknowledging commits that
    /// hang on frames off the disk. The store reports every later commit as not
    /// durable. Opening it again in the same boot does not recover what the
    /// failed flush lost (its pages are read from the page cache).
    /// With `handoff`, on the flusher thread when there is one (see `handoff`).
    fn flush_data(&self, file: &Arc<File>, handoff: bool) -> Result<(), SqlErrorKind> {
        #[cfg(test)]
        let injected = self.fail_next_flush.swap(false, Ordering::AcqRel);
        #[cfg(not(test))]
        let injected = false;
        #[cfg(test)]
        self.held();
        let flushed = if injected {
            Err(std::io::Error::other("injected flush failure"))
        } else if handoff && self.handoff.ready() {
            self.handoff.sync_data(file)
        } else {
            let flushed = file.sync_data();
            if handoff {
                self.handoff.prime();
            }
            flushed
        };
        flushed.map_err(|e| {
            tracing::error!(wal = %self.wal.display(), error = %e, "flushing the WAL failed; no later commit will be acknowledged as durable");
            self.refuse_flushes();
            io("flushing", &self.wal, e)
        })
    }

    /// Waits for the test to let this flush go, if it holds flushes.
    #[cfg(test)]
    fn held(&self) {
        let hold = self.hold_flushes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(hold) = hold {
            hold.wait();
        }
    }

    /// Flushes the WAL (and, the first time, its directory entry); `handoff`:
    /// a writer alone asks, see [`Self::flush_data`].
    pub(super) fn flush_wal(&self, handoff: bool) -> Result<(), SqlErrorKind> {
        if self.refused.load(Ordering::Acquire) {
            return Err(SqlErrorKind::Io(format!(
                "flushing {}: an earlier write or flush of this WAL failed, so its frames may not all be on disk",
                self.wal.display()
            )));
        }
        let (file, opened) = {
            let mut state = self.state();
            // The WAL on disk now: when every connection closed, SQLite checkpointed
            // it into the (synced) database and deleted it, and the next connection
            // made a new file; the handle held from before would flush a deleted one.
            let current = match self.wal_name.identity() {
                Ok(current) => current,
                // No WAL: everything committed was checkpointed and synced on close.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    state.wal = None;
                    drop(state);
                    return self.flush_placed_if_unflushed();
                }
                Err(e) => return Err(io("inspecting", &self.wal, e)),
            };
            match state.wal.as_ref() {
                Some((file, held)) if *held == current && !self.placed_unflushed.load(Ordering::Acquire) => {
                    (Arc::clone(file), None)
                }
                _ => {
                    let file = File::open(&self.wal).map_err(|e| io("opening", &self.wal, e))?;
                    // The identity of what was opened, should the file have changed since.
                    let opened = identity::of_file(&file).map_err(|e| io("inspecting", &self.wal, e))?;
                    (Arc::new(file), Some(opened))
                }
            }
        };
        let Some(opened) = opened else {
            return self.flush_data(&file, handoff);
        };
        // A WAL this flush is the first to see: the database file and their
        // directory are flushed too, beside its data (two flushes at once, not
        // one after the other), and the file is kept only once all are done, so
        // a failed flush of any is tried again whole. The database file: it may
        // have been put in place unflushed, here or by a host that stopped
        // before its first flush (flushing a clean file costs next to nothing).
        // Taken now: a rename after this flush began is not covered by it.
        let unflushed = self.placed_unflushed.swap(false, Ordering::AcqRel);
        let flush_entry = || self.flush_entry();
        let (data, entry) = std::thread::scope(|scope| {
            match std::thread::Builder::new().spawn_scoped(scope, flush_entry) {
                Ok(entry) => {
                    let data = self.flush_data(&file, false);
                    let entry = entry.join().unwrap_or_else(|_| {
                        Err(SqlErrorKind::Io(format!("flushing {}: the flush panicked", self.wal_dir().display())))
                    });
                    (data, entry)
                }
                // No thread to spare: one after the other.
                Err(_) => (self.flush_data(&file, false), flush_entry()),
            }
        });
        if (data.is_err() || entry.is_err()) && unflushed {
            self.placed_unflushed.store(true, Ordering::Release);
        }
        data?;
        // A directory entry that failed to flush is flushed again, whole, by the
        // next flush (the file is not kept as flushed).
        entry?;
        let mut state = self.state();
        if state.wal.as_ref().is_none_or(|(_, held)| *held != opened) {
            state.wal = Some((file, opened));
        }
        Ok(())
    }

    /// Whether the host flushes the WAL (`sql_sync = "full"`).
    pub fn flushes(&self) -> bool {
        self.flush
    }

    /// The database file was just renamed into place, and neither it nor its
    /// directory flushed: the next flush of the WAL flushes both (a WAL's first
    /// flush flushes the directory anyway; without a WAL, all checkpointed
    /// into the file, it still must). Until then no commit is acknowledged, and
    /// a crash leaves no file, an empty one (an empty database, switched to WAL
    /// mode again on open) or this one whole.
    pub fn placed_unflushed(&self) {
        self.placed_unflushed.store(true, Ordering::Release);
    }

    /// The WAL's directory (the database file's).
    fn wal_dir(&self) -> &Path {
        self.wal.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."))
    }

    /// Flushes the database file (gone: nothing to flush), then its directory.
    fn flush_entry(&self) -> Result<(), SqlErrorKind> {
        match File::open(&self.db).and_then(|db| db.sync_all()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("flushing", &self.db, e)),
            _ => {}
        }
        let dir = self.wal_dir();
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("flushing", dir, e))
    }

    /// Flushes the database file and its directory if the file was put in place
    /// without ([`Durability::placed_unflushed`]) and no flush has covered it since.
    fn flush_placed_if_unflushed(&self) -> Result<(), SqlErrorKind> {
        if !self.placed_unflushed.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        self.flush_entry().inspect_err(|_| self.placed_unflushed.store(true, Ordering::Release))
    }
}

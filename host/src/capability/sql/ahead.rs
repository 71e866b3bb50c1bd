//! The connection a store opens before its first call, and an empty WAL
//! started on it.
//!
//! A store opens its SQLite connection while its adapter loads
//! ([`super::SqlDatabase::open_ahead`]), so its first call does not pay for it.
//! An empty WAL (a new store's, or any store's after a clean close, which
//! deletes it) costs the first commit more: before SQLite writes an empty WAL's
//! first frame it writes the WAL's header and flushes it and its directory,
//! and the host's first flush of a WAL flushes the directory again — three
//! flushes before the commit's own. So the connection opened ahead starts the
//! WAL on a thread of its own, with a commit that changes nothing (page 1,
//! `user_version` set to what it is) and, at `sql_sync = "full"`, the host's
//! flush of it. The store's open does not wait for that; its first call does,
//! if it comes first.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Connection;
use super::durability::Durability;
use super::sqlite::Sqlite;

enum Slot {
    Ready(Sqlite),
    Starting(JoinHandle<Sqlite>),
}

/// The connection opened ahead, until a session takes it.
#[derive(Default)]
pub struct Ahead(Mutex<Option<Slot>>);

/// Whether the WAL at `wal` has no frame yet (missing or empty).
fn empty(wal: &Path) -> bool {
    match std::fs::metadata(wal) {
        Ok(wal) => wal.len() == 0,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

impl Ahead {
    /// Keeps `conn` for the first session; starts the WAL on it first if the
    /// WAL is empty.
    pub fn keep(&self, mut conn: Sqlite, durability: &Arc<Durability>, busy_timeout: Duration) {
        let slot = if empty(durability.wal_path()) {
            let durability = Arc::clone(durability);
            let starting = std::thread::Builder::new().name("stowage-wal-start".into()).spawn(move || {
                let started = conn.write_first_frame(busy_timeout).and_then(|written| match written {
                    true => durability.started(),
                    false => Ok(()),
                });
                match started {
                    Ok(()) => {}
                    // Nothing written: the first commit starts the WAL instead.
                    Err(error) if empty(durability.wal_path()) => {
                        tracing::debug!(?error, "starting the WAL ahead failed; the first commit starts it");
                    }
                    // The WAL's first frame may be off the disk, and every later
                    // frame hangs on it: no later flush may report success.
                    Err(error) => {
                        tracing::warn!(?error, "starting the WAL failed after writing to it; its flushes now fail");
                        durability.refuse_flushes();
                    }
                }
                conn
            });
            match starting {
                Ok(handle) => Slot::Starting(handle),
                // No thread: the connection is lost with the closure; the
                // first session opens another.
                Err(error) => {
                    tracing::debug!(%error, "no thread to start the WAL ahead");
                    return;
                }
            }
        } else {
            Slot::Ready(conn)
        };
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(slot);
    }

    /// The connection opened ahead, once its WAL is started; `None` if there is
    /// none (taken, never opened, or its thread panicked).
    pub fn take(&self) -> Option<Box<dyn Connection>> {
        let slot = self.0.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        let conn = match slot {
            Slot::Ready(conn) => conn,
            Slot::Starting(handle) => join(handle)?,
        };
        Some(Box::new(conn))
    }
}

/// Waits for the WAL start (its flushes may take milliseconds): on a tokio
/// worker, through `block_in_place`, so the worker's other tasks move on.
fn join(handle: JoinHandle<Sqlite>) -> Option<Sqlite> {
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|runtime| runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker && !handle.is_finished() {
        tokio::task::block_in_place(|| handle.join().ok())
    } else {
        handle.join().ok()
    }
}

/// A dropped store waits for its WAL start: nothing of it runs on after the
/// store is gone (its directory may be removed next).
impl Drop for Ahead {
    fn drop(&mut self) {
        drop(self.take());
    }
}

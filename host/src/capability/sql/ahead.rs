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
//! `user_version` set to what it is), zeros past it for the first commits to
//! write over ([`super::prefill::first_room`]) and, at `sql_sync = "full"`,
//! the host's flush of them. The store's open does not wait for that. Its first call waits
//! for the frame to be written, not for the flush: the flush goes on beside
//! the call, whose commit is acknowledged only after a flush of its own.

use std::path::Path;
use std::sync::mpsc::{Receiver, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Connection;
use super::durability::Durability;
use super::sqlite::Sqlite;
use crate::util::blocking;

enum Slot {
    Ready(Sqlite),
    /// The WAL start's thread hands the connection over once the frame is written.
    Starting(Receiver<Sqlite>),
}

/// The connection opened ahead, until a session takes it, and the thread that
/// starts its WAL.
#[derive(Default)]
pub struct Ahead {
    slot: Mutex<Option<Slot>>,
    starting: Mutex<Option<JoinHandle<()>>>,
}

/// Whether the WAL at `wal` has no frame yet (missing or empty).
fn empty(wal: &Path) -> bool {
    match std::fs::metadata(wal) {
        Ok(wal) => wal.len() == 0,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Writes the empty WAL's first frame on `conn`, hands `conn` over, then
/// flushes what it wrote.
fn start(mut conn: Sqlite, durability: &Durability, busy_timeout: Duration, hand_over: impl FnOnce(Sqlite)) {
    let written = conn.write_first_frame(busy_timeout, durability.flushes(), durability.wal_path());
    hand_over(conn);
    let started = written.and_then(|written| match written {
        true => durability.started(),
        false => Ok(()),
    });
    match started {
        Ok(()) => {}
        // Nothing written: the first commit starts the WAL instead.
        Err(error) if empty(durability.wal_path()) => {
            tracing::debug!(?error, "starting the WAL ahead failed; the first commit starts it");
        }
        // The WAL's first frame may be off the disk, and every later frame
        // hangs on it: no later flush may report success.
        Err(error) => {
            tracing::warn!(?error, "starting the WAL failed after writing to it; its flushes now fail");
            durability.refuse_flushes();
        }
    }
}

impl Ahead {
    /// Keeps `conn` for the first session; starts the WAL on it first if the
    /// WAL is empty.
    pub fn keep(&self, conn: Sqlite, durability: &Arc<Durability>, busy_timeout: Duration) {
        let slot = if empty(durability.wal_path()) {
            let durability = Arc::clone(durability);
            let (sender, receiver) = sync_channel(1);
            let starting = std::thread::Builder::new().name("stowage-wal-start".into()).spawn(move || {
                // No session took it (the store closed first): it closes once
                // the flush is over.
                let mut unclaimed = None;
                start(conn, &durability, busy_timeout, |conn| {
                    unclaimed = sender.send(conn).err().map(|returned| returned.0);
                });
                drop(unclaimed);
            });
            match starting {
                Ok(handle) => {
                    *self.starting.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
                    Slot::Starting(receiver)
                }
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
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(slot);
    }

    /// The connection opened ahead, once its WAL's first frame is written;
    /// `None` if there is none (taken, never opened, or its thread panicked).
    pub fn take(&self) -> Option<Box<dyn Connection>> {
        let slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        let conn = match slot {
            Slot::Ready(conn) => conn,
            Slot::Starting(receiver) => match receiver.try_recv() {
                Ok(conn) => conn,
                // Writing the frame may wait on the disk.
                Err(TryRecvError::Empty) => blocking::here(|| receiver.recv().ok())?,
                Err(TryRecvError::Disconnected) => return None,
            },
        };
        Some(Box::new(conn))
    }

    /// Closes the connection if no session took it, and waits for the WAL
    /// start, flush included: nothing of it runs on after the store is closed
    /// (its directory may be removed next).
    pub fn close(&self) {
        drop(self.take());
        let starting = self.starting.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(handle) = starting.filter(|handle| !handle.is_finished()) {
            let _ = blocking::here(|| handle.join());
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.close();
    }
}

//! A background checkpoint of a SQLite database in WAL mode, started by
//! [`Durability`](super::Durability) when the WAL is long.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::gate::WriteGate;

/// WAL length, in frames (pages), that triggers a background checkpoint: four
/// times SQLite's default auto-checkpoint threshold. The SQL adapter keeps each
/// conversation's messages together (good for loads), so interleaved writers
/// dirty more pages per message than an append-only table does (a 4-message
/// turn writes ~9 frames where one table in append order writes ~5). Each
/// checkpoint ends with a flush of the database file that every writer's WAL
/// flush queues behind for its duration, so the calls it overlaps make the tail
/// latency; a longer WAL means fewer checkpoints, each copying a hot page once
/// for more commits. Phase B, p99 over median: 1.6–2.1× at 4,000 frames,
/// 1.9–4.4× at 2,000 (six alternating runs each of one binary; A's median and
/// B's throughput were no worse either), 7–9× at 500–1,000. The WAL is
/// prefilled to about 20 MiB (`prefill`) and overwritten in place after each
/// checkpoint.
pub const CHECKPOINT_FRAMES: u64 = 4000;

/// Clears a background task's running flag when the task ends, however it ends
/// (a panic included), so the next commit can start another.
pub struct ClearOnDrop(pub Arc<AtomicBool>);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Why a background checkpoint stopped: retried after a later commit, unless
/// the failure refused flushes (see [`checkpoint`]).
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("flushing the database file: {0}")]
    Flush(#[from] std::io::Error),
}

/// A checkpoint through a short-lived connection of the host's own: a passive
/// one beside the writers, then, holding `writers` off, one copying what they
/// committed meanwhile, so that the next commit starts the WAL over (unless a
/// reader still uses it). Without the turn (busy), the WAL stays as it is and
/// the next commit's checkpoint tries again.
///
/// SQLite flushes the database file only after a copy that reached the WAL's
/// end as it stood when the copy ended. A passive copy that a reader's snapshot
/// stopped short is flushed here at once, beside the writers: the catch-up
/// stops there too, and would otherwise flush up to [`CHECKPOINT_FRAMES`] pages
/// with every writer held off (phase E with 1,000 conversations, two runs each:
/// p99 187 against 260–265 ms, 24,800–27,800 against 21,300–22,500 msgs/s). One
/// that commits overtook is left to the catch-up, which usually reaches the
/// end, and whose flush then covers every page of the file: flushing it beside
/// the writers too made phase B's p99 1.5× longer (the writers' flushes of the
/// WAL queue behind it; 15 alternating rows). Pages no flush covered once the
/// catch-up is done (it stopped short, failed, or could not run) are flushed
/// before the checkpoint returns, unless flushes were refused meanwhile (then
/// the WAL never starts over).
///
/// SQLite counts the partial copy as done before that flush, so should the flush
/// fail, the next checkpoint would not copy those pages again: its own flush
/// could then succeed (the kernel may mark pages it failed to write clean) and
/// let the WAL start over, dropping the only copy on disk of what was lost.
/// So a failed flush sets `refused`: no checkpoint runs after it, no flush of
/// the WAL is acknowledged, and connections close without checkpointing.
pub fn checkpoint(
    db: &Path,
    writers: Option<&Arc<WriteGate>>,
    busy_timeout: Duration,
    refused: &AtomicBool,
) -> Result<(), CheckpointError> {
    if refused.load(Ordering::Acquire) {
        return Ok(());
    }
    let conn = open_aside(db)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let refuse = |e: CheckpointError| {
        refused.store(true, Ordering::Release);
        e
    };
    let first = copy(&conn, refused, wal_state(&conn).map(|(_, copied)| copied))?;
    // Copied pages no flush has covered yet.
    let mut unflushed = first.copied && !first.flushed;
    if unflushed && first.short {
        // A reader stopped it (the catch-up stops there too while it reads):
        // flushed now, beside the writers. One that commits overtook is left
        // to the catch-up, whose flush covers every page of the file.
        sync_database(&conn).map_err(refuse)?;
        unflushed = false;
    }
    #[cfg(test)]
    if let Some(between) = BETWEEN_COPIES.take() {
        between();
    }
    if !refused.load(Ordering::Acquire)
        && let Some(Ok(_turn)) = writers.map(|gate| gate.enter(busy_timeout))
    {
        // No writer of this host moves the count meanwhile: a catch-up that
        // leaves it where it is copied nothing.
        let before = wal_state(&conn).map(|(_, copied)| copied);
        match copy(&conn, refused, before) {
            Ok(catch_up) if catch_up.copied => unflushed = !catch_up.flushed,
            Ok(_) => {}
            Err(e) => {
                // What the first copy left is flushed all the same.
                if unflushed && !refused.load(Ordering::Acquire) {
                    sync_database(&conn).map_err(refuse)?;
                }
                return Err(e);
            }
        }
    }
    if unflushed && !refused.load(Ordering::Acquire) {
        sync_database(&conn).map_err(refuse)?;
    }
    Ok(())
}

/// What one passive copy did.
#[derive(Debug, Default)]
struct Copied {
    /// It copied frames: past `before`, or any when `before` is unknown.
    copied: bool,
    /// SQLite flushed the database after it: it reached the WAL's end as it was
    /// when the copy ended (which a commit then moves on, never back).
    flushed: bool,
    /// It stopped short of the WAL's end as it was when it began: a reader's
    /// snapshot held it back.
    short: bool,
}

/// One passive copy (none once flushes are refused). Any failed write or flush
/// sets `refused`: SQLite's own flush of the WAL before the copy, and of the
/// database after one that reached the end, among them.
fn copy(conn: &rusqlite::Connection, refused: &AtomicBool, before: Option<i64>) -> Result<Copied, CheckpointError> {
    // Checked again here: the catch-up may have waited for the write turn.
    if refused.load(Ordering::Acquire) {
        return Ok(Copied::default());
    }
    #[cfg(test)]
    if FAIL_NEXT_COPY.replace(false) {
        let busy = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY);
        return Err(rusqlite::Error::SqliteFailure(busy, Some("injected copy failure".to_owned())).into());
    }
    let (frames, copied) = match conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))
    {
        Ok(counts) => counts,
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) => {
            refused.store(true, Ordering::Release);
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    #[cfg(test)]
    if let Some(after) = AFTER_COPY.take() {
        after();
    }
    Ok(Copied {
        copied: copied > 0 && before != Some(copied),
        // The end unknown (a header read torn by a commit reports busy): not flushed.
        flushed: wal_state(conn).is_some_and(|(end, _)| end == copied),
        short: copied < frames,
    })
}

/// The WAL's last frame and the frames copied so far, now (a checkpoint that
/// copies nothing reports them); `None` if SQLite could not tell.
fn wal_state(conn: &rusqlite::Connection) -> Option<(i64, i64)> {
    use rusqlite::ffi;
    let (mut frames, mut copied) = (0, 0);
    // SAFETY: `conn.handle()` is this open connection's; the two out-pointers are
    // live locals.
    let code = unsafe {
        ffi::sqlite3_wal_checkpoint_v2(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_CHECKPOINT_NOOP,
            &raw mut frames,
            &raw mut copied,
        )
    };
    (code == ffi::SQLITE_OK).then(|| (i64::from(frames), i64::from(copied)))
}

/// A connection of the host's own, beside the store's: it never checkpoints as
/// it closes, should it be the database's last (the store's connections decide
/// that, and may not: see [`checkpoint`]).
pub fn open_aside(db: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = rusqlite::Connection::open_with_flags(db, flags)?;
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    Ok(conn)
}

#[cfg(test)]
thread_local! {
    /// Makes this thread's flush of a database after a copy fail once this many
    /// more have worked (tests).
    static FAIL_SYNC_AFTER: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
    /// Runs between a checkpoint's two copies on this thread (tests).
    static BETWEEN_COPIES: std::cell::Cell<Option<Box<dyn FnOnce()>>> = std::cell::Cell::new(None);
    /// Runs right after this thread's next copy, before its end is checked (tests).
    static AFTER_COPY: std::cell::Cell<Option<Box<dyn FnOnce()>>> = std::cell::Cell::new(None);
    /// Makes this thread's next copy fail before it starts (tests).
    static FAIL_NEXT_COPY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Flushes the database file through the connection's own handle. A descriptor
/// opened (and closed) here instead would, on closing, drop every POSIX lock this
/// process holds on the file, the shared locks of the store's connections
/// included: another process's last connection could then take the file
/// exclusively, checkpoint and delete the WAL under them (SQLite's "how to
/// corrupt", 2.2).
fn sync_database(conn: &rusqlite::Connection) -> Result<(), CheckpointError> {
    use rusqlite::ffi;
    #[cfg(test)]
    match FAIL_SYNC_AFTER.get() {
        Some(0) => {
            FAIL_SYNC_AFTER.set(None);
            return Err(CheckpointError::Flush(std::io::Error::other("injected flush failure")));
        }
        Some(n) => FAIL_SYNC_AFTER.set(Some(n - 1)),
        None => {}
    }
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: `conn.handle()` is this open connection's; FILE_POINTER writes the
    // `sqlite3_file` of its main database, which the connection owns and keeps
    // open for as long as it is open, into `file`.
    let found = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast(),
        )
    };
    // SAFETY: `file` is the live `sqlite3_file` found above (checked non-null); an
    // open file's `pMethods` is set, and `xSync` is its VFS's flush.
    let code = unsafe {
        match file.as_ref().and_then(|f| f.pMethods.as_ref()).and_then(|m| m.xSync) {
            Some(sync) if found == ffi::SQLITE_OK => sync(file, ffi::SQLITE_SYNC_NORMAL),
            _ => ffi::SQLITE_NOTFOUND,
        }
    };
    if code == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(CheckpointError::Flush(std::io::Error::other(format!("SQLite could not flush the database (code {code})"))))
    }
}

#[cfg(test)]
mod tests;

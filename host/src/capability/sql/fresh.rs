//! A store's new SQLite file, made whole under a temporary name and then
//! renamed into place, already in WAL mode.
//!
//! Switching a new file to WAL mode is a rollback-journal commit: with
//! SQLite's own flushes, four (the journal twice, its directory, the file) on a
//! store's first call. Made under a temporary name, nothing needs them: the
//! file is flushed once, renamed without replacing anything, and its directory
//! flushed. A crash before the rename leaves only a temporary file, never a
//! half-made database under the store's name. When another process puts its
//! file in place first, that one is kept and this one removed
//! ([`place_new`]).
//!
//! At `sql_sync = "full"` neither the file nor the directory is flushed here:
//! nothing is acknowledged before the host's first flush of the WAL, which
//! flushes both beside it ([`Durability::placed_unflushed`]), so the file and its
//! rename are durable by then. A crash before leaves no database, an empty file
//! (an empty database, put in WAL mode again when opened: SQLite deletes a WAL
//! beside an empty database, and nothing in it was acknowledged), or this one
//! whole.
//!
//! [`Durability::placed_unflushed`]: super::durability::Durability::placed_unflushed

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::OpenFlags;

use super::sqlite::map_error;
use crate::util::place::{place_new, place_new_unflushed};
use crate::wit::SqlErrorKind;

/// Makes the SQLite file at `path`, in WAL mode, unless something is there;
/// flushes it and its directory unless `wal_flushed` (the WAL's first flush
/// does). `true` when a file was put in place and left unflushed.
pub fn create_if_missing(path: &Path, wal_flushed: bool) -> Result<bool, SqlErrorKind> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let temporary = temporary_name(path)?;
    let made = make(&temporary, !wal_flushed).and_then(|()| place(&temporary, path, wal_flushed));
    if made.is_err() {
        for suffix in ["", "-journal", "-wal", "-shm"] {
            let mut name = temporary.clone().into_os_string();
            name.push(suffix);
            let _ = std::fs::remove_file(name);
        }
    }
    made.map(|()| wal_flushed)
}

/// `.<name>.<random>.new` beside `path`.
fn temporary_name(path: &Path) -> Result<PathBuf, SqlErrorKind> {
    let name = path.file_name().ok_or_else(|| SqlErrorKind::Io(format!("{} names no file", path.display())))?;
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| SqlErrorKind::Io(format!("no randomness for a file name: {e}")))?;
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    Ok(path.with_file_name(format!(".{}.{nonce}.new", name.to_string_lossy())))
}

/// A new database at `path`, switched to WAL mode without a flush or a
/// rollback journal, then flushed once if `flush`.
fn make(path: &Path, flush: bool) -> Result<(), SqlErrorKind> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = rusqlite::Connection::open_with_flags(path, flags).map_err(map_error)?;
    conn.pragma_update(None, "synchronous", "OFF").map_err(map_error)?;
    // The switch to WAL writes page 1 under the journal mode before it: with
    // none, without making, writing and deleting a rollback journal (the file
    // comes out the same, byte for byte).
    let off: String = conn.pragma_update_and_check(None, "journal_mode", "OFF", |row| row.get(0)).map_err(map_error)?;
    if !off.eq_ignore_ascii_case("off") {
        return Err(SqlErrorKind::Io(format!("a new database stayed in journal mode {off}")));
    }
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).map_err(map_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(SqlErrorKind::Io(format!("a new database stayed in journal mode {mode}")));
    }
    conn.close().map_err(|(_, e)| map_error(e))?;
    if !flush {
        return Ok(());
    }
    File::open(path).and_then(|file| file.sync_all()).map_err(|e| io("flushing", path, e))
}

/// Renames `from` to `to` unless `to` exists (then `from` is removed), and
/// flushes their directory unless `wal_flushed`.
fn place(from: &Path, to: &Path, wal_flushed: bool) -> Result<(), SqlErrorKind> {
    let placed = if wal_flushed { place_new_unflushed(from, to) } else { place_new(from, to) };
    placed.map(drop).map_err(|e| io("putting in place", to, e))
}

fn io(what: &str, path: &Path, e: io::Error) -> SqlErrorKind {
    SqlErrorKind::Io(format!("{what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn create(path: &Path) -> Result<(), String> {
        create_if_missing(path, false).map(drop).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn a_new_file_appears_in_wal_mode_and_alone() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("sql.sqlite3");
        create(&path)?;
        let conn = rusqlite::Connection::open(&path)?;
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
        assert_eq!(mode, "wal");
        drop(conn);
        let names: Vec<String> = std::fs::read_dir(dir.path())?
            .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
            .collect::<io::Result<_>>()?;
        assert_eq!(names, ["sql.sqlite3"], "no temporary file, journal or WAL is left");
        Ok(())
    }

    #[test]
    fn an_existing_file_is_left_as_it_is() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("sql.sqlite3");
        std::fs::write(&path, b"not a database")?;
        create(&path)?;
        assert_eq!(std::fs::read(&path)?, b"not a database");
        std::fs::remove_file(&path)?;
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &path)?;
        create(&path)?;
        assert!(!dir.path().join("elsewhere").exists(), "a link is never followed");
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
        Ok(())
    }

    /// At `sql_sync = "full"` the file is put in place unflushed: a crash may
    /// leave it empty, beside a WAL whose frames were never acknowledged. Opened
    /// again, that is an empty database in WAL mode, the stale WAL dropped.
    #[test]
    fn a_file_a_crash_left_empty_opens_as_an_empty_wal_database() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("sql.sqlite3");
        let placed = create_if_missing(&path, true).map_err(|e| format!("{e:?}"))?;
        assert!(placed, "placed, its flush owed to the WAL's first");
        let conn = rusqlite::Connection::open(&path)?;
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        conn.execute_batch("CREATE TABLE lost (x); INSERT INTO lost VALUES (1);")?;
        drop(conn);
        assert!(dir.path().join("sql.sqlite3-wal").metadata()?.len() > 0, "the frames are in the WAL");
        // The crash: the file's bytes never reached the disk.
        std::fs::File::create(&path)?;
        let refused = std::sync::Arc::default();
        let opened = super::super::sqlite::open(
            &path,
            std::time::Duration::from_secs(1),
            Default::default(),
            Default::default(),
            refused,
        )
        .map_err(|e| format!("{e:?}"))?;
        drop(opened);
        let conn = rusqlite::Connection::open(&path)?;
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
        assert_eq!(mode, "wal");
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
        assert_eq!(tables, 0, "nothing of the unacknowledged WAL is read");
        Ok(())
    }
}

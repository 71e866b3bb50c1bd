//! A store's new SQLite file, made whole under a temporary name and then
//! renamed into place, already in WAL mode.
//!
//! Switching a new file to WAL mode is a rollback-journal commit: with
//! SQLite's own flushes, four (the journal twice, its directory, the file) on a
//! store's first call. Made under a temporary name, nothing needs them: the
//! file, one page that SQLite would have written ([`empty_wal_database`]), is
//! written at once, flushed, renamed without replacing anything, and its
//! directory flushed. A crash before the rename leaves only a temporary file,
//! never a half-made database under the store's name. When another process puts its
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

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

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
        let _ = std::fs::remove_file(&temporary);
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

/// The size of a new database's pages (SQLite's default).
const PAGE_SIZE: usize = 4096;

/// The one page of a new, empty database in WAL mode, byte for byte as SQLite
/// writes it when it switches a new file to WAL mode (a test compares the two):
/// the 100-byte file header, then page 1's empty table b-tree leaf (the schema
/// table). Written directly, it costs one `write` instead of a connection and
/// two journal-mode switches (~0.5 ms of CPU while a store's open loads its
/// adapter).
fn empty_wal_database() -> [u8; PAGE_SIZE] {
    let mut page = [0u8; PAGE_SIZE];
    page[..16].copy_from_slice(b"SQLite format 3\0");
    page[16..18].copy_from_slice(&(PAGE_SIZE as u16).to_be_bytes());
    // File format write and read versions: 2, WAL.
    page[18] = 2;
    page[19] = 2;
    // Maximum and minimum embedded payload fractions, leaf payload fraction.
    page[21..24].copy_from_slice(&[64, 32, 32]);
    // File change counter, size in pages, and the version-valid-for number
    // (equal to the counter: the size is valid).
    page[24..28].copy_from_slice(&1u32.to_be_bytes());
    page[28..32].copy_from_slice(&1u32.to_be_bytes());
    page[92..96].copy_from_slice(&1u32.to_be_bytes());
    page[96..100].copy_from_slice(&rusqlite::version_number().to_be_bytes());
    // Page 1: a table b-tree leaf with no cells, its content area at the end.
    page[100] = 0x0d;
    page[105..107].copy_from_slice(&(PAGE_SIZE as u16).to_be_bytes());
    page
}

/// A new database at `path` (which must not exist), in WAL mode, flushed if
/// `flush`.
fn make(path: &Path, flush: bool) -> Result<(), SqlErrorKind> {
    let mut file =
        OpenOptions::new().write(true).create_new(true).mode(0o644).open(path).map_err(|e| io("creating", path, e))?;
    file.write_all(&empty_wal_database()).map_err(|e| io("writing", path, e))?;
    if flush {
        file.sync_all().map_err(|e| io("flushing", path, e))?;
    }
    Ok(())
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

    /// What SQLite itself writes when a new file is switched to WAL mode (with
    /// no journal before, so that page 1 is written in place).
    #[test]
    fn the_new_file_is_the_one_sqlite_makes() -> TestResult {
        let dir = tempfile::tempdir()?;
        let by_sqlite = dir.path().join("by-sqlite.sqlite3");
        let conn = rusqlite::Connection::open(&by_sqlite)?;
        let off: String = conn.pragma_update_and_check(None, "journal_mode", "OFF", |row| row.get(0))?;
        let wal: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        assert_eq!((off.as_str(), wal.as_str()), ("off", "wal"));
        conn.close().map_err(|(_, e)| e)?;
        let by_us = dir.path().join("sql.sqlite3");
        create(&by_us)?;
        assert_eq!(std::fs::read(&by_us)?, std::fs::read(&by_sqlite)?);
        // And SQLite reads it as an empty database in WAL mode that takes tables.
        let conn = rusqlite::Connection::open(&by_us)?;
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")?;
        let (mode, rows): (String, i64) = conn.query_row(
            "SELECT (SELECT journal_mode FROM pragma_journal_mode), (SELECT count(*) FROM t)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        assert_eq!((mode.as_str(), rows), ("wal", 1));
        Ok(())
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

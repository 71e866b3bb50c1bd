//! Which file a path names now, asked without touching its timestamps.
//!
//! The group-commit flush checks, before every `fdatasync` of the WAL, that its
//! handle still names the WAL SQLite writes (`durability`). A plain `stat` would
//! do, but it also returns the file's times, and since Linux 6.13 a file whose
//! ctime was read gets a fine-grained new mtime on its next write (multigrain
//! timestamps). On ext4 every such write dirties the inode, so each following
//! `fdatasync` wrote the inode as well as the data: one more synchronous write
//! per flush (+48 µs per flush on the bench machine, 100 → 148 µs, with a stat
//! between each in-place write and its flush). Asking for the inode number
//! alone (`statx` with `STATX_INO`) leaves the times unread, so writes keep the
//! coarse mtime and most flushes write the data only, as SQLite's own do.
//! Where `statx` is missing (Linux before 4.11, some seccomp filters), a plain
//! stat stands in, with the device number split the same way.

use std::fs::File;
use std::io;
use std::path::Path;

/// A file's (device, inode).
pub type Identity = (u64, u64);

/// The identity of the file at `path` (`NotFound` when there is none).
#[cfg(target_os = "linux")]
pub fn of_path(path: &Path) -> io::Result<Identity> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    match statx(CWD, path, AtFlags::empty(), StatxFlags::INO) {
        Ok(stat) => Ok(from_statx(&stat)),
        Err(rustix::io::Errno::NOENT) => Err(io::ErrorKind::NotFound.into()),
        // No `statx` (a kernel before 4.11, or a seccomp filter): a plain stat.
        Err(_) => std::fs::metadata(path).map(|m| from_metadata(&m)),
    }
}

/// The identity of the open `file`.
#[cfg(target_os = "linux")]
pub fn of_file(file: &File) -> io::Result<Identity> {
    use rustix::fs::{AtFlags, StatxFlags, statx};
    match statx(file, "", AtFlags::EMPTY_PATH, StatxFlags::INO) {
        Ok(stat) => Ok(from_statx(&stat)),
        Err(_) => file.metadata().map(|m| from_metadata(&m)),
    }
}

#[cfg(target_os = "linux")]
fn from_statx(stat: &rustix::fs::Statx) -> Identity {
    (u64::from(stat.stx_dev_major) << 32 | u64::from(stat.stx_dev_minor), stat.stx_ino)
}

/// The same identity from a plain stat, whose device number packs major and minor.
#[cfg(target_os = "linux")]
fn from_metadata(meta: &std::fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt as _;
    let dev = meta.dev();
    (u64::from(rustix::fs::major(dev)) << 32 | u64::from(rustix::fs::minor(dev)), meta.ino())
}

/// The identity of the file at `path` (`NotFound` when there is none).
#[cfg(not(target_os = "linux"))]
pub fn of_path(path: &Path) -> io::Result<Identity> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

/// The identity of the open `file`.
#[cfg(not(target_os = "linux"))]
pub fn of_file(file: &File) -> io::Result<Identity> {
    use std::os::unix::fs::MetadataExt as _;
    file.metadata().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_plain_stat_gives_the_same_identity() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("wal");
        std::fs::write(&path, b"x")?;
        assert_eq!(of_path(&path)?, from_metadata(&std::fs::metadata(&path)?));
        Ok(())
    }

    #[test]
    fn a_path_and_its_open_file_agree_and_a_replaced_file_differs() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("wal");
        std::fs::write(&path, b"first")?;
        let file = File::open(&path)?;
        assert_eq!(of_path(&path)?, of_file(&file)?, "the same file");
        std::fs::remove_file(&path)?;
        assert_eq!(of_path(&path).map_err(|e| e.kind()), Err(io::ErrorKind::NotFound));
        std::fs::write(&path, b"second")?;
        assert_ne!(of_path(&path)?, of_file(&file)?, "the held file was deleted; the path names a new one");
        Ok(())
    }
}

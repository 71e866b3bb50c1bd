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
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::OnceLock;

/// A file's (device, inode).
pub type Identity = (u64, u64);

/// A file asked about by name in its directory, held open once found: each
/// look-up then walks one path component, not the whole path. A flush asks
/// before every `fdatasync` of the WAL, right after the commit, when the
/// kernel's caches are cold: the walk of a store's WAL path (six components
/// under the bench's temporary directory) was ~2.5% of a sequential append's
/// CPU. Until its directory can be opened (and off Linux) the whole path is
/// walked, as [`of_path`] does.
#[derive(Debug)]
pub struct Named {
    path: PathBuf,
    #[cfg(target_os = "linux")]
    dir: OnceLock<rustix::fd::OwnedFd>,
}

impl Named {
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            #[cfg(target_os = "linux")]
            dir: OnceLock::new(),
        }
    }

    /// The identity of the file the name names now (`NotFound` when there is none).
    #[cfg(target_os = "linux")]
    pub fn identity(&self) -> io::Result<Identity> {
        use rustix::fs::{AtFlags, StatxFlags, statx};
        let (Some(dir), Some(name)) = (self.dir(), self.path.file_name()) else { return of_path(&self.path) };
        match statx(dir, name, AtFlags::empty(), StatxFlags::INO) {
            Ok(stat) => Ok(from_statx(&stat)),
            Err(rustix::io::Errno::NOENT) => Err(io::ErrorKind::NotFound.into()),
            Err(_) => of_path(&self.path),
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn identity(&self) -> io::Result<Identity> {
        of_path(&self.path)
    }

    /// The directory, opened (for look-ups only) the first time it can be.
    #[cfg(target_os = "linux")]
    fn dir(&self) -> Option<&rustix::fd::OwnedFd> {
        if let Some(dir) = self.dir.get() {
            return Some(dir);
        }
        use rustix::fs::{CWD, Mode, OFlags, openat};
        let parent = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let opened = openat(CWD, parent, flags, Mode::empty()).ok()?;
        Some(self.dir.get_or_init(|| opened))
    }
}

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

    #[test]
    fn a_name_in_its_directory_follows_the_file_it_names() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("sub").join("wal");
        let named = Named::new(&path);
        assert_eq!(named.identity().map_err(|e| e.kind()), Err(io::ErrorKind::NotFound), "no directory yet");
        std::fs::create_dir(dir.path().join("sub"))?;
        assert_eq!(named.identity().map_err(|e| e.kind()), Err(io::ErrorKind::NotFound), "no file yet");
        std::fs::write(&path, b"first")?;
        let first = named.identity()?;
        assert_eq!(first, of_path(&path)?);
        std::fs::remove_file(&path)?;
        assert_eq!(named.identity().map_err(|e| e.kind()), Err(io::ErrorKind::NotFound), "deleted");
        let held = File::create(dir.path().join("other"))?;
        std::fs::write(&path, b"second")?;
        assert_eq!(named.identity()?, of_path(&path)?, "made anew");
        assert_ne!(named.identity()?, of_file(&held)?);
        Ok(())
    }

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

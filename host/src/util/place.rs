//! Putting a finished file in place only if nothing is there yet.
//!
//! Hosts that start a store at the same moment each make its first files (the
//! keyring, the SQLite database) under names of their own; the first to put
//! its file in place wins, and the others use that one. A plain `rename`
//! would let the last one win, after the first had already started using its
//! own.

use std::fs::File;
use std::io;
use std::path::Path;

use rustix::fs::{CWD, RenameFlags};
use rustix::io::Errno;

/// Moves the flushed file `from` to `to` unless `to` exists, then flushes
/// their directory (also when another writer's file was there first, so that
/// file is durable before this one is relied on). `Ok(false)`, with `from`
/// removed, when `to` was there.
///
/// `renameat2(RENAME_NOREPLACE)` where the filesystem has it; otherwise a hard
/// link (as atomic, and as unwilling to replace); otherwise, on filesystems
/// with neither, a check and a plain rename.
pub fn place_new(from: &Path, to: &Path) -> io::Result<bool> {
    let placed = place_new_unflushed(from, to)?;
    let dir = to.parent().unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()?;
    Ok(placed)
}

/// [`place_new`] without flushing the directory: for a caller whose next flush
/// of that directory comes before anything relies on the file being there.
pub fn place_new_unflushed(from: &Path, to: &Path) -> io::Result<bool> {
    let placed = match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP | Errno::PERM) => link_new(from, to)?,
        Err(e) => return Err(e.into()),
    };
    if !placed {
        std::fs::remove_file(from)?;
    }
    Ok(placed)
}

fn link_new(from: &Path, to: &Path) -> io::Result<bool> {
    match std::fs::hard_link(from, to) {
        Ok(()) => {
            std::fs::remove_file(from)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) if std::fs::symlink_metadata(to).is_ok() => Ok(false),
        Err(_) => std::fs::rename(from, to).map(|()| true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_file_placed_stays() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let (first, second, target) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("t"));
        std::fs::write(&first, "first")?;
        std::fs::write(&second, "second")?;
        assert!(place_new(&first, &target)?);
        assert!(!place_new(&second, &target)?);
        assert_eq!(std::fs::read_to_string(&target)?, "first");
        assert!(!first.exists() && !second.exists(), "both temporary names are gone");
        assert!(link_new(&target, &dir.path().join("t")).is_ok_and(|placed| !placed));
        Ok(())
    }
}

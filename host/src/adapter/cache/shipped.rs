//! Shipped artifacts mapped from a copy in the compiled cache.
//!
//! A shipped adapter's artifact is embedded in the binary. Deserialising it from
//! there copies all of it (1.1 MB for `sqlite`) into memory of its own and reads
//! every page of the binary that holds it: ~2 MiB of a store's resident memory.
//! With a cache directory, the host writes the artifact there once
//! (`shipped-<artifact BLAKE3>.cwasm`, owner-only, through a temporary file,
//! `fsync` and rename) and maps that file instead, so only the pages an adapter
//! runs are resident, shared with the page cache. The name needs no engine:
//! the artifact's digest names its bytes, which are what they are whatever the
//! engine (one they do not fit refuses them), so a copy can be checked while
//! the engine is still being built ([`checked_copy`], then [`mapped`]).
//!
//! Before each mapping the copy is checked against the build's digest of the
//! artifact, which is in the binary, not in the file: it must be this user's
//! plain, single-link file that no one else may write, of the artifact's length
//! and BLAKE3 digest (the 1.1 MB of `sqlite` hash in ~0.3 ms, against ~0.75 ms
//! for SHA-256). It is read for that through a descriptor opened without
//! following links, and that same descriptor is what gets mapped (by its
//! `/proc/self/fd` path), so the file checked is the file run. A copy that fails
//! the check is replaced; one that wasmtime refuses is left alone, and the
//! embedded artifact is used instead.
//!
//! Hashing is a third of a millisecond of CPU on every store's first open, so
//! a copy whose bytes were found to be the artifact's is stamped
//! (`shipped-<digest>.checked`, beside it): its device, inode, length and
//! change time. A later check that finds the same file, unchanged, skips the
//! hash. Any write to the file, a rename over it or a change of its mode moves
//! its change time on, and no user can set it back (only the system clock
//! can); as in git's index, a copy is stamped only once its last change is
//! [`settled`] in the past, since file times are coarse and a change in the
//! same tick as the one stamped would leave the same time behind. The stamp is
//! held to the copy's own rules (this user's private plain file); without one
//! that matches, the copy is hashed.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::write_file;
use crate::config::Precompiled;

/// Where the copy of `shipped` lives in `dir`.
pub fn path(dir: &Path, shipped: &Precompiled) -> PathBuf {
    dir.join(format!("shipped-{}.cwasm", shipped.artifact_digest.trim()))
}

/// How long ago a copy with fine file times must have last changed for a
/// check to stamp it: two ticks of the slowest clock Linux takes file times
/// from (its coarse clock ticks 100 to 1,000 times a second), after which any
/// change leaves a later time.
const SETTLED_FINE: Duration = Duration::from_millis(20);

/// The same for a copy whose change time has no fraction of a second: a
/// filesystem that keeps whole seconds (two on FAT), where a change a second
/// later may still leave the same time.
const SETTLED_COARSE: Duration = Duration::from_secs(2);

/// How long ago the copy `meta` describes must have last changed for a check
/// to stamp it. A change time with nanoseconds is taken for fine file times:
/// one of a filesystem with whole seconds never has any (a fine time that has
/// none by chance only waits longer).
fn settled(meta: &Metadata) -> Duration {
    if meta.ctime_nsec() != 0 { SETTLED_FINE } else { SETTLED_COARSE }
}

/// What a full check found to hold the artifact: the file, as its device,
/// inode, length and change time (seconds, nanoseconds).
#[derive(Debug, PartialEq, Eq)]
struct Stamp([i64; 5]);

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        let [dev, ino, len] = [meta.dev(), meta.ino(), meta.len()].map(|n| i64::try_from(n).unwrap_or(-1));
        Self([dev, ino, len, meta.ctime(), meta.ctime_nsec()])
    }

    fn text(&self) -> String {
        let [dev, ino, len, secs, nanos] = self.0;
        format!("{dev} {ino} {len} {secs} {nanos}\n")
    }

    fn parse(text: &str) -> Option<Self> {
        let fields: Vec<i64> = text.strip_suffix('\n')?.split(' ').map(str::parse).collect::<Result<_, _>>().ok()?;
        Some(Self(fields.try_into().ok()?))
    }
}

/// Where the stamp of the copy at `path` lives.
fn stamp_path(path: &Path) -> PathBuf {
    path.with_extension("checked")
}

/// This user's plain, single-link file that no one else may write, opened
/// without following a link.
fn open_private(path: &Path) -> Result<(File, Metadata), String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let mine = meta.uid() == rustix::process::geteuid().as_raw();
    if !meta.is_file() || !mine || meta.nlink() != 1 || meta.permissions().mode() & 0o022 != 0 {
        return Err("not a private file of this user".into());
    }
    Ok((file, meta))
}

/// The stamp at `path`, if there is a well-formed one held to the copy's rules.
fn read_stamp(path: &Path) -> Option<Stamp> {
    let (file, _) = open_private(path).ok()?;
    let mut text = String::new();
    file.take(128).read_to_string(&mut text).ok()?;
    Stamp::parse(&text)
}

/// A copy found to be exactly the artifact, open; what [`mapped`] maps.
pub struct Checked {
    file: File,
    path: PathBuf,
}

/// The copy at `path`, open, if it is exactly the artifact (see the module
/// docs); a copy hashed whose last change is `settled` (of its metadata) in the
/// past is stamped.
fn open_checked(path: &Path, shipped: &Precompiled, settled: fn(&Metadata) -> Duration) -> Result<File, String> {
    let (mut file, meta) = open_private(path)?;
    if meta.len() != shipped.artifact.len() as u64 {
        return Err(format!("{} bytes, not the artifact's {}", meta.len(), shipped.artifact.len()));
    }
    let stamp = Stamp::of(&meta);
    if read_stamp(&stamp_path(path)).is_some_and(|stamped| stamped == stamp) {
        return Ok(file);
    }
    let mut hasher = blake3::Hasher::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        hasher.update(&chunk[..n]);
    }
    if hasher.finalize().to_hex().as_str() != shipped.artifact_digest.trim() {
        return Err("its bytes are not the artifact's".into());
    }
    let changed = u64::try_from(meta.ctime()).ok().and_then(|secs| {
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, u32::try_from(meta.ctime_nsec()).unwrap_or(0)))
    });
    let age = changed.and_then(|changed| SystemTime::now().duration_since(changed).ok());
    if age.is_some_and(|age| age >= settled(&meta))
        && let Err(reason) = write_file(&stamp_path(path), &[stamp.text().as_bytes()])
    {
        tracing::debug!(path = %path.display(), %reason, "could not stamp a checked copy");
    }
    Ok(file)
}

/// The copy of `shipped` under `dir`, checked, written first when missing or
/// failing the check; `None` when that cannot be done (then the caller uses the
/// embedded artifact).
pub fn checked_copy(dir: &Path, shipped: &Precompiled) -> Option<Checked> {
    let path = path(dir, shipped);
    let file = match open_checked(&path, shipped, settled) {
        Ok(file) => file,
        Err(reason) => {
            if std::fs::symlink_metadata(&path).is_ok() {
                tracing::warn!(path = %path.display(), %reason, "replacing a cached copy of a shipped artifact");
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove it");
                    return None;
                }
            }
            if let Err(reason) = write_file(&path, &[shipped.artifact]) {
                tracing::warn!(path = %path.display(), %reason, "could not copy a shipped artifact to the cache");
                return None;
            }
            open_checked(&path, shipped, settled)
                .inspect_err(
                    |reason| tracing::warn!(path = %path.display(), %reason, "the copy just written fails its check"),
                )
                .ok()?
        }
    };
    Some(Checked { file, path })
}

/// The checked copy mapped; `None` if wasmtime refuses it (then the caller uses
/// the embedded artifact).
pub fn mapped(engine: &Engine, checked: Checked, what: &str) -> Option<Component> {
    let Checked { file, path } = checked;
    let by_descriptor = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    // SAFETY: `by_descriptor` names the descriptor whose bytes were found to be
    // those of the artifact embedded in this binary (compiled by this crate's
    // build script for this engine's settings): trusted machine code, in a file
    // only this user can change. wasmtime checks that it matches this engine.
    match unsafe { Component::deserialize_file(engine, &by_descriptor) } {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::warn!(adapter = %what, path = %path.display(), error = %e, "a cached shipped artifact was refused");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, SeekFrom, Write};

    use super::*;
    use crate::config::Builtin;

    /// The null adapter's artifact, and its copy just written under `dir`.
    fn written_copy(dir: &Path) -> Result<(Precompiled, PathBuf), String> {
        let shipped = Builtin::Null.precompiled();
        let copy = path(dir, &shipped);
        write_file(&copy, &[shipped.artifact])?;
        Ok((shipped, copy))
    }

    /// A stamped copy is taken on its stamp only while it is the same file,
    /// unchanged: a byte changed in place, same inode, same length, is caught.
    #[test]
    fn a_stamp_vouches_only_for_the_file_it_was_taken_of() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let (shipped, copy) = written_copy(dir.path())?;
        open_checked(&copy, &shipped, |_| SETTLED_COARSE)?;
        assert!(!stamp_path(&copy).exists(), "a copy changed just now is not stamped");
        open_checked(&copy, &shipped, |_| Duration::ZERO)?;
        let stamp = read_stamp(&stamp_path(&copy)).ok_or("stamped once settled")?;
        assert_eq!(stamp, Stamp::of(&std::fs::metadata(&copy)?));
        open_checked(&copy, &shipped, |_| SETTLED_COARSE)?;
        // A later change lands in a later tick of the file clock.
        std::thread::sleep(Duration::from_millis(50));
        let mut file = std::fs::OpenOptions::new().write(true).open(&copy)?;
        file.seek(SeekFrom::Start(shipped.artifact.len() as u64 / 2))?;
        let byte = shipped.artifact[shipped.artifact.len() / 2] ^ 1;
        file.write_all(&[byte])?;
        drop(file);
        let err = open_checked(&copy, &shipped, settled).err().unwrap_or_default();
        assert!(err.contains("not the artifact's"), "{err}");
        // A stamp that is not a private file of this user is not read.
        std::fs::set_permissions(stamp_path(&copy), std::fs::Permissions::from_mode(0o666))?;
        assert_eq!(read_stamp(&stamp_path(&copy)), None);
        Ok(())
    }

    /// A copy with fine file times is stamped by the first check two ticks of
    /// the file clock after its last change; one in whole seconds waits 2 s.
    #[test]
    fn how_long_a_copy_must_rest_follows_its_file_times() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let (shipped, copy) = written_copy(dir.path())?;
        let meta = std::fs::metadata(&copy)?;
        std::thread::sleep(SETTLED_FINE + Duration::from_millis(10));
        open_checked(&copy, &shipped, settled)?;
        let fine = meta.ctime_nsec() != 0;
        assert_eq!(stamp_path(&copy).exists(), fine, "change time {}.{:09}", meta.ctime(), meta.ctime_nsec());
        assert_eq!(settled(&meta), if fine { SETTLED_FINE } else { SETTLED_COARSE });
        Ok(())
    }

    #[test]
    fn stamps_read_back_and_garbage_is_no_stamp() {
        let stamp = Stamp([2049, 1234, 1_100_000, 1_790_000_000, 999_999_999]);
        assert_eq!(Stamp::parse(&stamp.text()), Some(stamp));
        for bad in ["", "1 2 3 4\n", "1 2 3 4 5", "1 2 3 4 5 6\n", "a b c d e\n"] {
            assert_eq!(Stamp::parse(bad), None, "{bad:?}");
        }
    }
}

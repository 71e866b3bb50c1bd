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

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::write_file;
use crate::config::Precompiled;

/// Where the copy of `shipped` lives in `dir`.
pub fn path(dir: &Path, shipped: &Precompiled) -> PathBuf {
    dir.join(format!("shipped-{}.cwasm", shipped.artifact_digest.trim()))
}

/// A copy found to be exactly the artifact, open; what [`mapped`] maps.
pub struct Checked {
    file: File,
    path: PathBuf,
}

/// The copy at `path`, open, if it is exactly the artifact (see the module docs).
fn open_checked(path: &Path, shipped: &Precompiled) -> Result<File, String> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let mine = meta.uid() == rustix::process::geteuid().as_raw();
    if !meta.is_file() || !mine || meta.nlink() != 1 || meta.permissions().mode() & 0o022 != 0 {
        return Err("not a private file of this user".into());
    }
    if meta.len() != shipped.artifact.len() as u64 {
        return Err(format!("{} bytes, not the artifact's {}", meta.len(), shipped.artifact.len()));
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
    Ok(file)
}

/// The copy of `shipped` under `dir`, checked, written first when missing or
/// failing the check; `None` when that cannot be done (then the caller uses the
/// embedded artifact).
pub fn checked_copy(dir: &Path, shipped: &Precompiled) -> Option<Checked> {
    let path = path(dir, shipped);
    let file = match open_checked(&path, shipped) {
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
            open_checked(&path, shipped)
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

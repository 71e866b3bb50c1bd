//! Compiled adapters, cached on disk and in memory.
//!
//! The key is the SHA-256 of the component bytes plus the engine's compatibility
//! hash, so a wasmtime upgrade or a different configuration never reuses an
//! artifact. Deserialising is `unsafe` in wasmtime because an artifact is trusted
//! machine code, so the host only ever loads files it wrote itself: the cache
//! directory is created owner-only and refused when anyone else may write to it
//! (or when it is not owned by this user), and each file carries a header with the
//! SHA-256 of the artifact, checked before use. The in-memory map is bounded.
//!
//! A shipped adapter's precompiled artifact is mapped from a checked copy in the
//! cache directory when there is one ([`shipped`]).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::config::Precompiled;
use crate::error::LoadError;
pub use shipped::Checked;

pub mod shipped;
use crate::util::hex;

const HEADER_MAGIC: &[u8; 8] = b"STOWCWA1";
const HEADER_LEN: usize = 8 + 32;

/// The SHA-256 of a component, hex encoded: its identity everywhere in the host.
pub fn digest(wasm: &[u8]) -> String {
    hex::encode(&Sha256::digest(wasm))
}

/// Compiled components by digest; the oldest entry goes first when full.
struct Memory {
    components: HashMap<String, (u64, Component)>,
    clock: u64,
    capacity: usize,
}

impl Memory {
    fn get(&mut self, digest: &str) -> Option<Component> {
        self.clock += 1;
        let clock = self.clock;
        self.components.get_mut(digest).map(|(used, component)| {
            *used = clock;
            component.clone()
        })
    }

    fn insert(&mut self, digest: &str, component: Component) {
        if self.components.len() >= self.capacity
            && let Some(oldest) = self.components.iter().min_by_key(|(_, (used, _))| *used).map(|(k, _)| k.clone())
        {
            self.components.remove(&oldest);
        }
        self.clock += 1;
        self.components.insert(digest.to_owned(), (self.clock, component));
    }
}

pub struct ComponentCache {
    dir: Option<PathBuf>,
    compat: String,
    memory: Mutex<Memory>,
    /// Components compiled by this cache (not precompiled, not cached).
    compiled: AtomicU64,
}

/// Creates `dir` owner-only if missing; refuses it if another user owns it or may
/// write to it.
pub fn prepare_private_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display())),
        Err(e) => Err(format!("{}: {e}", dir.display())),
        Ok(meta) => {
            if !meta.is_dir() {
                return Err(format!("{} is not a directory (symbolic links are not followed)", dir.display()));
            }
            let me = rustix::process::geteuid().as_raw();
            if meta.uid() != me {
                return Err(format!("{} belongs to another user (uid {})", dir.display(), meta.uid()));
            }
            if meta.permissions().mode() & 0o022 != 0 {
                return Err(format!("{} is writable by other users (chmod 700 it)", dir.display()));
            }
            Ok(())
        }
    }
}

impl ComponentCache {
    /// A cache in `dir` (created owner-only; refused if others may write to it).
    pub fn new(engine: &Engine, dir: Option<PathBuf>, capacity: usize) -> Result<Self, LoadError> {
        if let Some(dir) = &dir {
            prepare_private_dir(dir).map_err(|reason| LoadError::Cache { path: dir.clone(), reason })?;
        }
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let memory = Memory { components: HashMap::new(), clock: 0, capacity: capacity.max(1) };
        Ok(Self {
            dir,
            compat: format!("{:016x}", hasher.finish()),
            memory: Mutex::new(memory),
            compiled: AtomicU64::new(0),
        })
    }

    /// The on-disk artifact path for a digest, if the disk cache is on.
    pub fn artifact_path(&self, digest: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|dir| dir.join(format!("{digest}-{}.cwasm", self.compat)))
    }

    /// How many components this cache compiled.
    #[cfg(test)]
    pub fn compiled(&self) -> u64 {
        self.compiled.load(Ordering::Relaxed)
    }

    /// The compiled component for `wasm`: from memory, precompiled by the build
    /// (`precompiled`, for shipped adapters: mapped from its copy, `prechecked`
    /// or checked here, else deserialised from the binary), from disk, or
    /// freshly compiled.
    pub fn get(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
        what: &str,
        precompiled: Option<Precompiled>,
        prechecked: Option<Checked>,
    ) -> Result<Component, LoadError> {
        if let Some(component) = self.memory.lock().ok().and_then(|mut m| m.get(digest)) {
            return Ok(component);
        }
        let shipped = precompiled.filter(|built| !built.artifact.is_empty()).and_then(|built| {
            let checked = prechecked.or_else(|| self.dir.as_ref().and_then(|dir| shipped::checked_copy(dir, &built)));
            let mapped = checked.and_then(|checked| shipped::mapped(engine, checked, what));
            if mapped.is_some() {
                return mapped;
            }
            // SAFETY: the artifact was compiled by this crate's build script, with
            // the same wasmtime and engine settings, and is embedded in this
            // binary: it is trusted machine code. wasmtime still checks that it
            // matches this engine.
            match unsafe { Component::deserialize(engine, built.artifact) } {
                Ok(component) => Some(component),
                Err(e) => {
                    tracing::warn!(adapter = %what, error = %e, "the precompiled adapter does not fit this engine; compiling it");
                    None
                }
            }
        });
        let path = self.artifact_path(digest);
        let cached = shipped.or_else(|| path.as_deref().and_then(|p| read_artifact(engine, p)));
        let component = match cached {
            Some(component) => component,
            None => {
                self.compiled.fetch_add(1, Ordering::Relaxed);
                let started = std::time::Instant::now();
                let component = Component::from_binary(engine, wasm)
                    .map_err(|e| LoadError::Compile { what: what.to_owned(), reason: format!("{e:#}") })?;
                tracing::debug!(%digest, elapsed = ?started.elapsed(), "compiled adapter");
                if let Some(path) = &path
                    && let Err(reason) = write_artifact(path, &component)
                {
                    tracing::warn!(path = %path.display(), %reason, "could not cache compiled adapter");
                }
                component
            }
        };
        if let Ok(mut memory) = self.memory.lock() {
            memory.insert(digest, component.clone());
        }
        Ok(component)
    }
}

fn read_artifact(engine: &Engine, path: &Path) -> Option<Component> {
    let bytes = std::fs::read(path).ok()?;
    let valid = bytes.len() > HEADER_LEN
        && &bytes[..8] == HEADER_MAGIC
        && bytes[8..HEADER_LEN] == Sha256::digest(&bytes[HEADER_LEN..])[..];
    if !valid {
        tracing::warn!(path = %path.display(), "ignoring a damaged or foreign cache file");
        let _ = std::fs::remove_file(path);
        return None;
    }
    // SAFETY: the artifact was written by `write_artifact` into a directory only
    // this user can write (checked when the cache was opened), its header and
    // checksum were verified above, and it is for this engine's compatibility hash
    // (part of the file name).
    match unsafe { Component::deserialize(engine, &bytes[HEADER_LEN..]) } {
        Ok(component) => Some(component),
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "discarding unusable cache file");
            let _ = std::fs::remove_file(path);
            None
        }
    }
}

fn write_artifact(path: &Path, component: &Component) -> Result<(), String> {
    let artifact = component.serialize().map_err(|e| e.to_string())?;
    write_file(path, &[HEADER_MAGIC, &Sha256::digest(&artifact), &artifact])
}

/// Writes `parts` to `path` owner-only and whole: into a new temporary file,
/// flushed, then renamed into place (a reader sees the old file or all of the new).
fn write_file(path: &Path, parts: &[&[u8]]) -> Result<(), String> {
    let dir = path.parent().ok_or("cache path has no directory")?;
    let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), uuid::Uuid::now_v7().simple()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        for part in parts {
            file.write_all(part)?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_dir_others_can_write_is_refused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let cache = dir.path().join("cache");
        prepare_private_dir(&cache)?;
        assert_eq!(std::fs::metadata(&cache)?.permissions().mode() & 0o777, 0o700, "created owner-only");
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777))?;
        let err = prepare_private_dir(&cache).err().unwrap_or_default();
        assert!(err.contains("writable by other users"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link)?;
        let err = prepare_private_dir(&link).err().unwrap_or_default();
        assert!(err.contains("not a directory"), "{err}");
        Ok(())
    }

    /// With a cache directory, a shipped artifact is written there once and
    /// mapped; a copy that is not exactly the artifact is replaced.
    #[test]
    fn a_shipped_artifact_is_mapped_from_its_checked_copy() -> Result<(), Box<dyn std::error::Error>> {
        use crate::config::{Builtin, RuntimeConfig};
        let (engine, _) = crate::adapter::engine::build(&RuntimeConfig::default())?;
        let dir = tempfile::tempdir()?;
        let cache_dir = dir.path().join("cache");
        let shipped = Builtin::Null.precompiled();
        let load = || -> Result<ComponentCache, Box<dyn std::error::Error>> {
            let cache = ComponentCache::new(&engine, Some(cache_dir.clone()), 8)?;
            cache.get(&engine, Builtin::Null.wasm(), shipped.digest, "null", Some(shipped), None)?;
            assert_eq!(cache.compiled(), 0, "never compiled");
            Ok(cache)
        };
        load()?;
        let copy = shipped::path(&cache_dir, &shipped);
        assert_eq!(std::fs::read(&copy)?, shipped.artifact, "the copy is the embedded artifact");
        assert_eq!(std::fs::metadata(&copy)?.permissions().mode() & 0o777, 0o600, "owner-only");
        // Checked before the engine exists (as while one is built), mapped after.
        let checked = shipped::checked_copy(&cache_dir, &shipped).ok_or("the copy passes its check")?;
        let cache = ComponentCache::new(&engine, Some(cache_dir.clone()), 8)?;
        cache.get(&engine, Builtin::Null.wasm(), shipped.digest, "null", Some(shipped), Some(checked))?;
        assert_eq!(cache.compiled(), 0, "mapped from the copy checked beforehand");
        load()?;
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"not to be touched")?;
        let mut flipped = shipped.artifact.to_vec();
        flipped[shipped.artifact.len() / 2] ^= 1;
        for damage in ["short", "flipped", "link", "missing"] {
            let _ = std::fs::remove_file(&copy);
            match damage {
                "short" => std::fs::write(&copy, b"short")?,
                "flipped" => std::fs::write(&copy, &flipped)?,
                "link" => std::os::unix::fs::symlink(&elsewhere, &copy)?,
                _ => {}
            }
            load()?;
            let meta = std::fs::symlink_metadata(&copy)?;
            assert!(meta.is_file(), "{damage}: a plain file again");
            assert_eq!(std::fs::read(&copy)?, shipped.artifact, "{damage}: the artifact again");
        }
        assert_eq!(std::fs::read(&elsewhere)?, b"not to be touched");
        let names: Vec<String> = std::fs::read_dir(&cache_dir)?
            .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
            .collect::<std::io::Result<_>>()?;
        // The copy, and its stamp should a check have found it settled.
        assert!(names.iter().all(|name| !name.starts_with(".tmp-")), "no temporary file left behind: {names:?}");
        Ok(())
    }

    #[test]
    fn shipped_adapters_load_precompiled_and_others_compile_once() -> Result<(), Box<dyn std::error::Error>> {
        use crate::config::{Builtin, RuntimeConfig};
        // The runtime's own engine (pooling allocator, when available).
        let (engine, _) = crate::adapter::engine::build(&RuntimeConfig::default())?;
        let cache = ComponentCache::new(&engine, None, 8)?;
        for builtin in Builtin::ALL {
            let shipped = builtin.precompiled();
            assert_eq!(shipped.digest, digest(builtin.wasm()), "the build's digest of {}", builtin.name());
            assert!(!shipped.artifact.is_empty(), "{} is precompiled", builtin.name());
            cache.get(&engine, builtin.wasm(), shipped.digest, builtin.name(), Some(shipped), None)?;
        }
        assert_eq!(cache.compiled(), 0, "no shipped adapter is compiled at run time");
        let null = Builtin::Null.wasm();
        let other = ComponentCache::new(&engine, None, 8)?;
        for _ in 0..2 {
            other.get(&engine, null, &digest(null), "null.wasm", None, None)?;
        }
        assert_eq!(other.compiled(), 1, "a component from a file compiles once, then comes from memory");
        Ok(())
    }
}

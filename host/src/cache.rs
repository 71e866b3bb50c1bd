//! Compiled adapters, cached on disk and in memory.
//!
//! The key is the SHA-256 of the component bytes plus the engine's compatibility
//! hash, so a wasmtime upgrade or a different configuration never reuses an
//! artifact. Deserialising is `unsafe` in wasmtime because an artifact is trusted
//! machine code: the host only ever loads files it wrote itself, recognised by a
//! header carrying the SHA-256 of the artifact, checked before use.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::error::LoadError;

const HEADER_MAGIC: &[u8; 8] = b"STOWCWA1";
const HEADER_LEN: usize = 8 + 32;

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of a component, hex encoded: its identity everywhere in the host.
pub fn digest(wasm: &[u8]) -> String {
    hex(&Sha256::digest(wasm))
}

pub struct ComponentCache {
    dir: Option<PathBuf>,
    compat: String,
    memory: Mutex<HashMap<String, Component>>,
}

impl ComponentCache {
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Self { dir, compat: format!("{:016x}", hasher.finish()), memory: Mutex::new(HashMap::new()) }
    }

    /// The compiled component for `wasm`, from memory, from disk, or freshly compiled.
    pub fn get(&self, engine: &Engine, wasm: &[u8], digest: &str, what: &str) -> Result<Component, LoadError> {
        if let Some(component) = self.memory.lock().ok().and_then(|m| m.get(digest).cloned()) {
            return Ok(component);
        }
        let path = self.dir.as_ref().map(|dir| dir.join(format!("{digest}-{}.cwasm", self.compat)));
        let cached = path.as_deref().and_then(|p| self.read_artifact(engine, p));
        let component = match cached {
            Some(component) => component,
            None => {
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
            memory.insert(digest.to_owned(), component.clone());
        }
        Ok(component)
    }

    fn read_artifact(&self, engine: &Engine, path: &Path) -> Option<Component> {
        let bytes = std::fs::read(path).ok()?;
        let valid = bytes.len() > HEADER_LEN
            && &bytes[..8] == HEADER_MAGIC
            && bytes[8..HEADER_LEN] == Sha256::digest(&bytes[HEADER_LEN..])[..];
        if !valid {
            tracing::warn!(path = %path.display(), "ignoring a damaged or foreign cache file");
            let _ = std::fs::remove_file(path);
            return None;
        }
        // SAFETY: the artifact was written by `write_artifact` (header and checksum
        // verified above) for this engine's compatibility hash (part of the file name).
        match unsafe { Component::deserialize(engine, &bytes[HEADER_LEN..]) } {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "discarding unusable cache file");
                let _ = std::fs::remove_file(path);
                None
            }
        }
    }
}

fn write_artifact(path: &Path, component: &Component) -> Result<(), String> {
    let artifact = component.serialize().map_err(|e| e.to_string())?;
    let dir = path.parent().ok_or("cache path has no directory")?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut tmp = tempfile_in(dir).map_err(|e| e.to_string())?;
    let result = (|| {
        tmp.1.write_all(HEADER_MAGIC)?;
        tmp.1.write_all(&Sha256::digest(&artifact))?;
        tmp.1.write_all(&artifact)?;
        tmp.1.sync_all()?;
        std::fs::rename(&tmp.0, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp.0);
    }
    result.map_err(|e| e.to_string())
}

/// A uniquely named temporary file next to the destination (same filesystem, so
/// the final rename is atomic and concurrent writers never share a file).
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!(".tmp-{}-{n}-{}", std::process::id(), uuid::Uuid::now_v7().simple()));
    let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
    Ok((path, file))
}

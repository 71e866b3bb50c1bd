//! Where a store keeps its files.
//!
//! ```text
//! <data_dir>/host/         owner-only, never preopened: the SQL database, keys, the layout marker
//! <data_dir>/adapter/      preopened at /data for the filesystem grant
//! <data_dir>/tenants/<t>/  with tenant isolation: host/ and adapter/ per tenant, and `name`
//! ```
//!
//! The host never follows a symbolic link in these directories: each is checked
//! with `symlink_metadata` before use, and the database is opened with
//! `SQLITE_OPEN_NOFOLLOW`. A data directory in the layout of earlier versions
//! (database and adapter files side by side at the top) is moved into this one
//! the first time it is opened; a database file that is a symbolic link is
//! refused, and top-level symbolic links are removed (an adapter made them).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::util::hex;

const HOST: &str = "host";
const ADAPTER: &str = "adapter";
const TENANTS: &str = "tenants";
const MARKER: &str = "layout";
const MARKER_TEXT: &str = "stowage data layout 2\n";
/// The SQLite database, inside `host/`.
pub const SQL_FILE: &str = "sql.sqlite3";
/// Where earlier versions kept it, at the top of the data directory.
const LEGACY_SQL_FILE: &str = "stowage.sqlite3";
const SQL_SUFFIXES: [&str; 3] = ["", "-wal", "-shm"];

/// The prepared directories of a store (or of one tenant of it).
#[derive(Clone, Debug)]
pub struct Layout {
    root: PathBuf,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Config(format!("{what} {}: {e}", path.display()))
}

/// Makes `dir` exist as a real directory (never through a symbolic link).
fn real_dir(dir: &Path, mode: u32) -> Result<(), Error> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::Config(format!("{} is not a directory (symbolic links are not followed)", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new().recursive(true).mode(mode).create(dir).map_err(|e| io("cannot create", dir, e))
        }
        Err(e) => Err(io("cannot inspect", dir, e)),
    }
}

/// A tenant's directory name: readable when short and plain, hashed otherwise.
fn tenant_dir_name(tenant: &str) -> String {
    let plain = !tenant.is_empty()
        && tenant.len() <= 64
        && tenant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if plain { format!("t-{tenant}") } else { format!("h-{}", hex::encode(&Sha256::digest(tenant.as_bytes())[..16])) }
}

impl Layout {
    /// The layout rooted at `root`, without touching the disk.
    pub fn at(root: &Path) -> Self {
        Self { root: root.to_path_buf() }
    }

    /// Prepares `root` (blocking: call off async workers).
    pub fn prepare(root: &Path) -> Result<Self, Error> {
        real_dir(root, 0o755)?;
        let layout = Self { root: root.to_path_buf() };
        let marker = layout.private_dir().join(MARKER);
        if std::fs::symlink_metadata(&marker).is_err() {
            layout.adopt_legacy()?;
            real_dir(&layout.private_dir(), 0o700)?;
            real_dir(&layout.adapter_dir(), 0o755)?;
            std::fs::write(&marker, MARKER_TEXT).map_err(|e| io("cannot write", &marker, e))?;
        }
        real_dir(&layout.private_dir(), 0o700)?;
        real_dir(&layout.adapter_dir(), 0o755)?;
        Ok(layout)
    }

    /// Host-only files: the SQL database, keys.
    pub fn private_dir(&self) -> PathBuf {
        self.root.join(HOST)
    }

    /// What the adapter sees as `/data`.
    pub fn adapter_dir(&self) -> PathBuf {
        self.root.join(ADAPTER)
    }

    /// The SQLite database the `sql` capability lends.
    pub fn sql_path(&self) -> PathBuf {
        self.private_dir().join(SQL_FILE)
    }

    /// One tenant's directories (prepared on first use; blocking).
    pub fn tenant(&self, tenant: &str) -> Result<Self, Error> {
        let root = self.root.join(TENANTS).join(tenant_dir_name(tenant));
        real_dir(&self.root.join(TENANTS), 0o755)?;
        let layout = Self::prepare(&root)?;
        let name = layout.private_dir().join("tenant");
        if std::fs::symlink_metadata(&name).is_err() {
            std::fs::write(&name, tenant).map_err(|e| io("cannot write", &name, e))?;
        }
        Ok(layout)
    }

    /// The tenants that have directories, sorted byte-wise (for cross-tenant scans).
    pub fn tenants(&self) -> Result<Vec<String>, Error> {
        let dir = self.root.join(TENANTS);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("cannot list", &dir, e)),
        };
        let mut tenants = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io("cannot list", &dir, e))?;
            let name = entry.path().join(HOST).join("tenant");
            if let Ok(tenant) = std::fs::read_to_string(&name) {
                tenants.push(tenant);
            }
        }
        tenants.sort();
        Ok(tenants)
    }

    /// Moves a data directory of the earlier layout into this one.
    fn adopt_legacy(&self) -> Result<(), Error> {
        let entries: Vec<_> = std::fs::read_dir(&self.root)
            .map_err(|e| io("cannot list", &self.root, e))?
            .filter_map(Result::ok)
            .filter(|e| ![HOST, ADAPTER, TENANTS].contains(&e.file_name().to_string_lossy().as_ref()))
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        tracing::info!(dir = %self.root.display(), "moving a data directory of an earlier Stowage into the new layout");
        real_dir(&self.private_dir(), 0o700)?;
        real_dir(&self.adapter_dir(), 0o755)?;
        for suffix in SQL_SUFFIXES {
            let from = self.root.join(format!("{LEGACY_SQL_FILE}{suffix}"));
            match std::fs::symlink_metadata(&from) {
                Ok(meta) if meta.file_type().is_file() => {
                    let to = self.private_dir().join(format!("{SQL_FILE}{suffix}"));
                    std::fs::rename(&from, &to).map_err(|e| io("cannot move", &from, e))?;
                }
                Ok(_) => {
                    return Err(Error::Config(format!(
                        "{} is not a regular file (a symbolic link?): refusing to open it as the store's database",
                        from.display()
                    )));
                }
                Err(_) => {}
            }
        }
        for entry in entries {
            let from = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&from) else { continue };
            if meta.file_type().is_symlink() {
                tracing::warn!(path = %from.display(), "removing a symbolic link an adapter left in the data directory");
                std::fs::remove_file(&from).map_err(|e| io("cannot remove", &from, e))?;
                continue;
            }
            let to = self.adapter_dir().join(entry.file_name());
            std::fs::rename(&from, &to).map_err(|e| io("cannot move", &from, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_directory_is_adopted_and_its_symlinks_refused_or_removed() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("store");
        std::fs::create_dir_all(root.join("stowage-v1/t"))?;
        std::fs::write(root.join(LEGACY_SQL_FILE), b"db")?;
        std::os::unix::fs::symlink("../../etc", root.join("escape"))?;
        let layout = Layout::prepare(&root)?;
        assert_eq!(std::fs::read(layout.sql_path())?, b"db");
        assert!(layout.adapter_dir().join("stowage-v1/t").is_dir());
        assert!(std::fs::symlink_metadata(root.join("escape")).is_err(), "the link is gone");
        let again = Layout::prepare(&root)?;
        assert_eq!(again.sql_path(), layout.sql_path());

        let linked = dir.path().join("linked");
        std::fs::create_dir_all(&linked)?;
        std::os::unix::fs::symlink(layout.sql_path(), linked.join(LEGACY_SQL_FILE))?;
        let err = Layout::prepare(&linked).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("refusing to open it"), "{err}");
        Ok(())
    }

    #[test]
    fn tenants_get_their_own_directories_and_are_listed() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let layout = Layout::prepare(dir.path())?;
        let a = layout.tenant("acme")?;
        let b = layout.tenant("Ünïcode / tenant")?;
        assert_ne!(a.adapter_dir(), b.adapter_dir());
        assert!(a.adapter_dir().starts_with(dir.path().join(TENANTS)));
        assert_eq!(layout.tenants()?, ["acme", "Ünïcode / tenant"]);
        Ok(())
    }
}

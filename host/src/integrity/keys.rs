//! Store keys: 32-byte secrets with numeric ids, in a small text format (`ID:HEX`
//! per line, the last line is the current key), kept where no adapter can reach.
//!
//! Generated keys live in the store's host-private directory, in a file only its
//! owner can read or write. Rotation adds a key and makes it current; old keys
//! stay, so records tagged with them keep verifying without rewriting history.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::util::hex;
use crate::util::place::place_new;

/// The file generated keys live in, inside the host-private directory.
pub const KEY_FILE: &str = "store.keys";

/// A store's keys.
#[derive(Clone, PartialEq, Eq)]
pub struct Keyring {
    current: u32,
    keys: BTreeMap<u32, [u8; 32]>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("Keyring").field("current", &self.current).field("ids", &self.ids()).finish()
    }
}

fn random_key() -> Result<[u8; 32], String> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| format!("no randomness for a key: {e}"))?;
    Ok(key)
}

impl Keyring {
    /// A keyring with one fresh random key (id 1).
    pub fn generate() -> Result<Self, String> {
        Ok(Self { current: 1, keys: BTreeMap::from([(1, random_key()?)]) })
    }

    /// Parses `ID:HEX` lines (blank lines and `#` comments ignored); the last key
    /// is the current one.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut keys = BTreeMap::new();
        let mut current = None;
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |what: &str| format!("line {}: {what}", number + 1);
            let (id, key) = line.split_once(':').ok_or_else(|| at("expected ID:HEX"))?;
            let id: u32 = id.trim().parse().map_err(|_| at("the key id is not a number"))?;
            let key: [u8; 32] = hex::decode(key.trim())
                .and_then(|bytes| bytes.try_into().ok())
                .ok_or_else(|| at("the key must be 64 hex digits (32 bytes)"))?;
            if keys.insert(id, key).is_some() {
                return Err(at(&format!("key id {id} appears twice")));
            }
            current = Some(id);
        }
        let current = current.ok_or("no keys")?;
        Ok(Self { current, keys })
    }

    /// The file format of [`Keyring::parse`].
    pub fn render(&self) -> String {
        let mut out = String::from("# Stowage store keys: ID:HEX, the last line is the current key. Keep secret.\n");
        let mut ids: Vec<u32> = self.keys.keys().copied().filter(|id| *id != self.current).collect();
        ids.push(self.current);
        for id in ids {
            if let Some(key) = self.keys.get(&id) {
                out.push_str(&format!("{id}:{}\n", hex::encode(key)));
            }
        }
        out
    }

    /// The id and material of the key new records use.
    pub fn current(&self) -> (u32, &[u8; 32]) {
        // `current` is always a key of the map (by construction).
        (self.current, self.keys.get(&self.current).unwrap_or(&[0; 32]))
    }

    pub fn get(&self, id: u32) -> Option<&[u8; 32]> {
        self.keys.get(&id)
    }

    pub fn ids(&self) -> Vec<u32> {
        self.keys.keys().copied().collect()
    }

    /// Adds a fresh key and makes it current; returns its id.
    pub fn rotate(&mut self) -> Result<u32, String> {
        let id = self.keys.keys().max().copied().unwrap_or(0).checked_add(1).ok_or("key ids exhausted")?;
        self.keys.insert(id, random_key()?);
        self.current = id;
        Ok(id)
    }

    /// Reads a key file, refusing one that anyone but its owner may read or write.
    pub fn read(path: &Path) -> Result<Self, String> {
        let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.file_type().is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!("{} is accessible to other users (chmod 600 it)", path.display()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Writes the keyring to `path` atomically, owner-only, replacing the file
    /// there.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        self.put(path, true).map(drop)
    }

    /// Writes the keyring to `path` atomically, owner-only: through a temporary
    /// file of a name no other writer uses, flushed, then renamed into place
    /// (without `replace`, only if nothing is there: `false` when another writer
    /// got there first, see [`place_new`]) and the directory flushed.
    fn put(&self, path: &Path, replace: bool) -> Result<bool, String> {
        let dir = path.parent().ok_or("a key file needs a directory")?;
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|e| format!("no randomness for a file name: {e}"))?;
        let tmp = dir.join(format!(".{KEY_FILE}.{}.{}.tmp", std::process::id(), hex::encode(&nonce)));
        let result = (|| -> std::io::Result<bool> {
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            file.write_all(self.render().as_bytes())?;
            file.sync_all()?;
            if !replace {
                return place_new(&tmp, path);
            }
            std::fs::rename(&tmp, path)?;
            std::fs::File::open(dir)?.sync_all()?;
            Ok(true)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(|e| format!("writing {}: {e}", path.display()))
    }

    /// The keyring of a host-private directory, generated on first use. Hosts
    /// that start a store at the same moment all end up with the one keyring
    /// that reached the disk first.
    pub fn load_or_generate(private_dir: &Path) -> Result<(Self, PathBuf), String> {
        let path = private_dir.join(KEY_FILE);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => Ok((Self::read(&path)?, path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let keys = Self::generate()?;
                if keys.put(&path, false)? { Ok((keys, path)) } else { Ok((Self::read(&path)?, path)) }
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_start_a_store_at_once_share_the_first_keyring_written() -> Result<(), String> {
        for _ in 0..20 {
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let loaded: Vec<Keyring> = std::thread::scope(|scope| {
                let starting: Vec<_> = (0..4).map(|_| scope.spawn(|| Keyring::load_or_generate(dir.path()))).collect();
                starting
                    .into_iter()
                    .map(|host| host.join().map_err(|_| "a host panicked".to_string())?.map(|(keys, _)| keys))
                    .collect::<Result<_, String>>()
            })?;
            let on_disk = Keyring::read(&dir.path().join(KEY_FILE))?;
            assert!(loaded.iter().all(|keys| *keys == on_disk), "a host kept a keyring that is not on disk");
            let files = std::fs::read_dir(dir.path()).map_err(|e| e.to_string())?.count();
            assert_eq!(files, 1, "temporary key files were left");
        }
        Ok(())
    }

    #[test]
    fn parse_render_rotate() -> Result<(), String> {
        let mut keys = Keyring::generate()?;
        let first = *keys.current().1;
        assert_eq!(keys.rotate()?, 2);
        let back = Keyring::parse(&keys.render())?;
        assert_eq!(back, keys);
        assert_eq!(back.current().0, 2);
        assert_eq!(back.get(1), Some(&first));
        assert!(!format!("{keys:?}").contains(&hex::encode(&first)), "Debug must not print keys");
        for bad in ["", "1:zz", "x:00", "1:00"] {
            assert!(Keyring::parse(bad).is_err(), "{bad:?}");
        }
        Ok(())
    }

    #[test]
    fn generated_files_are_owner_only_and_others_are_refused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let (keys, path) = Keyring::load_or_generate(dir.path())?;
        assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o777, 0o600);
        assert_eq!(Keyring::load_or_generate(dir.path())?.0, keys, "the same keys come back");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
        let err = Keyring::read(&path).err().unwrap_or_default();
        assert!(err.contains("accessible to other users"), "{err}");
        Ok(())
    }
}

//! Where a store's keyring comes from ([`KeySource`]), reading it again, and
//! rotating it.
//!
//! Rotation adds a key and makes it current; it is only possible where the host
//! keeps the keyring (generated keys, a key file). A rotation holds an exclusive
//! lock on `<key file>.lock`, so two `stowage rekey` runs never lose a key, and
//! writes the file atomically. Hosts that have the store open keep tagging with
//! the key they loaded until they reopen it, and re-read the keyring when they
//! meet a record tagged with a key they do not have yet.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use super::KeyReload;
use super::keys::{KEY_FILE, Keyring};
use crate::config::KeySource;

/// The outcome of a rotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// The key file written.
    pub path: PathBuf,
    /// The new current key.
    pub current: u32,
    /// Every key id the store now holds.
    pub ids: Vec<u32>,
}

/// The key file of `source`, for the sources the host keeps.
fn key_file(source: &KeySource, private_dir: &Path) -> Option<PathBuf> {
    match source {
        KeySource::Generated => Some(private_dir.join(KEY_FILE)),
        KeySource::File(path) => Some(path.clone()),
        KeySource::Env(_) | KeySource::Inline(_) => None,
    }
}

/// The keyring of `source`; generated keys are created on first use.
pub fn load(source: &KeySource, private_dir: &Path) -> Result<Keyring, String> {
    match source {
        KeySource::Generated => Keyring::load_or_generate(private_dir).map(|(keys, _)| keys),
        KeySource::File(path) => Keyring::read(path),
        KeySource::Env(var) => {
            let text = std::env::var(var).map_err(|_| format!("environment variable {var} is not set"))?;
            Keyring::parse(&text).map_err(|e| format!("{var}: {e}"))
        }
        KeySource::Inline(text) => Keyring::parse(text),
    }
}

/// A keyring [`load_beside`] is reading or making.
#[must_use = "dropping it waits for the keyring; wait for it to know how it went"]
pub struct PendingKeyring(Pending);

enum Pending {
    Loaded(Result<Keyring, String>),
    Loading(JoinHandle<Result<Keyring, String>>),
    Taken,
}

/// [`load`], on a thread of its own for generated keys: making them writes and
/// flushes a new key file and its directory (about a millisecond of waiting
/// for the disk), which the caller need not wait for until it tags anything.
/// Keys from anywhere else are read here. Without a thread, loads here too.
pub fn load_beside(source: &KeySource, private_dir: &Path) -> PendingKeyring {
    if let KeySource::Generated = source {
        let (source, dir) = (source.clone(), private_dir.to_owned());
        match std::thread::Builder::new().name("stowage-keys".into()).spawn(move || load(&source, &dir)) {
            Ok(thread) => return PendingKeyring(Pending::Loading(thread)),
            Err(error) => tracing::debug!(%error, "no thread to load the keyring on; loading it here"),
        }
    }
    PendingKeyring(Pending::Loaded(load(source, private_dir)))
}

impl PendingKeyring {
    /// The keyring, once a key file it made is flushed and in place.
    pub fn wait(mut self) -> Result<Keyring, String> {
        self.join()
    }

    fn join(&mut self) -> Result<Keyring, String> {
        match std::mem::replace(&mut self.0, Pending::Taken) {
            Pending::Loaded(keyring) => keyring,
            Pending::Loading(thread) => thread.join().unwrap_or_else(|_| Err("loading the keyring panicked".into())),
            Pending::Taken => Err("the keyring was already taken".into()),
        }
    }
}

/// Dropped unwaited (an open that failed meanwhile): still waits, so nothing is
/// written after the caller gave up.
impl Drop for PendingKeyring {
    fn drop(&mut self) {
        if let Pending::Loading(_) = self.0 {
            let _ = crate::util::blocking::here(|| self.join());
        }
    }
}

/// Re-reads the keyring of `source` (never generating one).
pub fn reloader(source: &KeySource, private_dir: &Path) -> KeyReload {
    let (source, private_dir) = (source.clone(), private_dir.to_owned());
    Box::new(move || match &source {
        KeySource::Generated => Keyring::read(&private_dir.join(KEY_FILE)),
        other => load(other, &private_dir),
    })
}

/// Adds a fresh key to the keyring of `source` and makes it current.
pub fn rotate(source: &KeySource, private_dir: &Path) -> Result<Rotation, String> {
    let Some(path) = key_file(source, private_dir) else {
        return Err(match source {
            KeySource::Env(var) => format!(
                "the keys come from the environment variable {var}: append a new `ID:HEX` line there \
                 (a higher id, 32 random bytes) and restart the hosts"
            ),
            _ => "the keys are supplied in code: add a new `ID:HEX` line there and reopen the store".into(),
        });
    };
    let lock_path =
        path.with_file_name(format!("{}.lock", path.file_name().and_then(|n| n.to_str()).unwrap_or(KEY_FILE)));
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock().map_err(|e| format!("locking {}: {e}", lock_path.display()))?;
    let mut keys = match source {
        KeySource::Generated => Keyring::load_or_generate(private_dir)?.0,
        _ => Keyring::read(&path)?,
    };
    let current = keys.rotate()?;
    keys.write(&path)?;
    Ok(Rotation { path, current, ids: keys.ids() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_adds_a_current_key_and_keeps_the_old_ones() -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let first = load(&KeySource::Generated, dir.path())?;
        let rotation = rotate(&KeySource::Generated, dir.path())?;
        assert_eq!((rotation.current, rotation.ids.clone()), (2, vec![1, 2]));
        let after = reloader(&KeySource::Generated, dir.path())()?;
        assert_eq!(after.current().0, 2);
        assert_eq!(after.get(1), first.get(1), "the old key stays");
        assert_eq!(rotate(&KeySource::Generated, dir.path())?.ids, vec![1, 2, 3]);
        Ok(())
    }

    #[test]
    fn a_keyring_made_beside_is_in_place_once_waited_for_or_dropped() -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let made = load_beside(&KeySource::Generated, dir.path()).wait()?;
        assert!(made == load(&KeySource::Generated, dir.path())?, "the file holds the keyring handed out");
        let other = tempfile::tempdir().map_err(|e| e.to_string())?;
        drop(load_beside(&KeySource::Generated, other.path()));
        let file = std::fs::read_to_string(other.path().join(KEY_FILE)).map_err(|e| e.to_string())?;
        assert!(Keyring::parse(&file).is_ok(), "dropped, it still finished writing the file");
        // Keys from elsewhere are read at once, and their errors reported by `wait`.
        let inline = load_beside(&KeySource::Inline("not a key".into()), Path::new("/nonexistent"));
        assert!(inline.wait().is_err());
        Ok(())
    }

    #[test]
    fn keys_the_host_does_not_keep_cannot_be_rotated_by_it() {
        let env = rotate(&KeySource::Env("STOWAGE_TEST_KEYS".into()), Path::new("/nonexistent"));
        assert!(matches!(env, Err(e) if e.contains("STOWAGE_TEST_KEYS")));
        assert!(rotate(&KeySource::Inline("1:00".into()), Path::new("/nonexistent")).is_err());
    }
}

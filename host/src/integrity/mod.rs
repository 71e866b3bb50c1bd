//! What the host does to everything it hands an adapter, and undoes on the way
//! back: encode ([`codec`]), seal (optional, [`seal`]) and tag ([`tag`]) — then
//! verify the tag against the binding the caller asked for, open, decode.
//!
//! A record's binding says what it is (message, conversation meta, display record)
//! and whose and where it is (scope, conversation id, seq, message id, the clear
//! fields), so an adapter that returns a record of another tenant, conversation
//! or position, or with any byte changed, is caught.

pub mod bindings;
pub mod codec;
mod keys;
mod seal;
pub mod source;
mod tag;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

pub use self::keys::{KEY_FILE, Keyring};
use self::seal::SealKey;
pub use self::tag::Binding;
use self::tag::MacKey;
use crate::config::{Integrity, Untagged};
use crate::model::Scope;

/// Sealing keys kept derived (per store key and tenant) before the map is cleared.
const MAX_SEAL_KEYS: usize = 1024;

/// What checking a record's tag found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The tag is right.
    Verified,
    /// No tag, and the store accepts untagged records: report it.
    Untagged,
    /// Refused; the reason never includes content.
    Refused(String),
}

/// Where a store's keyring comes from again, when a record names a key this
/// host does not have yet (another host rotated the keys).
pub type KeyReload = Box<dyn Fn() -> Result<Keyring, String> + Send + Sync>;

/// A key reload is tried at most this often.
const RELOAD_INTERVAL: Duration = Duration::from_millis(100);

/// One keyring and its derived MAC keys.
struct KeyState {
    keys: Keyring,
    macs: BTreeMap<u32, MacKey>,
}

impl KeyState {
    fn new(keys: Keyring) -> Self {
        let macs = keys
            .ids()
            .into_iter()
            .filter_map(|id| keys.get(id).map(|key| (id, MacKey::new(id, &mac_key(key)))))
            .collect();
        Self { keys, macs }
    }
}

/// Encodes, seals and tags records for one store, and verifies them back.
pub struct Protector {
    settings: Integrity,
    state: RwLock<Arc<KeyState>>,
    reload: Option<KeyReload>,
    reload_interval: Duration,
    last_reload: Mutex<Option<Instant>>,
    seal_keys: Mutex<HashMap<(u32, String), Arc<SealKey>>>,
}

impl Protector {
    pub fn new(settings: Integrity, keys: Keyring) -> Self {
        Self {
            settings,
            state: RwLock::new(Arc::new(KeyState::new(keys))),
            reload: None,
            reload_interval: RELOAD_INTERVAL,
            last_reload: Mutex::new(None),
            seal_keys: Mutex::new(HashMap::new()),
        }
    }

    /// Lets the protector re-read the keyring when a record names an unknown
    /// key, so hosts sharing a database follow a `stowage rekey` done elsewhere.
    pub fn with_reload(mut self, reload: KeyReload) -> Self {
        self.reload = Some(reload);
        self
    }

    fn state(&self) -> Arc<KeyState> {
        Arc::clone(&self.state.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The key state, re-read from its source if it lacks key `id` (at most once
    /// per [`RELOAD_INTERVAL`]). The reload runs holding the rate limit's lock, so
    /// a thread that needs the same key meanwhile (the records of one page are
    /// checked on several threads) waits for it and then finds the key, instead
    /// of being refused within the interval.
    fn state_with(&self, id: u32) -> Arc<KeyState> {
        let state = self.state();
        if state.keys.get(id).is_some() {
            return state;
        }
        let Some(reload) = &self.reload else { return state };
        let mut last = self.last_reload.lock().unwrap_or_else(PoisonError::into_inner);
        // Reloaded by another thread while this one waited for the lock?
        let state = self.state();
        if state.keys.get(id).is_some() || last.is_some_and(|at| at.elapsed() < self.reload_interval) {
            return state;
        }
        *last = Some(Instant::now());
        match reload() {
            // Keys are only ever added: a reloaded ring missing one we hold is
            // not taken (it would make records we wrote unreadable).
            Ok(keys) if state.keys.ids().iter().all(|old| keys.get(*old) == state.keys.get(*old)) => {
                tracing::info!(current = keys.current().0, "integrity keys reloaded");
                let fresh = Arc::new(KeyState::new(keys));
                *self.state.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&fresh);
                fresh
            }
            Ok(_) => {
                tracing::warn!("the reloaded keyring lacks keys this host holds; keeping the current one");
                state
            }
            Err(e) => {
                tracing::warn!(error = %e, "reloading the integrity keys failed");
                state
            }
        }
    }

    /// The id of the key new records are tagged and sealed with.
    pub fn current_key(&self) -> u32 {
        self.state().keys.current().0
    }

    pub fn sealing(&self) -> bool {
        self.settings.seal
    }

    /// The tag of `payload` under `binding`; empty when tags are off.
    pub fn tag(&self, binding: &Binding, payload: &[u8]) -> Vec<u8> {
        if !self.settings.tags {
            return Vec::new();
        }
        let state = self.state();
        match state.macs.get(&state.keys.current().0) {
            Some(mac) => mac.tag(binding, payload),
            None => Vec::new(),
        }
    }

    /// Checks a record's tag. `stored` says whether the adapter can keep tags at
    /// all: 0.1.0 adapters cannot, so their records are accepted unauthenticated.
    pub fn verify(&self, tag: &[u8], binding: &Binding, payload: &[u8], stored: bool) -> Verdict {
        if !self.settings.tags {
            return Verdict::Verified;
        }
        if tag.is_empty() {
            return if !stored || self.settings.untagged == Untagged::Accept {
                Verdict::Untagged
            } else {
                Verdict::Refused(
                    "the record has no integrity tag (written before tags existed?); set `untagged = \"accept\"` \
                     for this store to load such records, reported as unverified"
                        .into(),
                )
            };
        }
        let Some(id) = tag::key_id(tag) else { return Verdict::Refused("the tag is malformed".into()) };
        // The common case, a key this host holds, under the read lock alone: no
        // reference count taken per record (the records of a page are checked on
        // several threads, which would all bump the same one).
        {
            let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(mac) = state.macs.get(&id) {
                return Self::verdict_of(mac.verify(tag, binding, payload));
            }
        }
        match self.state_with(id).macs.get(&id) {
            None => Verdict::Refused(format!("the tag names key {id}, which this store does not have")),
            Some(mac) => Self::verdict_of(mac.verify(tag, binding, payload)),
        }
    }

    fn verdict_of(matches: bool) -> Verdict {
        if matches {
            Verdict::Verified
        } else {
            Verdict::Refused("the tag does not match the record (changed, moved or forged)".into())
        }
    }

    fn seal_key(&self, id: u32, tenant: &str) -> Result<Arc<SealKey>, String> {
        let mut cache = self.seal_keys.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = cache.get(&(id, tenant.to_owned())) {
            return Ok(Arc::clone(found));
        }
        let state = self.state_with(id);
        let key = state.keys.get(id).ok_or_else(|| format!("sealed with key {id}, which this store does not have"))?;
        if cache.len() >= MAX_SEAL_KEYS {
            cache.clear();
        }
        let derived = Arc::new(SealKey::derive(id, key, tenant)?);
        cache.insert((id, tenant.to_owned()), Arc::clone(&derived));
        Ok(derived)
    }

    /// Seals `plain` for `scope` when the store seals; otherwise returns it.
    pub fn seal(&self, scope: &Scope, binding: &Binding, plain: Vec<u8>) -> Result<Vec<u8>, String> {
        if !self.settings.seal {
            return Ok(plain);
        }
        self.seal_key(self.current_key(), &scope.tenant)?.seal(binding, &plain)
    }

    /// The plain form of stored bytes: sealed ones opened, others as they are.
    pub fn open<'a>(&self, scope: &Scope, binding: &Binding, stored: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
        match stored.first() {
            Some(&codec::SEALED) => {
                let id = seal::key_id(stored).ok_or("sealed content is truncated")?;
                self.seal_key(id, &scope.tenant)?.open(binding, stored).map(Cow::Owned)
            }
            _ => Ok(Cow::Borrowed(stored)),
        }
    }
}

/// The MAC key derived from a store key (keys are never used for two purposes).
fn mac_key(master: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    // HKDF-SHA256 expands 32 bytes from any key: this cannot fail.
    let _ = hkdf::Hkdf::<sha2::Sha256>::new(Some(b"stowage"), master).expand(b"stowage mac v1", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    fn protector(settings: Integrity) -> Result<Protector, String> {
        Ok(Protector::new(settings, Keyring::generate()?))
    }

    #[test]
    fn untagged_records_follow_the_policy() -> Result<(), String> {
        let binding = Binding::new("x");
        let refuse = protector(Integrity::default())?;
        assert!(matches!(refuse.verify(&[], &binding, b"p", true), Verdict::Refused(r) if r.contains("untagged")));
        assert_eq!(refuse.verify(&[], &binding, b"p", false), Verdict::Untagged, "0.1.0 adapters cannot keep tags");
        let accept = protector(Integrity { untagged: Untagged::Accept, ..Integrity::default() })?;
        assert_eq!(accept.verify(&[], &binding, b"p", true), Verdict::Untagged);
        Ok(())
    }

    #[test]
    fn rotated_keys_still_verify_old_tags() -> Result<(), String> {
        let mut keys = Keyring::generate()?;
        let before = Protector::new(Integrity::default(), keys.clone());
        let binding = bindings::message(&Scope::new("t", "u"), "c", 1, "m", Role::User, 5);
        let old = before.tag(&binding, b"content");
        keys.rotate()?;
        let after = Protector::new(Integrity::default(), keys);
        assert_eq!(after.verify(&old, &binding, b"content", true), Verdict::Verified);
        let new = after.tag(&binding, b"content");
        assert_ne!(new[..5], old[..5], "new tags name the new key");
        assert!(matches!(before.verify(&new, &binding, b"content", true), Verdict::Refused(r) if r.contains("key 2")));
        Ok(())
    }

    #[test]
    fn a_key_rotated_elsewhere_is_reloaded_and_a_shrunken_ring_is_not() -> Result<(), String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let keys = Keyring::generate()?;
        let mut rotated = keys.clone();
        rotated.rotate()?;
        let writer = Protector::new(Integrity::default(), rotated.clone());
        let reloads = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&reloads);
        let mut reader = Protector::new(Integrity::default(), keys)
            .with_reload(Box::new(move || Ok(counted.fetch_add(1, Ordering::SeqCst)).map(|_| rotated.clone())));
        reader.reload_interval = Duration::from_secs(3600);
        let binding = bindings::meta(&Scope::new("t", "u"), "c", 1);
        let tag = writer.tag(&binding, b"x");
        assert_eq!(reader.verify(&tag, &binding, b"x", true), Verdict::Verified);
        assert_eq!((reader.current_key(), reloads.load(Ordering::SeqCst)), (2, 1));
        let mut forged = tag.clone();
        forged[1..5].copy_from_slice(&9u32.to_be_bytes());
        for _ in 0..3 {
            assert!(matches!(reader.verify(&forged, &binding, b"x", true), Verdict::Refused(r) if r.contains("key 9")));
        }
        assert_eq!(reloads.load(Ordering::SeqCst), 1, "unknown keys reload at most once per interval");

        let other = Keyring::generate()?;
        let stubborn = Protector::new(Integrity::default(), Keyring::generate()?).with_reload(Box::new(move || {
            let mut ring = other.clone();
            ring.rotate()?;
            Ok(ring)
        }));
        let first = stubborn.tag(&binding, b"x");
        assert!(matches!(stubborn.verify(&tag, &binding, b"x", true), Verdict::Refused(_)));
        assert_eq!(stubborn.verify(&first, &binding, b"x", true), Verdict::Verified, "own keys kept");
        Ok(())
    }

    /// Threads that need a key rotated elsewhere at the same time all find it:
    /// the ones that arrive during the reload wait for it.
    #[test]
    fn concurrent_checks_needing_a_rotated_key_all_see_it() -> Result<(), String> {
        let keys = Keyring::generate()?;
        let mut rotated = keys.clone();
        rotated.rotate()?;
        let writer = Protector::new(Integrity::default(), rotated.clone());
        let reader = Protector::new(Integrity::default(), keys).with_reload(Box::new(move || {
            std::thread::sleep(Duration::from_millis(50));
            Ok(rotated.clone())
        }));
        let binding = bindings::meta(&Scope::new("t", "u"), "c", 1);
        let tag = writer.tag(&binding, b"x");
        let verdicts: Vec<Verdict> = std::thread::scope(|s| {
            let checks: Vec<_> = (0..4).map(|_| s.spawn(|| reader.verify(&tag, &binding, b"x", true))).collect();
            checks.into_iter().map(|check| check.join().unwrap_or(Verdict::Refused("panicked".into()))).collect()
        });
        assert!(verdicts.iter().all(|v| *v == Verdict::Verified), "{verdicts:?}");
        Ok(())
    }

    #[test]
    fn sealing_round_trips_and_plain_passes_through() -> Result<(), String> {
        let sealing = protector(Integrity { seal: true, ..Integrity::default() })?;
        let scope = Scope::new("t", "u");
        let binding = bindings::message_seal(&scope, "c", "m");
        let sealed = sealing.seal(&scope, &binding, b"\x01{}".to_vec())?;
        assert_eq!(sealed[0], codec::SEALED);
        assert_eq!(*sealing.open(&scope, &binding, &sealed)?, *b"\x01{}");
        assert_eq!(*sealing.open(&scope, &binding, b"\x01{}")?, *b"\x01{}", "plain records still read");
        Ok(())
    }
}

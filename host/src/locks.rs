//! One writer per conversation within a process, conversations in parallel.
//!
//! Locks are created on demand and forgotten when no one holds or waits for
//! them. Forgotten entries are swept when the map has doubled since the last
//! sweep, so the cost stays amortised O(1) per lock however many conversations
//! are live.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::model::Scope;
use crate::util::scoped::ScopedMap;

const MIN_SWEEP: usize = 1024;

struct Map {
    locks: ScopedMap<Scope, Weak<AsyncMutex<()>>>,
    /// Sweep again once the map holds this many entries.
    sweep_at: usize,
}

impl Default for Map {
    fn default() -> Self {
        Self { locks: ScopedMap::default(), sweep_at: MIN_SWEEP }
    }
}

/// Async locks keyed by (scope, conversation id).
#[derive(Default)]
pub struct ConversationLocks {
    map: Mutex<Map>,
}

impl ConversationLocks {
    pub async fn lock(&self, scope: &Scope, conversation_id: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut map = match self.map.lock() {
                Ok(map) => map,
                Err(poisoned) => poisoned.into_inner(),
            };
            match map.locks.get(scope, conversation_id).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    if map.locks.len() >= map.sweep_at {
                        map.locks.retain(|weak| weak.strong_count() > 0);
                        map.sweep_at = (map.locks.len() * 2).max(MIN_SWEEP);
                    }
                    let lock = Arc::new(AsyncMutex::new(()));
                    map.locks.insert(scope, conversation_id, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// Entries in the map (live or not yet swept).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.locks.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn forgotten_locks_are_swept_and_the_map_stays_bounded() {
        let locks = ConversationLocks::default();
        let held = locks.lock(&Scope::default(), "held").await;
        for i in 0..10_000 {
            drop(locks.lock(&Scope::default(), &format!("c{i}")).await);
        }
        assert!(locks.len() <= 2 * MIN_SWEEP + 1, "{} entries", locks.len());
        // A held lock survives every sweep and still excludes.
        let scope = Scope::default();
        let again = tokio::time::timeout(std::time::Duration::from_millis(20), locks.lock(&scope, "held"));
        assert!(again.await.is_err(), "a held lock must still be held");
        drop(held);
    }
}

//! One writer per conversation, conversations in parallel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::model::Scope;

type Key = (Scope, String);

/// Async locks keyed by (scope, conversation id), created on demand and dropped
/// when no one holds or waits for them.
#[derive(Default)]
pub struct ConversationLocks {
    locks: Mutex<HashMap<Key, Weak<AsyncMutex<()>>>>,
}

impl ConversationLocks {
    pub async fn lock(&self, scope: &Scope, conversation_id: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = match self.locks.lock() {
                Ok(locks) => locks,
                Err(poisoned) => poisoned.into_inner(),
            };
            let key = (scope.clone(), conversation_id.to_owned());
            match locks.get(&key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    if locks.len() >= 1024 {
                        locks.retain(|_, weak| weak.strong_count() > 0);
                    }
                    let lock = Arc::new(AsyncMutex::new(()));
                    locks.insert(key, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }
}

//! The conversations' heads an instance saw last: the guesses of
//! [`crate::fast_append`], by (tenant, user, conversation id). Only a guess:
//! the database checks each one before it is used.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::batch::History;
use crate::exports::stowage::store::conversation_store::Scope;

/// At most this many conversations are remembered; past it the guesses start over.
const MAX_KNOWN: usize = 4096;

/// What this instance last saw of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    pub cid: i64,
    pub history: History,
}

type Key = (String, String, String);

/// The heads this instance last saw, by (tenant, user, conversation id).
pub struct Heads {
    known: Mutex<BTreeMap<Key, Known>>,
}

impl Heads {
    pub const fn new() -> Self {
        Heads { known: Mutex::new(BTreeMap::new()) }
    }

    fn key(scope: &Scope, conversation_id: &str) -> Key {
        (scope.tenant.clone(), scope.user.clone(), conversation_id.to_owned())
    }

    fn known(&self) -> std::sync::MutexGuard<'_, BTreeMap<Key, Known>> {
        // A panic cannot leave the map half-updated: every change is one call.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, scope: &Scope, conversation_id: &str) -> Option<Known> {
        self.known().get(&Self::key(scope, conversation_id)).copied()
    }

    pub fn set(&self, scope: &Scope, conversation_id: &str, known: Known) {
        let mut map = self.known();
        if map.len() >= MAX_KNOWN {
            map.clear();
        }
        map.insert(Self::key(scope, conversation_id), known);
    }

    pub fn forget(&self, scope: &Scope, conversation_id: &str) {
        self.known().remove(&Self::key(scope, conversation_id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope { tenant: "t".into(), user: "u".into() }
    }

    #[test]
    fn heads_are_kept_per_scope_and_forgotten() {
        let heads = Heads::new();
        let known = Known { cid: 3, history: History { version: 2, last_seq: 5 } };
        heads.set(&scope(), "c", known);
        assert_eq!(heads.get(&scope(), "c"), Some(known));
        assert_eq!(heads.get(&Scope { tenant: "t".into(), user: "v".into() }, "c"), None);
        heads.forget(&scope(), "c");
        assert_eq!(heads.get(&scope(), "c"), None);
    }

    #[test]
    fn past_the_cap_the_guesses_start_over() {
        let heads = Heads::new();
        let known = Known { cid: 1, history: History { version: 1, last_seq: 1 } };
        for i in 0..MAX_KNOWN {
            heads.set(&scope(), &i.to_string(), known);
        }
        heads.set(&scope(), "new", known);
        assert_eq!(heads.get(&scope(), "0"), None);
        assert_eq!(heads.get(&scope(), "new"), Some(known));
    }
}

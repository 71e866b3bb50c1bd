//! The conversations' heads (version and last seq) an instance last saw: from
//! its adapter's answers to `open`, `info` and `append`, and from the appends
//! the host ran from its plan. They are the guesses an append plan runs from,
//! nothing more: the plan's first statement checks the guess in the database,
//! and a wrong one stores nothing.
//!
//! Looked up without allocating ([`ScopedMap`]): an append looks up its
//! conversation's head on every call.

use crate::model::Scope;
use crate::util::scoped::ScopedMap;

/// At most this many conversations are remembered; past it the guesses start over.
pub const MAX_KNOWN: usize = 4096;

/// A conversation's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub version: u64,
    pub last_seq: u64,
}

/// The heads one instance last saw.
#[derive(Default)]
pub struct Heads {
    known: ScopedMap<Scope, Head>,
}

impl Heads {
    pub fn get(&self, scope: &Scope, id: &str) -> Option<Head> {
        self.known.get(scope, id).copied()
    }

    pub fn set(&mut self, scope: &Scope, id: &str, head: Head) {
        if let Some(known) = self.known.get_mut(scope, id) {
            *known = head;
            return;
        }
        if self.known.len() >= MAX_KNOWN {
            self.known.clear();
        }
        self.known.insert(scope, id, head);
    }

    pub fn forget(&mut self, scope: &Scope, id: &str) {
        self.known.remove(scope, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: Head = Head { version: 2, last_seq: 5 };

    #[test]
    fn heads_are_kept_per_scope_and_forgotten() {
        let (a, b) = (Scope::new("t", "u"), Scope::new("t", "v"));
        let mut heads = Heads::default();
        heads.set(&a, "c", HEAD);
        assert_eq!(heads.get(&a, "c"), Some(HEAD));
        assert_eq!(heads.get(&b, "c"), None, "another scope's conversation of the same id");
        heads.set(&b, "c", Head { version: 7, last_seq: 1 });
        heads.set(&a, "c", Head { version: 3, last_seq: 6 });
        assert_eq!(heads.get(&a, "c"), Some(Head { version: 3, last_seq: 6 }));
        assert_eq!(heads.get(&b, "c"), Some(Head { version: 7, last_seq: 1 }));
        heads.forget(&a, "c");
        assert_eq!(heads.get(&a, "c"), None);
        assert_eq!(heads.get(&b, "c"), Some(Head { version: 7, last_seq: 1 }));
        heads.forget(&b, "c");
        heads.forget(&b, "c");
        assert_eq!(heads.known.len(), 0);
    }

    #[test]
    fn past_the_cap_the_guesses_start_over() {
        let scope = Scope::new("t", "u");
        let mut heads = Heads::default();
        for i in 0..MAX_KNOWN {
            heads.set(&scope, &i.to_string(), HEAD);
        }
        heads.set(&scope, "0", HEAD);
        assert_eq!(heads.get(&scope, "0"), Some(HEAD), "an update is not a new entry");
        heads.set(&scope, "new", HEAD);
        assert_eq!(heads.get(&scope, "0"), None);
        assert_eq!(heads.get(&scope, "new"), Some(HEAD));
        assert_eq!(heads.known.len(), 1);
    }
}

//! The conversations' heads (version and last seq) an instance last saw: from
//! its adapter's answers to `open`, `info` and `append`, and from the appends
//! the host ran from its plan. They are the guesses an append plan runs from,
//! nothing more: the plan's first statement checks the guess in the database,
//! and a wrong one stores nothing.
//!
//! Looked up by conversation id without allocating (the scope is compared
//! afterwards): an append looks up its conversation's head on every call.

use std::collections::HashMap;

use crate::model::Scope;

/// At most this many conversations are remembered; past it the guesses start over.
pub const MAX_KNOWN: usize = 4096;

/// A conversation's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub version: u64,
    pub last_seq: u64,
}

/// The heads one instance last saw, by conversation id, then scope.
#[derive(Default)]
pub struct Heads {
    by_id: HashMap<String, Vec<(Scope, Head)>>,
    len: usize,
}

impl Heads {
    pub fn get(&self, scope: &Scope, id: &str) -> Option<Head> {
        self.by_id.get(id)?.iter().find(|(s, _)| s == scope).map(|(_, head)| *head)
    }

    pub fn set(&mut self, scope: &Scope, id: &str, head: Head) {
        if let Some(entry) = self.by_id.get_mut(id).and_then(|known| known.iter_mut().find(|(s, _)| s == scope)) {
            entry.1 = head;
            return;
        }
        if self.len >= MAX_KNOWN {
            self.by_id.clear();
            self.len = 0;
        }
        self.by_id.entry(id.to_owned()).or_default().push((scope.clone(), head));
        self.len += 1;
    }

    pub fn forget(&mut self, scope: &Scope, id: &str) {
        let Some(known) = self.by_id.get_mut(id) else { return };
        let before = known.len();
        known.retain(|(s, _)| s != scope);
        self.len -= before - known.len();
        if known.is_empty() {
            self.by_id.remove(id);
        }
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
        assert_eq!(heads.len, 0);
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
        assert_eq!(heads.len, 1);
    }
}

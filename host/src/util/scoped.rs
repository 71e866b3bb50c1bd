//! A map keyed by (scope, conversation id) that looks a key up without
//! allocating: by id first (a `String` key borrowed as `&str`), then among the
//! few scopes that use that id. The host looks up a conversation's lock, its
//! numbering and its append plan's head on every call; a map keyed by an owned
//! `(scope, String)` made a copy of every part of the key for each look-up.

use std::collections::HashMap;

#[derive(Debug)]
pub struct ScopedMap<S, V> {
    by_id: HashMap<String, Vec<(S, V)>>,
    len: usize,
}

impl<S, V> Default for ScopedMap<S, V> {
    fn default() -> Self {
        Self { by_id: HashMap::new(), len: 0 }
    }
}

impl<S: PartialEq + Clone, V> ScopedMap<S, V> {
    pub fn get(&self, scope: &S, id: &str) -> Option<&V> {
        self.by_id.get(id)?.iter().find(|(s, _)| s == scope).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, scope: &S, id: &str) -> Option<&mut V> {
        self.by_id.get_mut(id)?.iter_mut().find(|(s, _)| s == scope).map(|(_, v)| v)
    }

    /// Sets the value of (scope, id), in place when it has one.
    pub fn insert(&mut self, scope: &S, id: &str, value: V) {
        if let Some(slot) = self.get_mut(scope, id) {
            *slot = value;
            return;
        }
        self.by_id.entry(id.to_owned()).or_default().push((scope.clone(), value));
        self.len += 1;
    }

    pub fn remove(&mut self, scope: &S, id: &str) -> Option<V> {
        let entries = self.by_id.get_mut(id)?;
        let i = entries.iter().position(|(s, _)| s == scope)?;
        let (_, value) = entries.swap_remove(i);
        if entries.is_empty() {
            self.by_id.remove(id);
        }
        self.len -= 1;
        Some(value)
    }

    /// Keeps the entries `keep` says to.
    pub fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        self.by_id.retain(|_, entries| {
            entries.retain(|(_, v)| keep(v));
            !entries.is_empty()
        });
        self.len = self.by_id.values().map(Vec::len).sum();
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn clear(&mut self) {
        self.by_id.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_scope_and_id_together() {
        let mut map = ScopedMap::default();
        map.insert(&"a", "c", 1);
        map.insert(&"b", "c", 2);
        map.insert(&"a", "d", 3);
        assert_eq!((map.get(&"a", "c"), map.get(&"b", "c"), map.get(&"b", "d")), (Some(&1), Some(&2), None));
        map.insert(&"a", "c", 4);
        assert_eq!((map.get(&"a", "c"), map.len()), (Some(&4), 3), "set in place");
        if let Some(v) = map.get_mut(&"b", "c") {
            *v += 10;
        }
        assert_eq!(map.remove(&"b", "c"), Some(12));
        assert_eq!((map.remove(&"b", "c"), map.len()), (None, 2));
        map.retain(|&v| v > 3);
        assert_eq!((map.get(&"a", "c"), map.get(&"a", "d"), map.len()), (Some(&4), None, 1));
        map.clear();
        assert!(map.len() == 0 && map.get(&"a", "c").is_none());
    }
}

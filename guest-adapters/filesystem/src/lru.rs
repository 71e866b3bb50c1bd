//! A small bounded cache of per-conversation indexes, least recently used out.
//!
//! Bounded twice: by the number of entries and by the sum of their estimated
//! sizes, so memory stays flat however many conversations an instance serves.
//! An entry that alone exceeds the size budget is not kept at all (its
//! conversation is replayed on every call instead, correct but slower).
//! Callers `take` an entry out for the length of a call and `put` it back only
//! when it is known to match the file, so a failed call never leaves a stale
//! index behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How much memory an entry holds, roughly, in bytes.
pub trait Weigh {
    fn weight(&self) -> usize;
}

/// The bounds of one cache.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_entries: usize,
    pub max_bytes: usize,
}

pub struct Lru<V> {
    limits: Limits,
    entries: HashMap<PathBuf, (V, u64)>,
    clock: u64,
    bytes: usize,
}

impl<V: Weigh> Lru<V> {
    pub fn new(limits: Limits) -> Self {
        Self { limits, entries: HashMap::new(), clock: 0, bytes: 0 }
    }

    /// Removes and returns the entry for `key`.
    pub fn take(&mut self, key: &Path) -> Option<V> {
        let (value, _) = self.entries.remove(key)?;
        self.bytes = self.bytes.saturating_sub(value.weight());
        Some(value)
    }

    /// Stores `value` as the most recently used entry, evicting the least
    /// recently used ones until both bounds hold.
    pub fn put(&mut self, key: PathBuf, value: V) {
        self.take(&key);
        let weight = value.weight();
        if weight > self.limits.max_bytes || self.limits.max_entries == 0 {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= self.limits.max_entries || self.bytes + weight > self.limits.max_bytes)
        {
            self.evict_oldest();
        }
        self.clock += 1;
        self.bytes += weight;
        self.entries.insert(key, (value, self.clock));
    }

    fn evict_oldest(&mut self) {
        let oldest = self.entries.iter().min_by_key(|(_, (_, used))| *used).map(|(key, _)| key.clone());
        if let Some(key) = oldest {
            self.take(&key);
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sized(usize);
    impl Weigh for Sized {
        fn weight(&self) -> usize {
            self.0
        }
    }

    fn key(i: usize) -> PathBuf {
        PathBuf::from(format!("/c{i}"))
    }

    #[test]
    fn bounds_hold_and_the_least_recently_used_goes_first() {
        let mut lru = Lru::new(Limits { max_entries: 3, max_bytes: 100 });
        for i in 0..3 {
            lru.put(key(i), Sized(10));
        }
        // Touch 0 so that 1 is the oldest.
        let v = lru.take(&key(0));
        assert!(v.is_some());
        lru.put(key(0), Sized(10));
        lru.put(key(3), Sized(10));
        assert_eq!(lru.len(), 3);
        assert!(lru.take(&key(1)).is_none());
        lru.put(key(4), Sized(95));
        assert_eq!(lru.len(), 1);
        assert_eq!(lru.bytes(), 95);
        lru.put(key(5), Sized(101));
        assert!(lru.take(&key(5)).is_none(), "an entry over budget is not kept");
        assert_eq!(lru.bytes(), 95);
    }
}

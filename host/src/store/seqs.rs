//! What the host last saw of each conversation's numbering: the last message seq
//! and the last display seq. The host numbers appends from it, and an entry also
//! means "this conversation was verified to belong to this scope" (it is only
//! filled from verified answers), so writes need no ownership check while it is
//! warm. Bounded: when full it is emptied, and the next write reads `info` again.
//! Wrong entries (another host wrote) are corrected by the adapter's
//! `out-of-sequence` answer.

use std::sync::Mutex;

use crate::model::Scope;
use crate::util::scoped::ScopedMap;

const CAPACITY: usize = 16_384;

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    last_seq: Option<u64>,
    last_display: Option<u64>,
}

#[derive(Default)]
pub struct SeqCache {
    map: Mutex<ScopedMap<Scope, Entry>>,
}

impl SeqCache {
    fn with<T>(&self, f: impl FnOnce(&mut ScopedMap<Scope, Entry>) -> T) -> T {
        let mut map = match self.map.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut map)
    }

    fn update(&self, scope: &Scope, id: &str, f: impl FnOnce(&mut Entry)) {
        self.with(|map| {
            if let Some(entry) = map.get_mut(scope, id) {
                f(entry);
                return;
            }
            if map.len() >= CAPACITY {
                map.clear();
            }
            let mut entry = Entry::default();
            f(&mut entry);
            map.insert(scope, id, entry);
        });
    }

    pub fn last_seq(&self, scope: &Scope, id: &str) -> Option<u64> {
        self.with(|map| map.get(scope, id).and_then(|e| e.last_seq))
    }

    pub fn set_last_seq(&self, scope: &Scope, id: &str, last: u64) {
        self.update(scope, id, |e| e.last_seq = Some(last));
    }

    pub fn last_display(&self, scope: &Scope, id: &str) -> Option<u64> {
        self.with(|map| map.get(scope, id).and_then(|e| e.last_display))
    }

    pub fn set_last_display(&self, scope: &Scope, id: &str, last: u64) {
        self.update(scope, id, |e| e.last_display = Some(last));
    }

    pub fn forget(&self, scope: &Scope, id: &str) {
        self.with(|map| map.remove(scope, id));
    }

    pub fn clear(&self) {
        self.with(ScopedMap::clear);
    }
}

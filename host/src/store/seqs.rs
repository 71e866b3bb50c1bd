//! What the host last saw of each conversation's numbering: the last message seq
//! and the last display seq. The host numbers appends from it, and an entry also
//! means "this conversation was verified to belong to this scope" (it is only
//! filled from verified answers), so writes need no ownership check while it is
//! warm. Bounded: when full it is emptied, and the next write reads `info` again.
//! Wrong entries (another host wrote) are corrected by the adapter's
//! `out-of-sequence` answer.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::model::Scope;

const CAPACITY: usize = 16_384;

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    last_seq: Option<u64>,
    last_display: Option<u64>,
}

#[derive(Default)]
pub struct SeqCache {
    map: Mutex<HashMap<(Scope, String), Entry>>,
}

impl SeqCache {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<(Scope, String), Entry>) -> T) -> T {
        let mut map = match self.map.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut map)
    }

    fn update(&self, scope: &Scope, id: &str, f: impl FnOnce(&mut Entry)) {
        self.with(|map| {
            if map.len() >= CAPACITY && !map.contains_key(&(scope.clone(), id.to_owned())) {
                map.clear();
            }
            f(map.entry((scope.clone(), id.to_owned())).or_default());
        });
    }

    pub fn last_seq(&self, scope: &Scope, id: &str) -> Option<u64> {
        self.with(|map| map.get(&(scope.clone(), id.to_owned())).and_then(|e| e.last_seq))
    }

    pub fn set_last_seq(&self, scope: &Scope, id: &str, last: u64) {
        self.update(scope, id, |e| e.last_seq = Some(last));
    }

    pub fn last_display(&self, scope: &Scope, id: &str) -> Option<u64> {
        self.with(|map| map.get(&(scope.clone(), id.to_owned())).and_then(|e| e.last_display))
    }

    pub fn set_last_display(&self, scope: &Scope, id: &str, last: u64) {
        self.update(scope, id, |e| e.last_display = Some(last));
    }

    pub fn forget(&self, scope: &Scope, id: &str) {
        self.with(|map| map.remove(&(scope.clone(), id.to_owned())));
    }

    pub fn clear(&self) {
        self.with(HashMap::clear);
    }
}

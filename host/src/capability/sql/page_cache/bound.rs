//! Which page numbers a cache may hold, so a truncation that would drop nothing
//! is not passed on (the cache logic, testable without SQLite).

use std::cell::Cell;

/// No page parked (page numbers start at 1).
const NONE: u32 = 0;

/// An upper bound of the page numbers a cache holds: `high`, the highest key a
/// page was fetched or moved to, except the one key a page was last moved to
/// above it (`parked`), which counts only while a page sits there.
///
/// SQLite's b-tree sorts the pages a balance made by swapping them through a
/// temporary key (the locking page, 1 GiB into the file); the page moves on at
/// once, but the default cache keeps the key as its highest, so the truncation
/// at the end of the transaction walks its whole hash table for pages that are
/// not there. Here the key is forgotten once its page leaves it.
///
/// A cache belongs to one connection, which SQLite runs one call at a time, so
/// the bound is plain cells: a fetch of a page costs a compare, not an atomic.
#[derive(Debug, Default)]
pub struct Bound {
    high: Cell<u32>,
    parked: Cell<u32>,
}

impl Bound {
    /// A page was fetched (found or created) at `key`.
    pub fn fetched(&self, key: u32) {
        if key > self.high.get() && key != self.parked.get() {
            self.high.set(key);
        }
    }

    /// A page moved from `old` to `new`.
    pub fn moved(&self, old: u32, new: u32) {
        if old == self.parked.get() {
            self.parked.set(NONE);
        }
        if new > self.high.get() {
            // Only one key is parked at a time: an earlier one still held joins `high`.
            let earlier = self.parked.replace(new);
            self.high.set(self.high.get().max(earlier));
        }
    }

    /// Whether dropping every page at `limit` and above could drop one. If so,
    /// the caller truncates, and the bound falls to below `limit`.
    pub fn truncate(&self, limit: u32) -> bool {
        let (high, parked) = (self.high.get(), self.parked.get());
        if limit > high.max(parked) {
            return false;
        }
        self.high.set(high.min(limit.saturating_sub(1)));
        if parked >= limit {
            self.parked.set(NONE);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Bound;

    const LOCKING_PAGE: u32 = 262_145;

    #[test]
    fn a_truncation_past_every_page_fetched_is_skipped() {
        let bound = Bound::default();
        assert!(!bound.truncate(1), "an empty cache has nothing to drop");
        for key in [1, 7, 3] {
            bound.fetched(key);
        }
        assert!(!bound.truncate(8));
        assert!(bound.truncate(7), "page 7 is held");
        assert!(!bound.truncate(7), "and gone after the truncation");
        assert!(bound.truncate(1), "a clear drops what is below");
        assert!(!bound.truncate(1));
    }

    #[test]
    fn a_swap_through_the_locking_page_leaves_no_bound_behind() {
        let bound = Bound::default();
        for key in 1..=20 {
            bound.fetched(key);
        }
        // balance_nonroot's swap of pages 20 and 12: 20 -> temp, 12 -> 20, temp -> 12.
        bound.moved(20, LOCKING_PAGE);
        assert!(bound.truncate(LOCKING_PAGE), "a page sits at the temporary key");
        for key in 1..=20 {
            bound.fetched(key);
        }
        bound.moved(20, LOCKING_PAGE);
        bound.moved(12, 20);
        bound.moved(LOCKING_PAGE, 12);
        assert!(!bound.truncate(21), "the temporary key is empty again");
        assert!(bound.truncate(20));
    }

    #[test]
    fn a_page_moved_past_the_bound_and_left_there_counts() {
        let bound = Bound::default();
        bound.fetched(5);
        bound.moved(5, 40);
        assert!(bound.truncate(30), "page 40 is held");
        bound.fetched(5);
        bound.moved(5, 40);
        bound.moved(4, 50);
        bound.moved(50, 3);
        assert!(!bound.truncate(41), "page 50 moved on");
        assert!(bound.truncate(40), "page 40 joined the bound when page 50 parked");
    }

    #[test]
    fn a_fetch_of_the_parked_key_keeps_it_parked() {
        let bound = Bound::default();
        bound.fetched(3);
        bound.moved(3, 100);
        bound.fetched(100);
        bound.moved(100, 2);
        assert!(!bound.truncate(4));
        assert!(bound.truncate(3), "page 2 is held");
    }
}

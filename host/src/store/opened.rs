//! The stores a runtime has opened, for [`crate::Runtime::close`]. Held weakly:
//! a store whose every handle is dropped is not kept open by its runtime.

use std::sync::{Mutex, MutexGuard, PoisonError, Weak};

use super::{Inner, Store};

/// The stores opened from one runtime, and whether it is closed.
#[derive(Default)]
pub(crate) struct Opened {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    closed: bool,
    stores: Vec<Weak<Inner>>,
}

impl Opened {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn is_closed(&self) -> bool {
        self.state().closed
    }

    /// Keeps `store` for the runtime's close; `false`, keeping nothing, once
    /// the runtime is closed (the caller closes the store itself).
    pub fn keep(&self, store: &Store) -> bool {
        let mut state = self.state();
        if state.closed {
            return false;
        }
        state.stores.retain(|weak| weak.strong_count() > 0);
        state.stores.push(store.downgrade());
        true
    }

    /// Marks the runtime closed; the stores it opened that are still open.
    pub fn close(&self) -> Vec<Store> {
        let mut state = self.state();
        state.closed = true;
        std::mem::take(&mut state.stores).iter().filter_map(Store::upgrade).collect()
    }
}

//! What the host runs itself from the plans an adapter of the SQL capability
//! may export beside its contract: the SELECTs of its `load`
//! (`stowage:reads/load-plan`, [`load`]) and the INSERTs of its `append`
//! (`stowage:writes/append-plan`, [`append`]). Both run on the adapter's own SQL
//! session, in the call's place on the instance, under the same rules as the
//! adapter's own statements; neither trusts the adapter more than its answers
//! (records are checked on every read, whichever path stored or loaded them).

mod append;
mod load;
mod rows;

pub use self::append::{Appended, append};
pub use self::load::{Planned, load};

use crate::adapter::state::AdapterState;
use crate::capability::sql::Dialect;

/// Whether `store`'s session is on SQLite, the only dialect plans are asked
/// for: only SQLite reports whether a prepared statement writes (load plans),
/// and the shipped adapter's append plan is SQLite's alone.
fn on_sqlite(store: &wasmtime::Store<AdapterState>) -> bool {
    store.data().sql.database().is_some_and(|db| db.dialect() == Dialect::Sqlite)
}

#[cfg(test)]
mod append_tests;
#[cfg(test)]
mod load_tests;

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

#[cfg(test)]
mod append_tests;
#[cfg(test)]
mod load_tests;

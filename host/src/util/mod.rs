//! Small helpers every layer may use; they depend on nothing else in the crate.

pub mod blocking;
pub mod clock;
pub mod detach;
pub mod hex;
pub mod parallel;
pub mod place;
pub mod scoped;

//! Everything about running adapter components: bindings, loading, per-instance
//! state, the instance pool and value conversions.

pub mod bindings;
pub mod convert;
pub mod image;
pub mod pool;
pub mod state;

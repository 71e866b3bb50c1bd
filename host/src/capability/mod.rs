//! Capabilities the host lends adapters. Each is linked only when granted.

pub mod log;
pub mod sql;

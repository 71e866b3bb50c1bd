//! Running adapter components: the engine and its compiled-component cache,
//! loading (one frozen binding per contract version), instance pools under a
//! supervisor, the backend seam, and the checked client every answer goes through.
//!
//! Layering inside: `loader` → `pool` (over its `backlog` of queued calls) /
//! `supervisor` → `wasm` (a backend) → `client` (checks, over any backend).

pub mod backend;
mod backlog;
pub mod cache;
pub mod client;
pub mod engine;
mod engine_settings;
pub mod loader;
pub mod pool;
pub mod raw;
pub mod starting;
pub mod state;
pub mod supervisor;
pub mod wasm;

//! The Stowage benchmark: the pinned workload of `shared/bench/WORKLOAD.md` replayed on
//! any store behind the [`runner::StoreRunner`] seam, next to a native rusqlite baseline,
//! with the workload's exact statistics, a JSON result model, a Markdown table and SVG plots.
//!
//! - [`workload`]: the generator (splitmix64 per message, 64 words, four shapes, digests).
//! - [`stats`]: median, nearest-rank p99, throughput.
//! - [`runner`]: the async seam a store implements; [`native`]: the baseline's implementation;
//!   [`native_pg`]: the tokio-postgres baseline on the server of [`pg`] (opt-in rows).
//! - [`phases`]: A, C, B, D and E (concurrent agents), timing exactly one call each.
//! - [`walwatch`]: attributes SQLite WAL checkpoints to calls, from the files.
//! - [`report`]: per-run results, medians over runs, ratios against native, the table.
//! - [`suite`]: runs rows in fresh processes, round-robin with the order rotated per run.
//! - [`machine`]: the tmpfs rule, bytes on disk, the machine's description.
//! - [`stowage_store`]: the Stowage rows (`stowage::Store` behind the seam);
//!   [`rows`]: row ids and measuring one row; [`probes`]: cold start, RSS, per-call cost.

pub mod error;
pub mod machine;
pub mod native;
pub mod native_pg;
pub mod pg;
pub mod phases;
pub mod probes;
pub mod report;
pub mod rows;
pub mod runner;
pub mod stats;
pub mod stowage_store;
pub mod suite;
pub mod walwatch;
pub mod workload;

pub use error::{BenchError, Result};

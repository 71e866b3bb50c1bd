//! Typed errors of the public API.
//!
//! Lower layers keep their own error types (`capability::sql::SqlFailure` at the
//! SQL boundary, [`LoadError`] for loading); everything a [`Store`](crate::Store)
//! call can return is an [`Error`].

use std::path::PathBuf;
use std::time::Duration;

use crate::model::ToolStatus;

/// Everything a [`Store`](crate::Store) call can fail with.
///
/// The first group mirrors the WIT `error` variant (what an adapter reports); the
/// second is what the host adds when an adapter misbehaves or cannot be loaded.
/// After any error, nothing of the failed call is visible.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The conversation (or record) does not exist in this scope. A normal outcome.
    #[error("not found")]
    NotFound,
    /// Another writer changed the conversation since `expected` was read.
    #[error("version conflict: expected version {expected}, the conversation is at {actual}")]
    Conflict { expected: u64, actual: u64 },
    /// The input breaks a rule; the message says which. Nothing was stored.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A paging cursor was malformed, tampered with, or belongs to another listing.
    #[error("invalid cursor")]
    InvalidCursor,
    /// The adapter does not implement this operation.
    #[error("not supported by this adapter: {0}")]
    Unsupported(String),
    /// The adapter's storage failed or holds undecodable data.
    #[error("storage error: {0}")]
    Storage(String),
    /// A tool-call card cannot move from `from` to `to`.
    #[error("invalid tool status transition from {from} to {to}")]
    InvalidTransition { from: ToolStatus, to: ToolStatus },
    /// The adapter refused the operation.
    #[error("access denied: {0}")]
    AccessDenied(String),

    /// A record the adapter returned failed verification: its integrity tag does
    /// not match, it belongs to another scope, conversation or position, or it has
    /// no tag where one is required. Names the record, never its content.
    #[error("integrity check failed in store `{store}`, conversation `{conversation}`, {record}: {reason}")]
    Integrity { store: String, conversation: String, record: String, reason: String },
    /// The adapter ran past its per-call deadline; its instance was discarded.
    #[error("adapter of store `{store}` exceeded its {deadline:?} deadline; the instance was discarded")]
    Timeout { store: String, deadline: Duration },
    /// The adapter tried to grow its memory past the store's cap; its instance was discarded.
    #[error("adapter of store `{store}` exceeded its memory limit of {limit} bytes; the instance was discarded")]
    MemoryLimit { store: String, limit: u64 },
    /// The adapter trapped (panicked, hit `unreachable`, …); its instance was discarded.
    #[error("adapter of store `{store}` trapped: {message}; the instance was discarded")]
    Trap { store: String, message: String },
    /// The adapter returned something the contract forbids (wrong order, another
    /// scope's data, …). The result was not passed on.
    #[error("adapter of store `{store}` broke the contract: {message}")]
    ContractViolation { store: String, message: String },
    /// The adapter failed too often in a row (its restart budget is spent); calls
    /// are refused until a cool-down passes or the adapter is swapped.
    #[error("store `{store}` is unhealthy; last adapter error: {last_error}")]
    Unhealthy { store: String, last_error: String },
    /// A hot swap's candidate adapter failed its checks; the old one keeps serving.
    #[error("swap of store `{store}` rejected, the previous adapter keeps serving: {reason}")]
    SwapRejected { store: String, reason: String },
    /// Too many calls are already waiting on this store.
    #[error("store `{store}` is overloaded: {message}")]
    Overloaded { store: String, message: String },

    /// The adapter could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The configuration is invalid.
    #[error("configuration error: {0}")]
    Config(String),
    /// The store was closed; no further calls are accepted.
    #[error("store `{store}` is closed")]
    Closed { store: String },
    /// A failure inside the host itself.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// True for `NotFound`, which callers usually treat as a normal answer.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound)
    }
}

/// Why an adapter component could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("cannot read adapter file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{what} is not a WebAssembly component: {reason}")]
    NotAComponent { what: String, reason: String },
    #[error(
        "{what} does not export `{export}`, which every Stowage adapter must export (this host implements \
         stowage:store@{supported})"
    )]
    MissingExport { what: String, export: String, supported: &'static str },
    #[error(
        "{what} imports `{import}`, which needs the `{capability}` capability; grant it in the store's configuration"
    )]
    CapabilityNotGranted { what: String, import: String, capability: &'static str },
    #[error("{what} imports `{import}`, which Stowage does not provide to adapters")]
    UnsupportedImport { what: String, import: String },
    #[error("{what} implements stowage:store@{version}, which cannot {needs}; use an adapter built for 0.2.0")]
    ContractTooOld { what: String, version: &'static str, needs: String },
    #[error("compiling {what} failed: {reason}")]
    Compile { what: String, reason: String },
    #[error("{what} cannot be linked: {reason}")]
    Link { what: String, reason: String },
    #[error("creating an instance of {what} failed: {reason}")]
    Instantiate { what: String, reason: String },
    #[error("the component cache at {path} is unusable: {reason}")]
    Cache { path: PathBuf, reason: String },
}

//! Host bindings generated from `wit/`, one frozen module per contract version
//! (as Zed's extension host does): a published version never changes, a new one
//! is added beside it, and adapters built for an old one keep loading.
//!
//! This is the bottom of the adapter stack: capability modules implement the
//! import traits generated here, and the adapter layer calls the exports.

pub mod reads;
pub mod v0_1;
pub mod v0_2;
pub mod writes;

/// The contract version of an adapter component, read from its exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContractVersion {
    /// `stowage:store@0.1.0`: structured records, adapter-assigned seqs, no tags.
    V0_1,
    /// `stowage:store@0.2.0`: opaque host-encoded records with integrity tags,
    /// host-assigned seqs, a paged sweep, the SQL `dialect`.
    V0_2,
}

impl ContractVersion {
    /// Newest first: loading picks the first version whose exports a component has.
    pub const ALL: [ContractVersion; 2] = [ContractVersion::V0_2, ContractVersion::V0_1];
    /// The version this host writes new adapters against.
    pub const LATEST: ContractVersion = ContractVersion::V0_2;

    /// `0.2.0`, …
    pub fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.0",
            ContractVersion::V0_2 => "0.2.0",
        }
    }

    /// The interfaces every adapter of this version must export.
    pub fn required_exports(self) -> [&'static str; 2] {
        match self {
            ContractVersion::V0_1 => v0_1::REQUIRED_EXPORTS,
            ContractVersion::V0_2 => v0_2::REQUIRED_EXPORTS,
        }
    }
}

/// What a host implementation of the `sql` import returns on failure: an error
/// the adapter sees (`Report`) or a trap that aborts the adapter's call.
#[derive(Debug)]
pub enum SqlFailure {
    Report(SqlErrorKind),
    /// Raised when the call's deadline passed during a statement (the
    /// statement was interrupted: the call times out as the epoch deadline
    /// would time it out), and by test fault injection.
    Trap(wasmtime::Error),
}

/// The contract's SQL error, independent of the contract version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SqlErrorKind {
    AccessDenied(String),
    Constraint(String),
    Busy,
    TooLarge(String),
    InvalidStatement(String),
    Transaction(String),
    Io(String),
}

impl From<SqlErrorKind> for SqlFailure {
    fn from(kind: SqlErrorKind) -> Self {
        SqlFailure::Report(kind)
    }
}

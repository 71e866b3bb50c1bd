//! The store-agnostic seam between the phases and a store under test.
//!
//! A [`StoreKind`] opens fresh stores (one per phase group, each in its own fresh
//! directory); a [`StoreRunner`] is one open store. The phases convert every message with
//! [`StoreRunner::prepare`] and build each call's argument list **before** starting the
//! timer, and the timed region is exactly one awaited call of `append`, `load_newest` or
//! `load_all`. Each of those must include the store's own serialisation, its commit (as
//! durable as the row's setting promises) and, for loads, decoding back to in-memory values.
//!
//! Implemented by the native rusqlite baseline ([`crate::native`]), the native
//! tokio-postgres baseline ([`crate::native_pg`]) and by Stowage ([`crate::stowage_store`]).

use std::future::Future;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::workload::Message;

/// The `sync` of the PostgreSQL rows: commits are as durable as the server's
/// `synchronous_commit`. Their ratios are taken against `native-pg` only.
pub const POSTGRES_SYNC: &str = "PG";

/// What a row of the table is: shown in reports, and used to pick the native row that
/// ratios are taken against (the native row of the same `sync`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowDescription {
    /// Stable id, e.g. `native-full`, `stowage-sqlite-full`.
    pub row: String,
    /// Display name, e.g. `native rusqlite`.
    pub label: String,
    /// Durability setting: `FULL` or `NORMAL` (SQLite's names), or what the store uses.
    pub sync: String,
    /// True for the native baselines the ratios are taken against.
    pub baseline: bool,
    /// What `append` takes (e.g. "serde_json::Value, serialised inside the call").
    pub input: String,
    /// What loads return (e.g. "serde_json::Value decoded with serde_json").
    pub output: String,
    /// Anything else a reader needs (pool sizes, pragmas, versions).
    pub notes: Vec<String>,
}

/// Why a store is opened: lets a kind size connection pools or instance counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenFor {
    /// Phases A + C, or phase B: one caller at a time.
    Sequential,
    /// Phase E: up to `agents` concurrent callers on different conversations.
    Concurrent { agents: usize },
}

/// A kind of store: opens fresh instances of it.
pub trait StoreKind: Send + Sync {
    type Runner: StoreRunner;

    /// The row this kind reports as.
    fn describe(&self) -> RowDescription;

    /// Opens a store whose files all live under `dir` (an empty directory). Untimed.
    fn open(&self, dir: &Path, purpose: OpenFor) -> impl Future<Output = Result<Self::Runner>> + Send;
}

/// One open store. Shared by concurrent agents in phase E (hence `Sync`).
pub trait StoreRunner: Send + Sync + 'static {
    /// A message as the store's append takes it, converted before the timer starts.
    type Input: Send + 'static;
    /// A message as the store's loads return it (decoded values).
    type Output: Send + 'static;

    /// Converts a generated message to the store's input type. Untimed.
    fn prepare(&self, message: &Message) -> Result<Self::Input>;

    /// Makes `conv` ready for appends (a session object, a conversation record). Untimed;
    /// a no-op for stores that create conversations on first append.
    fn open_conversation(&self, conv: &str) -> impl Future<Output = Result<()>> + Send;

    /// Appends `batch` to `conv` atomically; returns once it is as durable as the row's
    /// setting promises. Timed.
    fn append(&self, conv: &str, batch: Vec<Self::Input>) -> impl Future<Output = Result<()>> + Send;

    /// The newest `n` messages of `conv`, oldest first, decoded. Timed.
    fn load_newest(&self, conv: &str, n: usize) -> impl Future<Output = Result<Vec<Self::Output>>> + Send;

    /// Every message of `conv`, oldest first, decoded. Timed.
    fn load_all(&self, conv: &str) -> impl Future<Output = Result<Vec<Self::Output>>> + Send;

    /// The canonical JSON of a loaded message, for the untimed read-back checks: must equal
    /// the generated message's `canonical` byte for byte.
    fn canonical(&self, output: &Self::Output) -> Result<String>;

    /// False for a store that keeps nothing (Stowage's null adapter): the read-back
    /// checks are skipped, and the run says so.
    fn keeps_messages(&self) -> bool {
        true
    }

    /// Bytes the store keeps outside its directory (a database server's schema), for
    /// phase D; `None` for stores whose data all lives under the directory. Untimed.
    fn server_bytes(&self) -> impl Future<Output = Result<Option<u64>>> + Send {
        std::future::ready(Ok(None))
    }

    /// Closes every handle and waits for pending writes to be flushed. Untimed.
    fn close(self) -> impl Future<Output = Result<()>> + Send;
}

//! Stowage: persistence for AI-agent platforms, served by sandboxed WebAssembly
//! storage adapters.
//!
//! A [`Runtime`] owns one wasmtime engine. [`Runtime::open_store`] loads an adapter
//! component (a built-in one or any `.wasm` implementing `stowage:store@0.1.0`),
//! checks it against the contract and the capabilities the store grants, and
//! returns a [`Store`]: the async conversation-store API.
//!
//! ```no_run
//! # async fn demo() -> Result<(), stowage::Error> {
//! use stowage::{Builtin, ConversationMeta, LoadRequest, NewMessage, Role, Runtime, RuntimeConfig, Scope, StoreConfig};
//!
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let store = runtime.open_store(StoreConfig::builtin(Builtin::Sqlite, "./data")).await?;
//! let scope = Scope::new("acme", "alice");
//! store.open(&scope, "chat-1", ConversationMeta::default()).await?;
//! store.append(&scope, "chat-1", vec![NewMessage::text(Role::User, "hello")], None).await?;
//! let page = store.load(&scope, "chat-1", LoadRequest::latest(20)).await?;
//! # Ok(()) }
//! ```

mod adapter;
mod builtin;
mod cache;
mod capability;
mod config;
mod config_file;
mod cursor;
mod display;
mod engine;
mod error;
pub mod interchange;
mod locks;
mod model;
mod repair;
mod runtime;
mod store;
mod validate;

pub use builtin::{Builtin, GUEST_ARTIFACT_DIR};
#[doc(hidden)]
pub use capability::sql::SqlFault;
pub use config::{AdapterSource, Grants, Limits, RuntimeConfig, SqlSync, StoreConfig};
pub use config_file::{ConfigFile, DEFAULT_CONFIG_FILE, DEFAULT_DATA_DIR};
pub use display::model::{
    DisplayContext, DisplayEvent, DisplayPage, DisplayRecord, SweepReport, SyntheticMessage, ToolInfo, ToolStatus,
    ToolUpdate, content_type,
};
pub use display::{Display, DisplayOptions, MessageView};
pub use engine::Allocator;
pub use error::{Error, LoadError};
pub use model::{
    AppendOutcome, ConversationInfo, ConversationMeta, ConversationPage, JsonText, LoadFrom, LoadRequest, MediaSource,
    Message, NewMessage, Page, Part, Role, Scope, StopReason, Timestamp, TruncateOutcome, Usage,
};
pub use repair::{INTERRUPTED_RESULT, OrphanPolicy, OrphanedCall, RepairReport};
pub use runtime::{AdapterReport, ComponentDescription, Runtime, SQL_DATABASE_FILE};
pub use store::{Health, HealthStatus, Store, StoreStats, SwapReport};
pub use validate::{MAX_ID_BYTES, MAX_SCOPE_BYTES};

/// The contract version this host implements.
pub const CONTRACT_VERSION: &str = adapter::bindings::names::CONTRACT_VERSION;

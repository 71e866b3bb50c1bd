//! Stowage: persistence for AI-agent platforms, served by sandboxed WebAssembly
//! storage adapters.
//!
//! A [`Runtime`] owns one wasmtime engine. [`Runtime::open_store`] loads an adapter
//! component (a built-in one or any `.wasm` implementing `stowage:store@0.2.0` or
//! `@0.1.0`), checks it against the contract and the capabilities the store
//! grants, and returns a [`Store`]: the async conversation-store API. Everything
//! the adapter stores is encoded, tagged (and optionally sealed) by the host, and
//! every answer is checked and verified before a caller sees it.
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
//!
//! Layers, bottom up (no module imports one above it): `util`, `model` → `error`
//! → `wit` (bindings), `capability`, `config`, `layout`, `integrity` → `adapter`
//! (loader, pool, backend, checked client) → `store`, `display` → `runtime`;
//! `interchange` converts transcripts using `model` only.

mod adapter;
mod capability;
mod config;
mod cursor;
mod display;
mod error;
mod integrity;
pub mod interchange;
mod layout;
mod locks;
mod model;
mod repair;
mod runtime;
mod store;
mod util;
mod validate;
mod wit;

pub use adapter::engine::Allocator;
#[cfg(feature = "fault-injection")]
pub use capability::filesystem::power_loss::{CutReport, Metadata, PowerCut, PowerLoss, PowerLossError};
#[cfg(feature = "fault-injection")]
pub use capability::sql::SqlFault;
pub use capability::{Capability, Grants};
pub use config::{
    AdapterSource, Builtin, ConfigFile, DEFAULT_CONFIG_FILE, DEFAULT_DATA_DIR, GUEST_ARTIFACT_DIR, Integrity,
    Isolation, KeySource, Limits, RuntimeConfig, SqlSync, SqlTarget, StoreConfig, Untagged,
};
pub use display::{Display, DisplayOptions, MessageView};
pub use error::{Error, LoadError};
pub use integrity::source::Rotation;
pub use integrity::{KEY_FILE, Keyring};
pub use model::{
    AppendOutcome, ConversationInfo, ConversationMeta, ConversationPage, DisplayContext, DisplayEvent, DisplayPage,
    DisplayRecord, JsonText, LoadFrom, LoadRequest, MediaSource, Message, MetaPatch, NewMessage, OrphanPolicy,
    OrphanedCall, Page, Part, RepairReport, Role, Scope, StopReason, SweepReport, SyntheticMessage, Timestamp,
    ToolInfo, ToolStatus, ToolUpdate, TruncateOutcome, Usage, content_type,
};
pub use repair::INTERRUPTED_RESULT;
pub use runtime::{AdapterReport, ComponentDescription, Runtime, rotate_keys, sql_database_path};
pub use store::{Health, HealthStatus, Store, StoreStats, SwapReport};
pub use validate::{MAX_ID_BYTES, MAX_SCOPE_BYTES};

/// The newest contract version this host implements (it also loads 0.1.0 adapters).
pub const CONTRACT_VERSION: &str = "0.2.0";
/// The optional load-plan export (`stowage:reads@0.1.0`) this host runs: an
/// adapter exporting it has its loads' SELECTs run by the host.
pub const LOAD_PLAN_EXPORT: &str = wit::reads::LOAD_PLAN;
/// The optional append-plan export (`stowage:writes@0.1.0`) this host runs: an
/// adapter exporting it has the INSERTs of its appends run by the host.
pub const APPEND_PLAN_EXPORT: &str = wit::writes::APPEND_PLAN;

//! Shared helpers of the host test-suite. The conformance catalogue itself is the
//! `stowage-conformance` crate.

use std::path::PathBuf;

pub mod postgres;

pub use stowage_conformance::{
    Ctx, Outcome, Report, Subject, fresh_runtime, open_store, run_catalogue, shared_runtime,
};

/// A guest component built with this host (adapters and test fixtures).
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(stowage::GUEST_ARTIFACT_DIR).join(format!("stowage_adapter_{name}.wasm"))
}

/// Every message of a conversation, in order.
pub async fn all_messages(
    store: &stowage::Store,
    scope: &stowage::Scope,
    id: &str,
) -> anyhow::Result<Vec<stowage::Message>> {
    Ok(store.load_all(scope, id).await?)
}

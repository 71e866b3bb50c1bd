//! Health, counters and hot swap.
//!
//! A swap loads and type-checks the candidate against the contract and the
//! store's grants, instantiates it and smoke-tests it (read-only calls that must
//! be answered within the contract) before it takes a call; calls already running
//! finish on the old adapter. Swaps are serialised.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Serialize;

use super::Store;
use crate::adapter::client::Client;
use crate::adapter::loader;
use crate::config::AdapterSource;
use crate::error::Error;
use crate::model::Scope;
use crate::wit::ContractVersion;

/// Counters of a store's adapter, cumulative across swaps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    pub calls: u64,
    pub errors: u64,
    pub traps: u64,
    pub timeouts: u64,
    pub memory_limit_hits: u64,
    pub instantiations: u64,
    pub restarts: u64,
    /// Calls refused while the store was unhealthy.
    pub refused: u64,
    pub swaps: u64,
    /// Calls queued behind others whose writes were committed together, in one
    /// commit group (one SQLite commit and one flush for all of them).
    pub grouped_calls: u64,
    /// Loads the host answered by running the adapter's load plan
    /// (`stowage:reads/load-plan`) itself, without calling into the adapter.
    pub planned_loads: u64,
    /// Appends the host stored by running the adapter's append plan
    /// (`stowage:writes/append-plan`) itself, without calling into the adapter.
    pub planned_appends: u64,
}

/// How the store's adapter is doing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HealthStatus {
    Healthy,
    /// Recent calls failed (trap, timeout, memory cap); instances are being
    /// replaced with back-off.
    Degraded {
        consecutive_failures: u32,
        last_error: String,
    },
    /// The restart budget is spent: calls are refused for `retry_in_ms` (rounded
    /// up, so 0 means the next call goes through as the probe).
    Unhealthy {
        consecutive_failures: u32,
        last_error: String,
        retry_in_ms: u64,
    },
}

/// Health and counters of a store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Health {
    pub status: HealthStatus,
    /// SHA-256 of the adapter serving now.
    pub adapter_digest: String,
    /// The contract version it implements.
    pub contract_version: &'static str,
    pub stats: StoreStats,
}

/// What a hot swap did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwapReport {
    pub previous_digest: String,
    pub current_digest: String,
}

/// The scope of the swap smoke test: reads only, in a scope no caller uses.
const SMOKE_TENANT: &str = "\u{1f6a7}stowage-swap-smoke-test";

impl Store {
    /// SHA-256 of the adapter component this store runs.
    pub fn adapter_digest(&self) -> String {
        self.client().backend().image().digest.clone()
    }

    /// The interfaces the adapter imports.
    pub fn adapter_imports(&self) -> Vec<String> {
        self.client().backend().image().imports.clone()
    }

    /// The contract version the adapter implements.
    pub fn contract_version(&self) -> &'static str {
        self.client().backend().version().as_str()
    }

    pub fn stats(&self) -> StoreStats {
        let c = self.client().backend().counters();
        StoreStats {
            calls: c.calls.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            traps: c.traps.load(Ordering::Relaxed),
            timeouts: c.timeouts.load(Ordering::Relaxed),
            memory_limit_hits: c.memory_limit_hits.load(Ordering::Relaxed),
            instantiations: c.instantiations.load(Ordering::Relaxed),
            restarts: c.restarts.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            swaps: c.swaps.load(Ordering::Relaxed),
            grouped_calls: c.grouped.load(Ordering::Relaxed),
            planned_loads: c.planned_loads.load(Ordering::Relaxed),
            planned_appends: c.planned_appends.load(Ordering::Relaxed),
        }
    }

    /// Health (from the supervisor) and counters.
    pub fn health(&self) -> Health {
        let backend = self.client().backend();
        let snapshot = backend.health();
        let last_error = snapshot.last_error.unwrap_or_default();
        let status = match (snapshot.retry_in, snapshot.consecutive_failures) {
            (Some(retry_in), failures) => HealthStatus::Unhealthy {
                consecutive_failures: failures,
                last_error,
                // Rounded up: 0 only once the cool-down is over (truncating said
                // 0 for up to a millisecond in which calls were still refused).
                retry_in_ms: u64::try_from(retry_in.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX),
            },
            (None, 0) => HealthStatus::Healthy,
            (None, failures) => HealthStatus::Degraded { consecutive_failures: failures, last_error },
        };
        let image = backend.image();
        Health {
            status,
            adapter_digest: image.digest.clone(),
            contract_version: image.version.as_str(),
            stats: self.stats(),
        }
    }

    /// Replaces the store's adapter while it serves. The candidate is loaded,
    /// type-checked against the contract and the store's grants, instantiated and
    /// smoke-tested (read-only calls on the store's data) before it takes a call;
    /// calls already running finish on the old adapter, and per-conversation
    /// ordering holds across the swap. A candidate that fails any check is
    /// rejected with the reason and the old adapter keeps serving.
    pub async fn swap_adapter(&self, source: AdapterSource) -> Result<SwapReport, Error> {
        let _serialised = self.inner.swap.lock().await;
        let reject = |reason: String| Error::SwapRejected { store: self.inner.name.clone(), reason };
        let backend = self.client().backend();
        let previous = backend.image();
        let (loader, grants, what) = (Arc::clone(&self.inner.loader), previous.grants, source.describe());
        let image = tokio::task::spawn_blocking(move || {
            let wasm = loader::read_source(&source)?;
            loader.load(&wasm, what, grants)
        })
        .await
        .map_err(|e| Error::Internal(format!("adapter load task failed: {e}")))?
        .map_err(|e| reject(e.to_string()))?;
        if image.version < ContractVersion::LATEST && self.client().protector().sealing() {
            return Err(reject(format!(
                "it implements stowage:store@{}, which cannot keep sealed records",
                image.version.as_str()
            )));
        }
        let candidate = backend.candidate(Arc::new(image)).await.map_err(|e| reject(e.to_string()))?;
        let probe = Client::new(candidate, self.client().protector_arc(), self.inner.name.clone(), self.limits());
        smoke_test(&probe).await.map_err(reject)?;
        let current_digest = probe.backend().image().digest.clone();
        backend.install(probe.into_backend());
        self.seqs().clear();
        backend.counters().swaps.fetch_add(1, Ordering::Relaxed);
        tracing::info!(store = %self.inner.name, previous = %previous.digest, current = %current_digest, "adapter swapped");
        Ok(SwapReport { previous_digest: previous.digest.clone(), current_digest })
    }
}

/// Read-only calls a candidate must answer within the contract.
async fn smoke_test(candidate: &Client<crate::adapter::wasm::WasmBackend>) -> Result<(), String> {
    let scope = Scope::new(SMOKE_TENANT, "");
    match candidate.list(&scope, None, 1).await {
        Ok(found) if found.is_empty() => {}
        Ok(_) => return Err("smoke test `list` returned conversations of an unused scope".into()),
        Err(e) => return Err(format!("smoke test `list` failed: {e}")),
    }
    match candidate.info(&scope, "smoke").await {
        Err(Error::NotFound) => Ok(()),
        Ok(_) => Err("smoke test `info` found a conversation in an unused scope".into()),
        Err(e) => Err(format!("smoke test `info` failed: {e}")),
    }
}

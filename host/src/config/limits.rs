//! Limits enforced on a store and its adapter.

use std::time::Duration;

use serde::Deserialize;

/// Limits enforced on a store and its adapter. Every queue and cache they size is
/// bounded.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Cap on the adapter's linear memory, per instance.
    pub memory_bytes: u64,
    /// Per-call deadline for adapter code (host-side SQL time counts only while the
    /// adapter runs; SQL waits are bounded by `sql_busy_timeout_ms`).
    #[serde(with = "millis", rename = "call_timeout_ms")]
    pub call_timeout: Duration,
    /// Adapter instances serving this store in parallel (distinct conversations).
    pub instances: u32,
    /// Calls that may wait for an instance before new calls are refused.
    pub max_waiting_calls: u32,
    /// Largest message accepted or returned, in encoded bytes.
    pub max_message_bytes: u64,
    /// Largest append or replace batch, in encoded bytes.
    pub max_batch_bytes: u64,
    /// Most messages in one append or replace.
    pub max_batch_messages: u32,
    /// Most items one load or list may return.
    pub max_page_size: u32,
    /// Most bytes one adapter answer may carry back to the host (a per-call
    /// response budget; a larger answer is a contract violation).
    pub max_response_bytes: u64,
    /// Largest SQL result the host hands to an adapter.
    pub max_sql_result_bytes: u64,
    /// How long a SQL statement waits for another writer's lock.
    pub sql_busy_timeout_ms: u64,
    /// Consecutive failures (traps, timeouts, memory-cap hits, failed
    /// instantiations) after which the store reports itself unhealthy.
    pub restart_budget: u32,
    /// Back-off before replacing a failed instance, times the failure count.
    pub restart_backoff_ms: u64,
    /// Cap on that back-off.
    pub max_restart_backoff_ms: u64,
    /// How long an unhealthy store refuses calls before it tries one again.
    pub unhealthy_cooldown_ms: u64,
    /// With tenant isolation: tenants whose adapter instances stay loaded at once
    /// (the least recently used idle tenant is unloaded beyond this).
    pub max_live_tenants: u32,
    /// Memory for messages already verified and decoded, recognised again by
    /// their exact stored form, so loading them again skips the MAC and the
    /// decoding (the adapter is still asked every time; an answer never
    /// changes). 0 turns it off.
    pub verified_cache_bytes: u64,
    /// Run an adapter's load plan (`stowage:reads/load-plan`) on the host: a
    /// load of an adapter that names its SELECTs is answered without a call into
    /// it (the records are checked all the same). `false`: every load is a call.
    pub load_plans: bool,
    /// Run an adapter's append plan (`stowage:writes/append-plan`) on the host:
    /// an append that continues the head the instance last saw is stored by the
    /// INSERTs the adapter names, without a call into it; whenever the plan has
    /// no answer, the adapter is called. `false`: every append is a call.
    pub append_plans: bool,
    /// At `sql_sync = "full"` on SQLite: how long, in microseconds, a writer
    /// alone (no other commit under way) spins for its flush, which a flusher
    /// thread of the store runs on another CPU, and how long that thread spins
    /// for the next flush before it sleeps. Keeps the writer's CPU out of the
    /// flush's kernel path and sleep, for up to this much CPU time a flush on
    /// each side. Off by default: on the bench machine it took sequential
    /// appends from 1.16× to 1.10× native's time but left 4-message turns
    /// where they were and fattened both tails (see BENCHMARKS.md). 0 (the
    /// default): a writer flushes on its own thread.
    pub flush_spin_us: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 256 << 20,
            call_timeout: Duration::from_secs(10),
            instances: 4,
            max_waiting_calls: 1024,
            max_message_bytes: 16 << 20,
            max_batch_bytes: 64 << 20,
            max_batch_messages: 10_000,
            max_page_size: 1_000,
            max_response_bytes: 128 << 20,
            max_sql_result_bytes: 64 << 20,
            sql_busy_timeout_ms: 5_000,
            restart_budget: 5,
            restart_backoff_ms: 100,
            max_restart_backoff_ms: 5_000,
            unhealthy_cooldown_ms: 30_000,
            max_live_tenants: 64,
            verified_cache_bytes: 16 << 20,
            load_plans: true,
            append_plans: true,
            flush_spin_us: 0,
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

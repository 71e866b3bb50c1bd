//! The process-wide wasmtime engine and its epoch ticker.

use std::time::Duration;

use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::engine_settings::base_config;

use crate::config::RuntimeConfig;
use crate::error::Error;

/// Which instance allocator the engine ended up with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocator {
    Pooling,
    OnDemand,
}

fn pooling(runtime: &RuntimeConfig) -> PoolingAllocationConfig {
    let instances = runtime.max_instances;
    let mut pool = PoolingAllocationConfig::default();
    // A Rust wasip2 component holds a handful of core instances (the program, the
    // WASI shims), each with at most one memory and one table.
    pool.total_component_instances(instances)
        .total_core_instances(instances.saturating_mul(8))
        .total_memories(instances.saturating_mul(2))
        .total_tables(instances.saturating_mul(8))
        // Fiber stacks serve async calls only; every call here is synchronous
        // (`base_config` turns concurrency support off), so the pool keeps none
        // and creating the engine skips a guard-page `mprotect` per stack.
        .total_stacks(0)
        .max_memory_size(usize::try_from(runtime.max_memory_bytes).unwrap_or(usize::MAX))
        .max_memories_per_component(4)
        .max_tables_per_component(16)
        .table_elements(100_000);
    pool
}

/// Builds the engine: pooling allocator when possible, on-demand otherwise.
pub fn build(runtime: &RuntimeConfig) -> Result<(Engine, Allocator), Error> {
    if runtime.pooling {
        let mut config = base_config();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(runtime)));
        match Engine::new(&config) {
            Ok(engine) => return Ok((engine, Allocator::Pooling)),
            Err(err) => tracing::warn!(
                error = %err,
                "pooling allocator unavailable, falling back to on-demand allocation"
            ),
        }
    }
    let mut config = base_config();
    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    let engine = Engine::new(&config).map_err(|e| Error::Internal(format!("creating the wasm engine: {e}")))?;
    Ok((engine, Allocator::OnDemand))
}

/// Advances the engine's epoch every `tick` on its own OS thread, so deadlines fire
/// even when every async worker is busy. Stops when the engine is dropped.
pub fn start_ticker(engine: &Engine, tick: Duration) -> Result<(), Error> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("stowage-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
        .map(|_| ())
        .map_err(|e| Error::Internal(format!("starting the epoch ticker: {e}")))
}

/// Epoch ticks that make up `timeout` (rounded up, plus the tick in progress).
pub fn deadline_ticks(timeout: Duration, tick: Duration) -> u64 {
    let tick = tick.as_nanos().max(1);
    let ticks = timeout.as_nanos().div_ceil(tick);
    u64::try_from(ticks).unwrap_or(u64::MAX / 2).saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_rounds_up_and_adds_the_current_tick() {
        let tick = Duration::from_millis(10);
        assert_eq!(deadline_ticks(Duration::from_millis(100), tick), 11);
        assert_eq!(deadline_ticks(Duration::from_millis(101), tick), 12);
        assert_eq!(deadline_ticks(Duration::from_millis(1), tick), 2);
    }
}

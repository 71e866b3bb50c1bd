//! The engine settings that shape compiled code, in one place for the two
//! engines that compile adapters: the runtime's ([`super::engine`]) and the
//! build script's, which precompiles the shipped adapters (`host/build.rs`
//! includes this file). Anything set here changes what a component compiles to,
//! so both must see the same settings for a precompiled artifact to load.
//!
//! This file is compiled twice (as a module of the host and of its build
//! script): it uses nothing but wasmtime.

/// The settings every engine that compiles adapters starts from.
pub fn base_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    // Our WIT has no async functions: skip the concurrency machinery, which costs
    // roughly 2.5x per call (research/wasm-hosts.md).
    config.concurrency_support(false);
    config.epoch_interruption(true);
    config.memory_init_cow(true);
    config.max_wasm_stack(1 << 20);
    config
}

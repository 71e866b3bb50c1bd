//! What each adapter instance's wasmtime `Store` carries: its WASI context, its
//! memory limiter and the capabilities granted to it.

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::capability::log::LogSink;
use crate::capability::sql::SqlSession;
use crate::wit::{v0_1, v0_2};

/// The error a guest gets (as a trap) when it grows its memory past the cap.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit} bytes exceeded (asked for {desired})")]
pub struct MemoryLimitExceeded {
    pub limit: u64,
    pub desired: u64,
}

/// Caps linear memory and tables. Exceeding the memory cap traps immediately with
/// [`MemoryLimitExceeded`], so the host can report the cause precisely.
pub struct Limiter {
    pub memory_bytes: u64,
    pub table_elements: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let desired = desired as u64;
        if desired > self.memory_bytes {
            return Err(wasmtime::Error::new(MemoryLimitExceeded { limit: self.memory_bytes, desired }));
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= self.table_elements)
    }

    fn instances(&self) -> usize {
        16
    }
    fn tables(&self) -> usize {
        32
    }
    fn memories(&self) -> usize {
        4
    }
}

pub struct AdapterState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub limiter: Limiter,
    pub log: LogSink,
    /// Linked only when the store grants `sql`.
    pub sql: SqlSession,
    /// Tests only: the simulated disk under `/data`, if any.
    #[cfg(feature = "fault-injection")]
    pub power_loss: Option<crate::capability::filesystem::power_loss::PowerLoss>,
}

impl WasiView for AdapterState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl v0_1::types::Host for AdapterState {}
impl v0_2::types::Host for AdapterState {}

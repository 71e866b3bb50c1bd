//! What each adapter instance's wasmtime `Store` carries: its WASI context, its
//! memory limiter and the capabilities granted to it.

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::{log, sql, types};
use crate::capability::log::LogSink;
use crate::capability::sql::SqlSession;

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
    /// Present only when the store grants `sql`.
    pub sql: Option<SqlSession>,
}

impl WasiView for AdapterState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl types::Host for AdapterState {}

impl log::Host for AdapterState {
    fn log(&mut self, level: log::Level, message: String) {
        self.log.log(level, &message);
    }
}

impl AdapterState {
    fn sql(&mut self) -> Result<&mut SqlSession, sql::Error> {
        // Unreachable through linking (sql is linked only when granted); kept total.
        self.sql.as_mut().ok_or_else(|| sql::Error::AccessDenied("the sql capability is not granted".into()))
    }
}

impl sql::Host for AdapterState {
    fn execute(&mut self, statement: String, params: Vec<sql::Value>) -> Result<u64, sql::Error> {
        self.sql()?.execute(&statement, &params)
    }

    fn query(&mut self, statement: String, params: Vec<sql::Value>) -> Result<sql::QueryResult, sql::Error> {
        self.sql()?.query(&statement, &params)
    }

    fn execute_batch(&mut self, statements: Vec<sql::Statement>) -> Result<Vec<u64>, sql::Error> {
        self.sql()?.execute_batch(&statements)
    }

    fn begin(&mut self) -> Result<(), sql::Error> {
        self.sql()?.begin()
    }

    fn commit(&mut self) -> Result<(), sql::Error> {
        self.sql()?.commit()
    }

    fn rollback(&mut self) -> Result<(), sql::Error> {
        self.sql()?.rollback()
    }
}

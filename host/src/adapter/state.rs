//! What each adapter instance's wasmtime `Store` carries: its WASI context, its
//! memory limiter and the capabilities granted to it.

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::{log, sql, types};
use crate::capability::log::LogSink;
use crate::capability::sql::{SqlSession, Struck};

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
    fn log(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        self.log.log(level, &message);
        Ok(())
    }
}

impl AdapterState {
    /// The session, and an injected fault if one strikes this statement: the
    /// outer error traps the adapter, the inner one is reported to it.
    fn sql(&mut self) -> wasmtime::Result<Result<&mut SqlSession, sql::Error>> {
        // Unreachable through linking (sql is linked only when granted); kept total.
        let Some(session) = self.sql.as_mut() else {
            return Ok(Err(sql::Error::AccessDenied("the sql capability is not granted".into())));
        };
        match session.database().strike() {
            None => Ok(Ok(session)),
            Some(Struck::Error(error)) => Ok(Err(error)),
            Some(Struck::Trap) => Err(wasmtime::Error::msg("injected trap in the sql capability")),
        }
    }

    fn sql_quiet(&mut self) -> Result<&mut SqlSession, sql::Error> {
        self.sql.as_mut().ok_or_else(|| sql::Error::AccessDenied("the sql capability is not granted".into()))
    }
}

impl sql::Host for AdapterState {
    fn execute(&mut self, statement: String, params: Vec<sql::Value>) -> wasmtime::Result<Result<u64, sql::Error>> {
        Ok(self.sql()?.and_then(|s| s.execute(&statement, &params)))
    }

    fn query(
        &mut self,
        statement: String,
        params: Vec<sql::Value>,
    ) -> wasmtime::Result<Result<sql::QueryResult, sql::Error>> {
        Ok(self.sql()?.and_then(|s| s.query(&statement, &params)))
    }

    fn execute_batch(&mut self, statements: Vec<sql::Statement>) -> wasmtime::Result<Result<Vec<u64>, sql::Error>> {
        Ok(self.sql()?.and_then(|s| s.execute_batch(&statements)))
    }

    fn begin(&mut self) -> wasmtime::Result<Result<(), sql::Error>> {
        Ok(self.sql_quiet().and_then(|s| s.begin()))
    }

    fn commit(&mut self) -> wasmtime::Result<Result<(), sql::Error>> {
        Ok(self.sql()?.and_then(|s| s.commit()))
    }

    fn rollback(&mut self) -> wasmtime::Result<Result<(), sql::Error>> {
        Ok(self.sql_quiet().and_then(|s| s.rollback()))
    }
}

//! The WIT `sql` host implementation, per contract version, and its linker wiring.
//! Both versions share [`SqlSession`]; only the value types differ.

use wasmtime::component::{HasSelf, Linker};

use super::session::{SqlSession, Statement};
use super::value::{Dialect, Rows, Value};
use crate::wit::{ContractVersion, SqlErrorKind, SqlFailure, v0_1, v0_2};

impl SqlSession {
    /// Before a statement (the adapter's, or one the host runs for it): an
    /// injected fault, if one strikes here.
    pub(crate) fn before_statement(&self) -> Result<(), SqlFailure> {
        #[cfg(feature = "fault-injection")]
        if let Some(db) = self.database() {
            db.faults().strike()?;
        }
        Ok(())
    }

    /// What the adapter gets for a statement that failed with `kind`: the
    /// error, or, once its call's deadline has passed (SQLite interrupted the
    /// statement), the interrupt that times the call out, as the epoch deadline
    /// does to the adapter's own code.
    pub(crate) fn failed(&self, kind: SqlErrorKind) -> SqlFailure {
        if self.deadline_passed() {
            SqlFailure::Trap(wasmtime::Trap::Interrupt.into())
        } else {
            SqlFailure::Report(kind)
        }
    }
}

macro_rules! sql_host {
    ($version:ident, { $($extra:item)* }) => {
        impl From<$version::sql::Value> for Value {
            fn from(value: $version::sql::Value) -> Self {
                match value {
                    $version::sql::Value::Null => Value::Null,
                    $version::sql::Value::Integer(i) => Value::Integer(i),
                    $version::sql::Value::Real(f) => Value::Real(f),
                    $version::sql::Value::Text(s) => Value::Text(s),
                    $version::sql::Value::Blob(b) => Value::Blob(b),
                }
            }
        }

        impl From<Value> for $version::sql::Value {
            fn from(value: Value) -> Self {
                match value {
                    Value::Null => $version::sql::Value::Null,
                    Value::Integer(i) => $version::sql::Value::Integer(i),
                    Value::Real(f) => $version::sql::Value::Real(f),
                    Value::Text(s) => $version::sql::Value::Text(s),
                    Value::Blob(b) => $version::sql::Value::Blob(b),
                }
            }
        }

        impl From<Rows> for $version::sql::QueryResult {
            fn from(rows: Rows) -> Self {
                $version::sql::QueryResult {
                    columns: rows.columns,
                    rows: rows
                        .rows
                        .into_iter()
                        .map(|values| $version::sql::Row { values: values.into_iter().map(Into::into).collect() })
                        .collect(),
                }
            }
        }

        impl $version::sql::Host for SqlSession {
            fn convert_error(&mut self, err: SqlFailure) -> wasmtime::Result<$version::sql::Error> {
                match err {
                    SqlFailure::Report(kind) => Ok(kind.into()),
                    SqlFailure::Trap(trap) => Err(trap),
                }
            }

            fn execute(&mut self, statement: String, params: Vec<$version::sql::Value>) -> Result<u64, SqlFailure> {
                self.before_statement()?;
                let params: Vec<Value> = params.into_iter().map(Into::into).collect();
                SqlSession::execute(self, &statement, &params).map_err(|kind| self.failed(kind))
            }

            fn query(
                &mut self,
                statement: String,
                params: Vec<$version::sql::Value>,
            ) -> Result<$version::sql::QueryResult, SqlFailure> {
                self.before_statement()?;
                let params: Vec<Value> = params.into_iter().map(Into::into).collect();
                SqlSession::query(self, &statement, &params).map(Into::into).map_err(|kind| self.failed(kind))
            }

            fn execute_batch(&mut self, statements: Vec<$version::sql::Statement>) -> Result<Vec<u64>, SqlFailure> {
                self.before_statement()?;
                let statements: Vec<Statement> = statements
                    .into_iter()
                    .map(|s| Statement { sql: s.sql, params: s.params.into_iter().map(Into::into).collect() })
                    .collect();
                SqlSession::execute_batch(self, &statements).map_err(|kind| self.failed(kind))
            }

            fn begin(&mut self) -> Result<(), SqlFailure> {
                Ok(SqlSession::begin(self)?)
            }

            fn commit(&mut self) -> Result<(), SqlFailure> {
                self.before_statement()?;
                SqlSession::commit(self).map_err(|kind| self.failed(kind))
            }

            fn rollback(&mut self) -> Result<(), SqlFailure> {
                Ok(SqlSession::rollback(self)?)
            }

            $($extra)*
        }
    };
}

sql_host!(v0_1, {});
sql_host!(v0_2, {
    fn get_dialect(&mut self) -> wasmtime::Result<v0_2::sql::Dialect> {
        Ok(match self.database().map_or(Dialect::Sqlite, |db| db.dialect()) {
            Dialect::Sqlite => v0_2::sql::Dialect::Sqlite,
            Dialect::Postgres => v0_2::sql::Dialect::Postgres,
        })
    }
});

/// Links `sql` for an adapter of `version`; `get` finds the instance's session.
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    version: ContractVersion,
    get: fn(&mut T) -> &mut SqlSession,
) -> wasmtime::Result<()> {
    match version {
        ContractVersion::V0_1 => v0_1::sql::add_to_linker::<T, HasSelf<SqlSession>>(linker, get),
        ContractVersion::V0_2 => v0_2::sql::add_to_linker::<T, HasSelf<SqlSession>>(linker, get),
    }
}

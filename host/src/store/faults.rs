//! Fault injection for tests (cargo feature `fault-injection`; not in the shipped
//! binary): a fault strikes the store's SQL capability at a chosen statement.

use super::Store;
use crate::capability::sql::SqlFault;
use crate::error::Error;

impl Store {
    /// The SQL statement after the next `statements` ones fails once with an I/O
    /// error. Errors when the store has no SQL grant.
    pub fn inject_sql_failure_after(&self, statements: u32) -> Result<(), Error> {
        self.inject_sql_fault(statements, SqlFault::Error)
    }

    /// `fault` strikes the SQL statement after the next `statements` ones, once.
    /// Errors when the store has no SQL grant.
    pub fn inject_sql_fault(&self, statements: u32, fault: SqlFault) -> Result<(), Error> {
        let databases = self.client().backend().databases();
        if databases.is_empty() {
            return Err(Error::Config("the store has no sql database to inject faults into".into()));
        }
        for db in databases {
            db.faults().inject(statements, fault);
        }
        Ok(())
    }

    /// Disarms a fault that has not struck.
    pub fn disarm_sql_fault(&self) {
        for db in self.client().backend().databases() {
            db.faults().disarm();
        }
    }
}

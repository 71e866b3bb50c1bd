//! Fault injection for tests (cargo feature `fault-injection`; not in the shipped
//! binary): a fault strikes once, at a chosen statement (`execute`, `query`,
//! `execute-batch` or `commit`). Without the feature none of this exists and no
//! statement takes a lock to look for a fault.

use std::sync::Mutex;
use std::time::Duration;

use crate::wit::{SqlErrorKind, SqlFailure};

/// A fault the host can inject into the `sql` capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlFault {
    /// The statement fails with an I/O error the adapter sees.
    Error,
    /// The adapter traps inside the statement.
    Trap,
    /// The statement takes this long (past the call deadline, it makes the adapter
    /// time out as soon as it resumes).
    Stall(Duration),
}

/// The armed fault of a database: (statements still to let through, the fault).
#[derive(Debug, Default)]
pub struct FaultSlot(Mutex<Option<(u32, SqlFault)>>);

impl FaultSlot {
    /// Arms `fault` to strike the statement after the next `statements` ones.
    pub fn inject(&self, statements: u32, fault: SqlFault) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some((statements, fault));
        }
    }

    /// Disarms a fault that has not struck yet.
    pub fn disarm(&self) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = None;
        }
    }

    /// Called before each statement: the failure to report, if the armed fault
    /// strikes this statement.
    pub fn strike(&self) -> Result<(), SqlFailure> {
        let fault = {
            let Ok(mut slot) = self.0.lock() else { return Ok(()) };
            match slot.as_mut() {
                Some((0, fault)) => {
                    let fault = *fault;
                    *slot = None;
                    fault
                }
                Some((remaining, _)) => {
                    *remaining -= 1;
                    return Ok(());
                }
                None => return Ok(()),
            }
        };
        match fault {
            SqlFault::Error => Err(SqlFailure::Report(SqlErrorKind::Io("injected failure".into()))),
            SqlFault::Trap => Err(SqlFailure::Trap(wasmtime::Error::msg("injected trap in the sql capability"))),
            SqlFault::Stall(duration) => {
                std::thread::sleep(duration);
                Ok(())
            }
        }
    }
}

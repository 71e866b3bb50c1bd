//! An instance's plans: the SELECTs its adapter names for a message load
//! (`stowage:reads/load-plan`) and the INSERTs it names for an append
//! (`stowage:writes/append-plan`), which the host runs itself
//! (`adapter::wasm::plan`).

use crate::wit::reads::{Reader, load_plan};
use crate::wit::writes::{Writer, append_plan};

pub enum LoadPlan {
    /// No plan: the adapter exports none, offered none, or its plan was refused.
    /// Every load calls the adapter.
    None,
    /// The adapter exports a plan, not asked for yet (it is asked before the
    /// instance's first load).
    Unasked(Reader),
    /// The statements the adapter named.
    Ready(load_plan::MessageStatements),
}

pub enum AppendPlan {
    /// No plan: the adapter exports none, offered none, or its plan was
    /// dropped. Every append calls the adapter.
    None,
    /// The adapter exports a plan, not asked for yet (it is asked before the
    /// first append the host could run from it).
    Unasked(Writer),
    /// The statements the adapter named.
    Ready(append_plan::MessageStatements),
}

impl AppendPlan {
    /// Whether the plan may still run (so heads are worth remembering).
    pub fn may_run(&self) -> bool {
        !matches!(self, AppendPlan::None)
    }
}

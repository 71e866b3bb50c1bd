//! An instance's load plan (`stowage:reads/load-plan`): the SELECTs its adapter
//! names for a message load, which the host runs itself (`adapter::wasm::plan`).

use crate::wit::reads::{Reader, load_plan::MessageStatements};

pub enum LoadPlan {
    /// No plan: the adapter exports none, offered none, or its plan was refused.
    /// Every load calls the adapter.
    None,
    /// The adapter exports a plan, not asked for yet (it is asked before the
    /// instance's first load).
    Unasked(Reader),
    /// The statements the adapter named.
    Ready(MessageStatements),
}

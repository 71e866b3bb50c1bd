//! Host bindings generated from `wit/` (world `sql-adapter`, a superset of `adapter`).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "stowage:store/sql-adapter",
    // Host functions may trap the adapter (fault injection in tests).
    imports: { default: trappable },
});

pub use self::exports::stowage::store::conversation_store;
pub use self::exports::stowage::store::display_store;
pub use self::stowage::store::{log, sql, types};

/// Interface names, as they appear in a component's imports and exports.
pub mod names {
    pub const CONVERSATION_STORE: &str = "stowage:store/conversation-store@0.1.0";
    pub const DISPLAY_STORE: &str = "stowage:store/display-store@0.1.0";
    pub const REQUIRED_EXPORTS: [&str; 2] = [CONVERSATION_STORE, DISPLAY_STORE];
    pub const CONTRACT_VERSION: &str = "0.1.0";
}

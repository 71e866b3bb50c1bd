//! `stowage:writes@0.1.0`: the optional append plan an adapter of
//! `stowage:store@0.2.0` may export beside its contract (world `writer`, the
//! export alone). Looked up per component: an adapter without it loads as before.

wasmtime::component::bindgen!({
    path: ["../wit/v0.2.0", "../wit/reads-v0.1.0", "../wit/writes-v0.1.0"],
    world: "stowage:writes/writer",
});

pub use self::exports::stowage::writes::append_plan;

/// The export's name, as a component lists it.
pub const APPEND_PLAN: &str = "stowage:writes/append-plan@0.1.0";

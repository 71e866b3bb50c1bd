//! `stowage:reads@0.1.0`: the optional load plan an adapter of
//! `stowage:store@0.2.0` may export beside its contract (world `reader`, the
//! export alone). Looked up per component: an adapter without it loads as before.

wasmtime::component::bindgen!({
    path: ["../wit/v0.2.0", "../wit/reads-v0.1.0"],
    world: "stowage:reads/reader",
});

pub use self::exports::stowage::reads::load_plan;

/// The export's name, as a component lists it.
pub const LOAD_PLAN: &str = "stowage:reads/load-plan@0.1.0";

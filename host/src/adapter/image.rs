//! Loading an adapter: read, compile (cached), check its exports and imports
//! against the contract and the store's grants, link, pre-instantiate.

use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use super::bindings::{SqlAdapterPre, log, names, sql, types};
use super::state::AdapterState;
use crate::cache::{self, ComponentCache};
use crate::config::{AdapterSource, Grants};
use crate::error::LoadError;

/// A compiled, checked and linked adapter, ready to instantiate many times.
pub struct AdapterImage {
    /// Human description used in messages ("adapter /path/x.wasm").
    pub what: String,
    /// SHA-256 of the component bytes.
    pub digest: String,
    /// Size of the component in bytes.
    pub size: usize,
    /// Every import of the component, by interface name.
    pub imports: Vec<String>,
    pub(crate) pre: SqlAdapterPre<AdapterState>,
}

/// What an import needs in order to be linked.
enum ImportNeed {
    Always,
    Capability(&'static str),
    Unsupported,
}

fn classify(import: &str) -> ImportNeed {
    let interface = import.split('@').next().unwrap_or(import);
    match interface {
        "stowage:store/types" | "stowage:store/log" => ImportNeed::Always,
        "stowage:store/sql" => ImportNeed::Capability("sql"),
        _ if interface.starts_with("wasi:filesystem/") => ImportNeed::Capability("filesystem"),
        // Deny-by-default WASI: no env, args or stdio content; sockets are linked but
        // every connection, bind and name lookup is refused.
        _ if ["wasi:cli/", "wasi:io/", "wasi:clocks/", "wasi:random/", "wasi:sockets/"]
            .iter()
            .any(|prefix| interface.starts_with(prefix)) =>
        {
            ImportNeed::Always
        }
        _ => ImportNeed::Unsupported,
    }
}

fn granted(grants: Grants, capability: &str) -> bool {
    match capability {
        "sql" => grants.sql,
        "filesystem" => grants.filesystem,
        _ => false,
    }
}

/// Reads the component bytes of `source`.
pub fn read_source(source: &AdapterSource) -> Result<std::sync::Arc<[u8]>, LoadError> {
    match source {
        AdapterSource::Builtin(builtin) => Ok(builtin.wasm().into()),
        AdapterSource::File(path) => {
            std::fs::read(path).map(Into::into).map_err(|source| LoadError::Read { path: path.clone(), source })
        }
        AdapterSource::Bytes { wasm, .. } => Ok(wasm.clone()),
    }
}

/// Rejects anything that is not a component binary, with the reason.
fn check_header(wasm: &[u8], what: &str) -> Result<(), LoadError> {
    let fail = |reason: &str| Err(LoadError::NotAComponent { what: what.to_owned(), reason: reason.to_owned() });
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        return fail("the file does not start with the WebAssembly magic number");
    }
    match &wasm[4..8] {
        [0x0d, 0x00, 0x01, 0x00] => Ok(()),
        [0x01, 0x00, 0x00, 0x00] => fail(
            "it is a core WebAssembly module; build the adapter as a component \
             (e.g. for the wasm32-wasip2 target, or with `wasm-tools component new`)",
        ),
        _ => fail("unknown WebAssembly binary version"),
    }
}

fn linker(engine: &Engine, grants: Grants, what: &str) -> Result<Linker<AdapterState>, LoadError> {
    let link_error = |e: wasmtime::Error| LoadError::Link { what: what.to_owned(), reason: format!("{e:#}") };
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(link_error)?;
    types::add_to_linker::<_, HasSelf<AdapterState>>(&mut linker, |s| s).map_err(link_error)?;
    log::add_to_linker::<_, HasSelf<AdapterState>>(&mut linker, |s| s).map_err(link_error)?;
    if grants.sql {
        sql::add_to_linker::<_, HasSelf<AdapterState>>(&mut linker, |s| s).map_err(link_error)?;
    }
    Ok(linker)
}

/// What a component declares, read without enforcing anything.
pub struct Description {
    pub digest: String,
    pub size: usize,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// Compiles (or fetches from the cache) and lists a component's imports and exports.
pub fn describe(engine: &Engine, cache: &ComponentCache, wasm: &[u8], what: &str) -> Result<Description, LoadError> {
    check_header(wasm, what)?;
    let digest = cache::digest(wasm);
    let component = cache.get(engine, wasm, &digest, what)?;
    let ty = component.component_type();
    let imports = ty.imports(engine).map(|(name, _)| name.to_owned()).collect();
    let exports = ty.exports(engine).map(|(name, _)| name.to_owned()).collect();
    Ok(Description { digest, size: wasm.len(), imports, exports })
}

/// The capability an import needs, if any (`sql`, `filesystem`).
pub fn capability_of(import: &str) -> Option<&'static str> {
    match classify(import) {
        ImportNeed::Capability(capability) => Some(capability),
        _ => None,
    }
}

/// Loads `wasm` as an adapter for a store with `grants`.
pub fn load(
    engine: &Engine,
    cache: &ComponentCache,
    wasm: &[u8],
    what: String,
    grants: Grants,
) -> Result<AdapterImage, LoadError> {
    check_header(wasm, &what)?;
    let digest = cache::digest(wasm);
    let component = cache.get(engine, wasm, &digest, &what)?;
    let ty = component.component_type();

    for export in names::REQUIRED_EXPORTS {
        if ty.get_export(engine, export).is_none() {
            return Err(LoadError::MissingExport { what, export: export.to_owned() });
        }
    }

    let imports: Vec<String> = ty.imports(engine).map(|(name, _)| name.to_owned()).collect();
    for import in &imports {
        match classify(import) {
            ImportNeed::Always => {}
            ImportNeed::Capability(capability) if granted(grants, capability) => {}
            ImportNeed::Capability(capability) => {
                return Err(LoadError::CapabilityNotGranted { what, import: import.clone(), capability });
            }
            ImportNeed::Unsupported => {
                return Err(LoadError::UnsupportedImport { what, import: import.clone() });
            }
        }
    }

    let linker = linker(engine, grants, &what)?;
    let link_error = |e: wasmtime::Error| LoadError::Link { what: what.clone(), reason: format!("{e:#}") };
    let instance_pre = linker.instantiate_pre(&component).map_err(link_error)?;
    let pre = SqlAdapterPre::new(instance_pre).map_err(link_error)?;
    Ok(AdapterImage { what, digest, size: wasm.len(), imports, pre })
}

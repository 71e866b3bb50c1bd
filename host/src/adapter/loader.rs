//! Loading an adapter: read, compile (cached), find which contract version it
//! implements, check its imports against the store's grants, link, pre-instantiate.

use std::sync::{Arc, OnceLock};

use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use super::cache::{self, Checked, ComponentCache};
use super::state::AdapterState;
use crate::capability::{self, Capability, Grants, ImportNeed};
use crate::config::AdapterSource;
use crate::config::Precompiled;
use crate::error::LoadError;
use crate::wit::{ContractVersion, reads, v0_1, v0_2, writes};

/// Pre-instantiated bindings, per contract version.
pub enum Pre {
    V0_1(v0_1::SqlAdapterPre<AdapterState>),
    /// With the indices of the plans it exports, if any.
    V0_2(v0_2::SqlAdapterPre<AdapterState>, Option<Box<PlanIndices>>),
}

/// The indices of a 0.2.0 adapter's exports when it exports a plan beside
/// them: the optional load plan (`stowage:reads/load-plan`) and append plan
/// (`stowage:writes/append-plan`), at least one of them.
pub struct PlanIndices {
    pub contract: v0_2::SqlAdapterIndices,
    pub reader: Option<reads::ReaderIndices>,
    pub writer: Option<writes::WriterIndices>,
}

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
    pub version: ContractVersion,
    pub grants: Grants,
    pub(crate) pre: Pre,
}

/// What a component declares, read without enforcing anything.
pub struct Description {
    pub digest: String,
    pub size: usize,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// The contract version whose exports it has, if any.
    pub version: Option<ContractVersion>,
}

/// Component bytes to load.
pub enum Wasm {
    /// A shipped adapter, with its digest and its artifact from the build.
    Shipped { wasm: &'static [u8], precompiled: Precompiled },
    /// Any other component.
    Other(Arc<[u8]>),
}

impl Wasm {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Wasm::Shipped { wasm, .. } => wasm,
            Wasm::Other(wasm) => wasm,
        }
    }

    /// The component's SHA-256, hex (computed by the build for shipped ones).
    fn digest(&self) -> String {
        match self {
            Wasm::Shipped { precompiled, .. } => precompiled.digest.to_owned(),
            Wasm::Other(wasm) => cache::digest(wasm),
        }
    }

    fn precompiled(&self) -> Option<Precompiled> {
        match self {
            Wasm::Shipped { precompiled, .. } => Some(*precompiled),
            Wasm::Other(_) => None,
        }
    }

    /// A shipped artifact's copy in the cache directory `dir`, checked (see
    /// [`cache::shipped`]): needs no engine, so it runs while one is built.
    pub fn checked_copy(&self, dir: &std::path::Path) -> Option<Checked> {
        self.precompiled()
            .filter(|built| !built.artifact.is_empty())
            .and_then(|built| cache::shipped::checked_copy(dir, &built))
    }
}

/// Reads the component bytes of `source` (blocking: call off async workers).
pub fn read_source(source: &AdapterSource) -> Result<Wasm, LoadError> {
    match source {
        AdapterSource::Builtin(builtin) => {
            Ok(Wasm::Shipped { wasm: builtin.wasm(), precompiled: builtin.precompiled() })
        }
        AdapterSource::File(path) => std::fs::read(path)
            .map(|wasm| Wasm::Other(wasm.into()))
            .map_err(|source| LoadError::Read { path: path.clone(), source }),
        AdapterSource::Bytes { wasm, .. } => Ok(Wasm::Other(Arc::clone(wasm))),
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

/// Whether `component` exports `export` (an optional plan).
fn exports(engine: &Engine, component: &Component, export: &str) -> bool {
    component.component_type().get_export(engine, export).is_some()
}

/// The contract version whose required exports `component` has (newest first).
fn version_of(engine: &Engine, component: &Component) -> Option<ContractVersion> {
    let ty = component.component_type();
    ContractVersion::ALL
        .into_iter()
        .find(|v| v.required_exports().iter().all(|export| ty.get_export(engine, export).is_some()))
}

/// The host's imports for an adapter of `version`: WASI, the contract's types,
/// logging and every capability. Which of them a component may import is
/// checked against its store's grants before it is linked ([`Loader::load`]),
/// so one linker per version serves every set of grants.
fn linker(engine: &Engine, version: ContractVersion) -> wasmtime::Result<Linker<AdapterState>> {
    let mut linker = Linker::new(engine);
    capability::filesystem::add_to_linker(&mut linker)?;
    #[cfg(feature = "fault-injection")]
    capability::filesystem::power_loss::add_to_linker(&mut linker, |s: &mut AdapterState| s.power_loss.as_ref())?;
    match version {
        ContractVersion::V0_1 => v0_1::types::add_to_linker::<_, HasSelf<AdapterState>>(&mut linker, |s| s)?,
        ContractVersion::V0_2 => v0_2::types::add_to_linker::<_, HasSelf<AdapterState>>(&mut linker, |s| s)?,
    }
    capability::log::add_to_linker(&mut linker, version, |s: &mut AdapterState| &mut s.log)?;
    for capability in Capability::ALL {
        match capability {
            Capability::Sql => capability::sql::add_to_linker(&mut linker, version, |s: &mut AdapterState| &mut s.sql)?,
            // The preopen is made per instance (`pool`); WASI is linked above.
            Capability::Filesystem => {}
        }
    }
    Ok(linker)
}

/// One linker per contract version, each made the first time it is needed
/// (the latest one on the thread that builds the engine, before any load).
#[derive(Default)]
pub struct Linkers {
    v0_1: OnceLock<Result<Linker<AdapterState>, String>>,
    v0_2: OnceLock<Result<Linker<AdapterState>, String>>,
}

impl Linkers {
    pub fn get(&self, engine: &Engine, version: ContractVersion) -> Result<&Linker<AdapterState>, String> {
        let slot = match version {
            ContractVersion::V0_1 => &self.v0_1,
            ContractVersion::V0_2 => &self.v0_2,
        };
        slot.get_or_init(|| linker(engine, version).map_err(|e| format!("{e:#}"))).as_ref().map_err(Clone::clone)
    }
}

/// The engine and the compiled-component cache: everything loading needs.
pub struct Loader {
    pub engine: Engine,
    pub cache: ComponentCache,
    pub linkers: Linkers,
}

impl Loader {
    /// Compiles (or fetches from the cache) and lists a component's imports and exports.
    pub fn describe(&self, source: &Wasm, what: &str) -> Result<Description, LoadError> {
        let wasm = source.bytes();
        check_header(wasm, what)?;
        let digest = source.digest();
        let component = self.cache.get(&self.engine, wasm, &digest, what, source.precompiled(), None)?;
        let ty = component.component_type();
        let imports = ty.imports(&self.engine).map(|(name, _)| name.to_owned()).collect();
        let exports = ty.exports(&self.engine).map(|(name, _)| name.to_owned()).collect();
        let version = version_of(&self.engine, &component);
        Ok(Description { digest, size: wasm.len(), imports, exports, version })
    }

    /// Loads `wasm` as an adapter for a store with `grants` (blocking: compiles).
    pub fn load(&self, source: &Wasm, what: String, grants: Grants) -> Result<AdapterImage, LoadError> {
        self.load_checked(source, what, grants, None)
    }

    /// [`Self::load`], with the copy of a shipped artifact already checked
    /// ([`Wasm::checked_copy`]) while the engine was being built.
    pub fn load_checked(
        &self,
        source: &Wasm,
        what: String,
        grants: Grants,
        prechecked: Option<Checked>,
    ) -> Result<AdapterImage, LoadError> {
        let wasm = source.bytes();
        check_header(wasm, &what)?;
        let digest = source.digest();
        let component = self.cache.get(&self.engine, wasm, &digest, &what, source.precompiled(), prechecked)?;
        let Some(version) = version_of(&self.engine, &component) else {
            let export = ContractVersion::LATEST.required_exports()[0].to_owned();
            return Err(LoadError::MissingExport { what, export, supported: "0.1.0 and 0.2.0" });
        };
        let ty = component.component_type();
        let imports: Vec<String> = ty.imports(&self.engine).map(|(name, _)| name.to_owned()).collect();
        for import in &imports {
            match capability::classify(import) {
                ImportNeed::Always => {}
                ImportNeed::Capability(capability) if grants.contains(capability) => {}
                ImportNeed::Capability(capability) => {
                    let capability = capability.name();
                    return Err(LoadError::CapabilityNotGranted { what, import: import.clone(), capability });
                }
                ImportNeed::Unsupported => return Err(LoadError::UnsupportedImport { what, import: import.clone() }),
            }
        }
        let link_error = |e: wasmtime::Error| LoadError::Link { what: what.clone(), reason: format!("{e:#}") };
        let linker =
            self.linkers.get(&self.engine, version).map_err(|reason| LoadError::Link { what: what.clone(), reason })?;
        let instance_pre = linker.instantiate_pre(&component).map_err(link_error)?;
        let pre = match version {
            ContractVersion::V0_1 => Pre::V0_1(v0_1::SqlAdapterPre::new(instance_pre).map_err(link_error)?),
            ContractVersion::V0_2 => {
                let not_the_interface = |export: &str, e: wasmtime::Error| LoadError::Link {
                    what: what.clone(),
                    reason: format!("its {export} export is not the interface's: {e:#}"),
                };
                let reader = exports(&self.engine, &component, reads::LOAD_PLAN)
                    .then(|| reads::ReaderIndices::new(&instance_pre))
                    .transpose()
                    .map_err(|e| not_the_interface(reads::LOAD_PLAN, e))?;
                let writer = exports(&self.engine, &component, writes::APPEND_PLAN)
                    .then(|| writes::WriterIndices::new(&instance_pre))
                    .transpose()
                    .map_err(|e| not_the_interface(writes::APPEND_PLAN, e))?;
                let plan = if reader.is_some() || writer.is_some() {
                    let contract = v0_2::SqlAdapterIndices::new(&instance_pre).map_err(link_error)?;
                    Some(Box::new(PlanIndices { contract, reader, writer }))
                } else {
                    None
                };
                Pre::V0_2(v0_2::SqlAdapterPre::new(instance_pre).map_err(link_error)?, plan)
            }
        };
        if version < ContractVersion::LATEST {
            tracing::warn!(
                adapter = %what,
                version = version.as_str(),
                "this adapter implements an old contract: the host cannot authenticate its records (no integrity \
                 tags) and cannot seal them; rebuild it against stowage:store@{}",
                ContractVersion::LATEST.as_str()
            );
        }
        Ok(AdapterImage { what, digest, size: wasm.len(), imports, version, grants, pre })
    }
}

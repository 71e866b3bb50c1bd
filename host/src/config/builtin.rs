//! The adapters shipped inside the host binary (compiled by `build.rs`).

use crate::capability::{Capability, Grants};

/// Directory holding every guest component built with this host, including test
/// fixtures. Only meaningful on the machine that built the host.
#[doc(hidden)]
pub const GUEST_ARTIFACT_DIR: &str = env!("STOWAGE_GUEST_DIR");

/// A shipped adapter as the build prepared it.
#[derive(Clone, Copy, Debug)]
pub struct Precompiled {
    /// SHA-256 of the component, hex.
    pub digest: &'static str,
    /// The component compiled by the build script's engine (same wasmtime, same
    /// settings as the runtime's); empty when the build could not precompile.
    pub artifact: &'static [u8],
    /// BLAKE3 of `artifact`, hex: what its copy in a compiled cache is checked
    /// against, and that copy's name.
    pub artifact_digest: &'static str,
}

/// A built-in adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// SQL proxy: the guest owns the schema, the host runs the database. Needs `sql`.
    Sqlite,
    /// One directory per conversation, checksummed append-only logs. Needs `filesystem`.
    Filesystem,
    /// Keeps nothing.
    Null,
}

impl Builtin {
    pub const ALL: [Builtin; 3] = [Builtin::Sqlite, Builtin::Filesystem, Builtin::Null];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Sqlite => "sqlite",
            Builtin::Filesystem => "filesystem",
            Builtin::Null => "null",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The capabilities this adapter needs.
    pub fn grants(self) -> Grants {
        match self {
            Builtin::Sqlite => Grants::of(&[Capability::Sql]),
            Builtin::Filesystem => Grants::of(&[Capability::Filesystem]),
            Builtin::Null => Grants::NONE,
        }
    }

    /// What the build knows of this adapter: its digest, and its artifact
    /// precompiled for the host's engine (empty in a cross build).
    pub fn precompiled(self) -> Precompiled {
        macro_rules! shipped {
            ($name:literal) => {
                Precompiled {
                    digest: include_str!(concat!(env!("STOWAGE_PRECOMPILED_DIR"), "/", $name, ".sha256")),
                    artifact: include_bytes!(concat!(env!("STOWAGE_PRECOMPILED_DIR"), "/", $name, ".cwasm")),
                    artifact_digest: include_str!(concat!(
                        env!("STOWAGE_PRECOMPILED_DIR"),
                        "/",
                        $name,
                        ".cwasm.blake3"
                    )),
                }
            };
        }
        match self {
            Builtin::Sqlite => shipped!("sqlite"),
            Builtin::Filesystem => shipped!("filesystem"),
            Builtin::Null => shipped!("null"),
        }
    }

    /// The component's bytes.
    pub fn wasm(self) -> &'static [u8] {
        match self {
            Builtin::Sqlite => include_bytes!(concat!(env!("STOWAGE_GUEST_DIR"), "/stowage_adapter_sqlite.wasm")),
            Builtin::Filesystem => {
                include_bytes!(concat!(env!("STOWAGE_GUEST_DIR"), "/stowage_adapter_filesystem.wasm"))
            }
            Builtin::Null => include_bytes!(concat!(env!("STOWAGE_GUEST_DIR"), "/stowage_adapter_null.wasm")),
        }
    }
}

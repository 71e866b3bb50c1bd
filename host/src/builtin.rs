//! The adapters shipped inside the host binary (compiled by `build.rs`).

use crate::config::Grants;

/// Directory holding every guest component built with this host, including test
/// fixtures. Only meaningful on the machine that built the host.
#[doc(hidden)]
pub const GUEST_ARTIFACT_DIR: &str = env!("STOWAGE_GUEST_DIR");

/// A built-in adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// SQL proxy: the guest owns the schema, the host runs SQLite. Needs `sql`.
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
            Builtin::Sqlite => Grants::SQL,
            Builtin::Filesystem => Grants::FILESYSTEM,
            Builtin::Null => Grants::NONE,
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

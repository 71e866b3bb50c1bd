//! Capabilities the host lends adapters. Each is its own module with its host
//! implementation and its linker wiring (as in Spin's factors); this file owns the
//! table of which WIT interfaces each capability grants, and the [`Grants`] set.
//!
//! An adapter may always import `stowage:store/types`, `stowage:store/log` and
//! deny-by-default WASI (no env, args, stdio content, network). Everything else
//! needs a capability its store grants; an import nobody provides fails the load.

pub mod filesystem;
pub mod log;
pub mod sql;

use std::fmt;

/// Something a store may lend its adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// The store's adapter directory, preopened at `/data` (read-write).
    Filesystem,
    /// The store's SQL database (`stowage:store/sql`).
    Sql,
}

impl Capability {
    pub const ALL: [Capability; 2] = [Capability::Filesystem, Capability::Sql];

    /// The name used in configuration (`grants = ["sql"]`) and messages.
    pub fn name(self) -> &'static str {
        match self {
            Capability::Filesystem => "filesystem",
            Capability::Sql => "sql",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Every capability name, for messages.
    pub fn known() -> String {
        Self::ALL.map(Capability::name).join(", ")
    }

    /// The WIT interfaces (without version) this capability grants; a prefix
    /// ending in `/` stands for a whole package.
    pub fn interfaces(self) -> &'static [&'static str] {
        match self {
            Capability::Filesystem => &["wasi:filesystem/"],
            Capability::Sql => &["stowage:store/sql"],
        }
    }

    fn bit(self) -> u8 {
        match self {
            Capability::Filesystem => 1,
            Capability::Sql => 2,
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The capabilities a store lends its adapter. Everything else is denied.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Grants(u8);

impl Grants {
    pub const NONE: Grants = Grants(0);

    /// Exactly these capabilities.
    pub fn of(capabilities: &[Capability]) -> Self {
        capabilities.iter().fold(Self::NONE, |grants, c| grants.with(*c))
    }

    /// These grants plus `capability`.
    pub fn with(self, capability: Capability) -> Self {
        Grants(self.0 | capability.bit())
    }

    pub fn contains(self, capability: Capability) -> bool {
        self.0 & capability.bit() != 0
    }

    /// The granted capabilities, in a fixed order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

impl fmt::Debug for Grants {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(Capability::name)).finish()
    }
}

/// What an import needs in order to be linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportNeed {
    /// Linked for every adapter.
    Always,
    /// Linked only when the capability is granted.
    Capability(Capability),
    /// Nothing provides it: the load fails naming it.
    Unsupported,
}

/// Interfaces every adapter may import.
const ALWAYS: &[&str] = &[
    "stowage:store/types",
    "stowage:store/log",
    // Deny-by-default WASI: no env, args or stdio content; sockets are linked but
    // every connection, bind and name lookup is refused.
    "wasi:cli/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:sockets/",
];

fn matches(interface: &str, pattern: &str) -> bool {
    if pattern.ends_with('/') { interface.starts_with(pattern) } else { interface == pattern }
}

/// What `import` (a component import name, possibly versioned) needs.
pub fn classify(import: &str) -> ImportNeed {
    let interface = import.split('@').next().unwrap_or(import);
    if ALWAYS.iter().any(|p| matches(interface, p)) {
        return ImportNeed::Always;
    }
    for capability in Capability::ALL {
        if capability.interfaces().iter().any(|p| matches(interface, p)) {
            return ImportNeed::Capability(capability);
        }
    }
    ImportNeed::Unsupported
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_classified_by_the_table() {
        assert_eq!(classify("stowage:store/sql@0.2.0"), ImportNeed::Capability(Capability::Sql));
        assert_eq!(classify("stowage:store/sql-extra@0.2.0"), ImportNeed::Unsupported);
        assert_eq!(classify("wasi:filesystem/types@0.2.12"), ImportNeed::Capability(Capability::Filesystem));
        assert_eq!(classify("wasi:io/streams@0.2.0"), ImportNeed::Always);
        assert_eq!(classify("stowage:store/log@0.1.0"), ImportNeed::Always);
        assert_eq!(classify("wasi:http/types@0.2.0"), ImportNeed::Unsupported);
    }

    #[test]
    fn grants_are_a_set() {
        let grants = Grants::of(&[Capability::Sql]).with(Capability::Sql);
        assert!(grants.contains(Capability::Sql) && !grants.contains(Capability::Filesystem));
        assert_eq!(format!("{grants:?}"), "{\"sql\"}");
        assert_eq!(Grants::NONE.iter().count(), 0);
    }
}

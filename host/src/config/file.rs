//! The TOML configuration file: named stores and a default.
//!
//! ```toml
//! default = "main"
//!
//! [stores.main]
//! adapter = "sqlite"                # a built-in name, or a path to any .wasm
//! data_dir = "stowage-data/main"    # relative paths are relative to this file
//!
//! [stores.archive]
//! adapter = "adapters/my-adapter.wasm"
//! data_dir = "/var/lib/stowage/archive"
//! grants = ["filesystem"]           # built-ins get what they need by default
//! sql_sync = "normal"
//! seal = true                       # encrypt content (default false); tags are always on
//! untagged = "accept"               # load records written before integrity tags (default "refuse")
//! isolation = "tenant"              # own instances and data directory per tenant
//! key_file = "/etc/stowage/archive.keys"   # default: generated in the store's host-private directory
//! [stores.archive.limits]
//! memory_bytes = 134217728
//! call_timeout_ms = 5000
//! ```
//!
//! Unknown keys are errors. Without a file, [`ConfigFile::embedded_default`] is
//! used: the SQLite adapter with its data in `./stowage-data`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{
    AdapterSource, Builtin, Integrity, Isolation, KeySource, Limits, SqlSync, SqlTarget, StoreConfig, Untagged,
};
use crate::capability::{Capability, Grants};
use crate::error::Error;

/// The default configuration file name.
pub const DEFAULT_CONFIG_FILE: &str = "stowage.toml";
/// Where the embedded default keeps its data.
pub const DEFAULT_DATA_DIR: &str = "stowage-data";

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    default: Option<String>,
    #[serde(default)]
    stores: BTreeMap<String, RawStore>,
    /// `stowage serve`'s `[server]` table: read and checked by the
    /// `stowage-server` crate from the same file, passed over here.
    #[serde(default, rename = "server")]
    _server: Option<toml::Value>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStore {
    adapter: String,
    data_dir: PathBuf,
    grants: Option<Vec<String>>,
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    sql_sync: SqlSync,
    #[serde(default)]
    sql: SqlTarget,
    /// Integrity tags (default on; off only to measure their cost).
    tags: Option<bool>,
    seal: Option<bool>,
    untagged: Option<Untagged>,
    #[serde(default)]
    isolation: Isolation,
    key_file: Option<PathBuf>,
    key_env: Option<String>,
}

/// A parsed configuration: every store, and which one is the default.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    pub default: String,
    pub stores: BTreeMap<String, StoreConfig>,
    /// Where it came from, for messages (`None` for the embedded default).
    pub source: Option<PathBuf>,
}

fn parse_grants(store: &str, names: &[String]) -> Result<Grants, Error> {
    let mut grants = Grants::NONE;
    for name in names {
        let capability = Capability::from_name(name).ok_or_else(|| {
            Error::Config(format!("store `{store}`: unknown capability `{name}` (known: {})", Capability::known()))
        })?;
        grants = grants.with(capability);
    }
    Ok(grants)
}

impl ConfigFile {
    /// The SQLite adapter, data in `<base>/stowage-data`, as the only and default store.
    pub fn embedded_default(base: &Path) -> Self {
        let store = StoreConfig::builtin(Builtin::Sqlite, base.join(DEFAULT_DATA_DIR).join("sqlite"));
        let mut stores = BTreeMap::new();
        stores.insert("default".to_owned(), StoreConfig { name: "default".into(), ..store });
        Self { default: "default".into(), stores, source: None }
    }

    /// Parses TOML; relative paths are resolved against `base`.
    pub fn parse(text: &str, base: &Path, source: Option<PathBuf>) -> Result<Self, Error> {
        let where_ = source.as_ref().map_or_else(|| "configuration".to_owned(), |p| p.display().to_string());
        let raw: RawFile = toml::from_str(text).map_err(|e| Error::Config(format!("{where_}: {e}")))?;
        if raw.stores.is_empty() {
            return Err(Error::Config(format!("{where_}: no stores are configured ([stores.NAME])")));
        }
        let mut stores = BTreeMap::new();
        for (name, store) in raw.stores {
            let adapter = AdapterSource::parse(&store.adapter);
            let adapter = match adapter {
                AdapterSource::File(path) if path.is_relative() => AdapterSource::File(base.join(path)),
                other => other,
            };
            let grants = match (&store.grants, &adapter) {
                (Some(names), _) => parse_grants(&name, names)?,
                (None, AdapterSource::Builtin(builtin)) => builtin.grants(),
                (None, _) => Grants::NONE,
            };
            let data_dir = if store.data_dir.is_relative() { base.join(&store.data_dir) } else { store.data_dir };
            let defaults = Integrity::default();
            let integrity = Integrity {
                tags: store.tags.unwrap_or(defaults.tags),
                seal: store.seal.unwrap_or(defaults.seal),
                untagged: store.untagged.unwrap_or(defaults.untagged),
            };
            let keys = match (store.key_file, store.key_env) {
                (Some(_), Some(_)) => {
                    return Err(Error::Config(format!(
                        "{where_}: store `{name}`: key_file and key_env exclude each other"
                    )));
                }
                (Some(path), None) => KeySource::File(if path.is_relative() { base.join(path) } else { path }),
                (None, Some(var)) => KeySource::Env(var),
                (None, None) => KeySource::Generated,
            };
            let config = StoreConfig {
                name: name.clone(),
                adapter,
                data_dir,
                grants,
                limits: store.limits,
                sql_sync: store.sql_sync,
                sql: store.sql,
                integrity,
                isolation: store.isolation,
                keys,
                #[cfg(feature = "fault-injection")]
                power_loss: None,
            };
            stores.insert(name, config);
        }
        let default = match raw.default {
            Some(default) if stores.contains_key(&default) => default,
            Some(default) => {
                return Err(Error::Config(format!("{where_}: default store `{default}` is not configured")));
            }
            None if stores.len() == 1 => stores.keys().next().cloned().unwrap_or_default(),
            None => return Err(Error::Config(format!("{where_}: several stores and no `default`"))),
        };
        Ok(Self { default, stores, source })
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::Config(format!("cannot read {}: {e}", path.display())))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, &base, Some(path.to_path_buf()))
    }

    /// The named store, or the default one.
    pub fn store(&self, name: Option<&str>) -> Result<&StoreConfig, Error> {
        let name = name.unwrap_or(&self.default);
        self.stores.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.stores.keys().map(String::as_str).collect();
            Error::Config(format!("no store named `{name}` (configured: {})", known.join(", ")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_dangling_defaults_are_errors() {
        let base = Path::new("/base");
        let typo = "[stores.a]\nadapter = \"null\"\ndata_dir = \"d\"\ndata_dri = \"x\"\n";
        let err = ConfigFile::parse(typo, base, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("data_dri"), "{err}");
        let limit_typo = "[stores.a]\nadapter = \"null\"\ndata_dir = \"d\"\n[stores.a.limits]\nmemory = 1\n";
        let err = ConfigFile::parse(limit_typo, base, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown field `memory`"), "{err}");
        let dangling = "default = \"b\"\n[stores.a]\nadapter = \"null\"\ndata_dir = \"d\"\n";
        let err = ConfigFile::parse(dangling, base, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("default store `b` is not configured"), "{err}");
    }

    #[test]
    fn unknown_capabilities_and_bad_enums_name_the_value() {
        let base = Path::new("/base");
        let grants = "[stores.a]\nadapter = \"x.wasm\"\ndata_dir = \"d\"\ngrants = [\"network\"]\n";
        let err = ConfigFile::parse(grants, base, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown capability `network`") && err.contains("filesystem"), "{err}");
        let isolation = "[stores.a]\nadapter = \"null\"\ndata_dir = \"d\"\nisolation = \"nobody\"\n";
        let err = ConfigFile::parse(isolation, base, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("nobody"), "{err}");
    }

    #[test]
    fn integrity_isolation_and_keys_are_read() -> Result<(), Error> {
        let text = "[stores.a]\nadapter = \"sqlite\"\ndata_dir = \"d\"\nseal = true\nuntagged = \"accept\"\nisolation = \"tenant\"\nkey_file = \"k.keys\"\n";
        let config = ConfigFile::parse(text, Path::new("/base"), None)?;
        let store = config.store(None)?;
        assert!(store.integrity.seal && store.integrity.tags);
        assert_eq!(store.integrity.untagged, Untagged::Accept);
        assert_eq!(store.isolation, Isolation::Tenant);
        assert_eq!(store.keys, KeySource::File(PathBuf::from("/base/k.keys")));
        Ok(())
    }

    #[test]
    fn paths_resolve_against_the_file_and_builtins_get_their_grants() -> Result<(), Error> {
        let text = "[stores.a]\nadapter = \"sqlite\"\ndata_dir = \"data\"\n[stores.a.limits]\ncall_timeout_ms = 250\n";
        let config = ConfigFile::parse(text, Path::new("/base"), None)?;
        let store = config.store(None)?;
        assert_eq!(store.data_dir, PathBuf::from("/base/data"));
        assert_eq!(store.grants, Grants::of(&[Capability::Sql]));
        assert_eq!(store.limits.call_timeout, std::time::Duration::from_millis(250));
        Ok(())
    }
}

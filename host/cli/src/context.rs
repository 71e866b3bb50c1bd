//! What every command needs: the configuration, the runtime, the scope.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use stowage::{ConfigFile, DEFAULT_CONFIG_FILE, Runtime, RuntimeConfig, Scope, Store, StoreConfig};

use crate::Global;

/// A mistake in what the user typed or supplied (exit code 2).
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

pub struct Context {
    pub global: Global,
    pub config: ConfigFile,
    pub runtime: Runtime,
}

/// `--config`/`STOWAGE_CONFIG`, else `./stowage.toml` when present, else the
/// embedded default (SQLite in `./stowage-data`).
fn load_config(explicit: Option<&Path>) -> anyhow::Result<ConfigFile> {
    if let Some(path) = explicit {
        if !path.exists() {
            return Err(bad_input(format!("configuration file {} does not exist", path.display())));
        }
        return Ok(ConfigFile::load(path)?);
    }
    let local = PathBuf::from(DEFAULT_CONFIG_FILE);
    if local.exists() {
        return Ok(ConfigFile::load(&local)?);
    }
    Ok(ConfigFile::embedded_default(Path::new(".")))
}

impl Context {
    pub fn new(global: Global) -> anyhow::Result<Self> {
        let config = load_config(global.config.as_deref())?;
        let runtime = Runtime::new(RuntimeConfig::default()).context("starting the wasm runtime")?;
        Ok(Self { global, config, runtime })
    }

    pub fn scope(&self) -> Scope {
        Scope::new(self.global.tenant.clone(), self.global.user.clone())
    }

    /// The configuration of `name`, or of `--store`, or the default store.
    pub fn store_config(&self, name: Option<&str>) -> anyhow::Result<StoreConfig> {
        Ok(self.config.store(name.or(self.global.store.as_deref()))?.clone())
    }

    pub async fn open_store(&self, name: Option<&str>) -> anyhow::Result<Store> {
        let config = self.store_config(name)?;
        let store_name = config.name.clone();
        self.runtime.open_store(config).await.with_context(|| format!("opening store `{store_name}`"))
    }
}

/// Reads a whole input: a file, or standard input for `-`.
pub fn read_input(file: &str) -> anyhow::Result<String> {
    if file == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).context("reading standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))
}

/// Prints `value` as pretty JSON.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

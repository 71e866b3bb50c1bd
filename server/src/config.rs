//! The `[server]` table of `stowage.toml`, read by this crate from the same file
//! the host reads its stores from (the host ignores the table).
//!
//! ```toml
//! [server]
//! listen = "127.0.0.1:7373"        # the default; loopback only
//! store = "main"                   # default: the file's default store
//! token_file = "tokens"            # lines `TENANT TOKEN` or `TENANT sha256:HEX`; mode 0600
//! max_body_bytes = 8388608         # request body cap (413 beyond)
//! tenant_concurrency = 32          # requests in flight per tenant (429 beyond)
//! tenant_streams = 16              # open event streams per tenant (429 beyond)
//! request_timeout_ms = 30000       # a handler that takes longer answers 504
//! header_read_timeout_ms = 10000   # a client that sends no request head in time is dropped
//! max_connections = 1024
//! drain_timeout_ms = 30000         # graceful shutdown waits at most this for requests in flight
//! replay_events = 1024             # display events kept per scope for Last-Event-ID resume
//! max_event_scopes = 10000         # scopes whose replay buffers are kept
//!
//! [[server.tokens]]
//! tenant = "acme"
//! sha256 = "…64 hex digits…"       # SHA-256 of the bearer token; never the token itself
//!
//! [server.tls]                     # needs the `tls` build feature
//! cert_file = "cert.pem"
//! key_file = "key.pem"
//! ```
//!
//! Unknown keys are errors; relative paths are relative to the file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::auth::{TokenHash, hash_token, parse_hex_hash};

/// Where the server listens unless told otherwise: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7373";

/// A configuration problem; the message names the key or file.
#[derive(Debug, thiserror::Error)]
#[error("server configuration: {0}")]
pub struct ConfigError(pub String);

fn err(message: impl Into<String>) -> ConfigError {
    ConfigError(message.into())
}

/// One bearer token, by its SHA-256, bound to one tenant.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenEntry {
    pub tenant: String,
    pub hash: TokenHash,
}

impl std::fmt::Debug for TokenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEntry").field("tenant", &self.tenant).finish_non_exhaustive()
    }
}

/// Limits and timeouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    pub max_body_bytes: usize,
    pub tenant_concurrency: u32,
    pub tenant_streams: u32,
    pub request_timeout: Duration,
    pub header_read_timeout: Duration,
    pub max_connections: u32,
    pub drain_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 8 << 20,
            tenant_concurrency: 32,
            tenant_streams: 16,
            request_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            drain_timeout: Duration::from_secs(30),
        }
    }
}

/// Replay buffers of display events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventOptions {
    /// Events kept per scope (tenant + user) for `Last-Event-ID` resume.
    pub replay_events: usize,
    /// Scopes whose buffers are kept; beyond this, idle ones are dropped.
    pub max_scopes: usize,
    /// Interval of SSE keep-alive comments.
    pub keep_alive: Duration,
}

impl Default for EventOptions {
    fn default() -> Self {
        Self { replay_events: 1024, max_scopes: 10_000, keep_alive: Duration::from_secs(15) }
    }
}

/// TLS certificate chain and key (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// Everything `stowage serve` needs besides the store.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// The store to serve (`None`: the configuration's default).
    pub store: Option<String>,
    pub tokens: Vec<TokenEntry>,
    pub limits: ServerLimits,
    pub events: EventOptions,
    pub tls: Option<TlsFiles>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 7373)),
            store: None,
            tokens: Vec::new(),
            limits: ServerLimits::default(),
            events: EventOptions::default(),
            tls: None,
        }
    }
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    server: Option<RawServer>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: Option<String>,
    store: Option<String>,
    token_file: Option<PathBuf>,
    #[serde(default)]
    tokens: Vec<RawToken>,
    max_body_bytes: Option<usize>,
    tenant_concurrency: Option<u32>,
    tenant_streams: Option<u32>,
    request_timeout_ms: Option<u64>,
    header_read_timeout_ms: Option<u64>,
    max_connections: Option<u32>,
    drain_timeout_ms: Option<u64>,
    replay_events: Option<usize>,
    max_event_scopes: Option<usize>,
    tls: Option<RawTls>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    tenant: String,
    sha256: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: PathBuf,
    key_file: PathBuf,
}

fn positive<T: PartialEq + Default + Copy>(name: &str, value: Option<T>, default: T) -> Result<T, ConfigError> {
    match value {
        Some(v) if v == T::default() => Err(err(format!("`server.{name}` must be greater than 0"))),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

fn millis(name: &str, value: Option<u64>, default: Duration) -> Result<Duration, ConfigError> {
    Ok(Duration::from_millis(positive(name, value, u64::try_from(default.as_millis()).unwrap_or(u64::MAX))?))
}

fn resolve(base: &Path, path: PathBuf) -> PathBuf {
    if path.is_relative() { base.join(path) } else { path }
}

impl ServerConfig {
    /// Parses the `[server]` table of a whole `stowage.toml` (other tables are
    /// the host's and not looked at). No table means every default and no tokens.
    pub fn parse(text: &str, base: &Path) -> Result<Self, ConfigError> {
        let raw: RawFile = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let raw = raw.server.unwrap_or_default();
        let defaults = ServerLimits::default();
        let listen_text = raw.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let listen = listen_text
            .parse()
            .map_err(|_| err(format!("`server.listen` = \"{listen_text}\" is not an address like 127.0.0.1:7373")))?;
        let limits = ServerLimits {
            max_body_bytes: positive("max_body_bytes", raw.max_body_bytes, defaults.max_body_bytes)?,
            tenant_concurrency: positive("tenant_concurrency", raw.tenant_concurrency, defaults.tenant_concurrency)?,
            tenant_streams: positive("tenant_streams", raw.tenant_streams, defaults.tenant_streams)?,
            request_timeout: millis("request_timeout_ms", raw.request_timeout_ms, defaults.request_timeout)?,
            header_read_timeout: millis(
                "header_read_timeout_ms",
                raw.header_read_timeout_ms,
                defaults.header_read_timeout,
            )?,
            max_connections: positive("max_connections", raw.max_connections, defaults.max_connections)?,
            drain_timeout: millis("drain_timeout_ms", raw.drain_timeout_ms, defaults.drain_timeout)?,
        };
        let event_defaults = EventOptions::default();
        let events = EventOptions {
            replay_events: positive("replay_events", raw.replay_events, event_defaults.replay_events)?,
            max_scopes: positive("max_event_scopes", raw.max_event_scopes, event_defaults.max_scopes)?,
            keep_alive: event_defaults.keep_alive,
        };
        let mut tokens = Vec::new();
        for (i, token) in raw.tokens.into_iter().enumerate() {
            let hash = parse_hex_hash(&token.sha256)
                .ok_or_else(|| err(format!("`server.tokens[{i}].sha256` must be 64 hex digits (a SHA-256)")))?;
            tokens.push(TokenEntry { tenant: token.tenant, hash });
        }
        if let Some(file) = raw.token_file {
            tokens.extend(read_token_file(&resolve(base, file))?);
        }
        let tls =
            raw.tls.map(|t| TlsFiles { cert_file: resolve(base, t.cert_file), key_file: resolve(base, t.key_file) });
        let config = Self { listen, store: raw.store, tokens, limits, events, tls };
        config.check_tokens()?;
        Ok(config)
    }

    /// Reads `path` (the same `stowage.toml` the host reads), or every default
    /// when there is no file.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let Some(path) = path else { return Ok(Self::default()) };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read {}: {e}", path.display())))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, &base).map_err(|e| err(format!("{}: {}", path.display(), e.0)))
    }

    /// A token bound to two tenants, or a tenant name the store would refuse.
    fn check_tokens(&self) -> Result<(), ConfigError> {
        let mut seen = std::collections::HashMap::new();
        for entry in &self.tokens {
            if entry.tenant.len() > stowage::MAX_SCOPE_BYTES || entry.tenant.chars().any(char::is_control) {
                return Err(err(format!("tenant `{}` is not a valid scope tenant", entry.tenant.escape_debug())));
            }
            if let Some(other) = seen.insert(entry.hash, &entry.tenant)
                && *other != entry.tenant
            {
                return Err(err(format!("one token is bound to two tenants (`{other}` and `{}`)", entry.tenant)));
            }
        }
        Ok(())
    }
}

/// Token file: one `TENANT TOKEN` or `TENANT sha256:HEX` per line; `#` starts a
/// comment. Refused when group or others may read it (it may hold plain tokens).
fn read_token_file(path: &Path) -> Result<Vec<TokenEntry>, ConfigError> {
    let shown = path.display();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path).map_err(|e| err(format!("token file {shown}: {e}")))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(err(format!("token file {shown} is readable by others; `chmod 600` it")));
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(format!("token file {shown}: {e}")))?;
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("token file {shown}, line {}", n + 1);
        let mut fields = line.split_whitespace();
        let (Some(tenant), Some(secret), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(err(format!("{}: expected `TENANT TOKEN` or `TENANT sha256:HEX`", at())));
        };
        let hash = match secret.strip_prefix("sha256:") {
            Some(hex) => parse_hex_hash(hex).ok_or_else(|| err(format!("{}: sha256 must be 64 hex digits", at())))?,
            None if secret.len() < 16 => return Err(err(format!("{}: tokens must be at least 16 characters", at()))),
            None => hash_token(secret),
        };
        entries.push(TokenEntry { tenant: tenant.to_owned(), hash });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_listen_on_loopback() -> Result<(), ConfigError> {
        let config = ServerConfig::parse("[stores.a]\nadapter = \"null\"\n", Path::new("/"))?;
        assert!(config.listen.ip().is_loopback());
        assert!(config.tokens.is_empty() && config.tls.is_none());
        Ok(())
    }

    #[test]
    fn tokens_limits_and_typos() -> Result<(), ConfigError> {
        let hash = "a".repeat(64);
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ntenant_concurrency = 2\n[[server.tokens]]\ntenant = \"acme\"\nsha256 = \"{hash}\"\n"
        );
        let config = ServerConfig::parse(&text, Path::new("/"))?;
        assert_eq!(config.tokens.len(), 1);
        assert_eq!(config.limits.tenant_concurrency, 2);
        let typo = ServerConfig::parse("[server]\nlisen = \"x\"\n", Path::new("/")).map(|_| ()).unwrap_err();
        assert!(typo.0.contains("lisen"), "{typo}");
        let zero = ServerConfig::parse("[server]\nmax_body_bytes = 0\n", Path::new("/")).map(|_| ()).unwrap_err();
        assert!(zero.0.contains("max_body_bytes"), "{zero}");
        let twice = format!(
            "[[server.tokens]]\ntenant = \"a\"\nsha256 = \"{hash}\"\n[[server.tokens]]\ntenant = \"b\"\nsha256 = \"{hash}\"\n"
        );
        let twice = ServerConfig::parse(&twice, Path::new("/")).map(|_| ()).unwrap_err();
        assert!(twice.0.contains("two tenants"), "{twice}");
        Ok(())
    }
}

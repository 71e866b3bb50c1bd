//! Connection managers with or without TLS.
//!
//! TLS is used when the URL says `sslmode=require` (or libpq's `verify-ca` /
//! `verify-full`, read as `require`): the server's certificate is always
//! verified, name included, against the system's trust store or, with
//! `sslrootcert=<file>` (PEM), against that file's certificates only. It needs
//! the host's `postgres-tls` cargo feature; without it such a URL is refused when
//! the store opens. `sslmode=prefer` (the default) and `disable` connect without
//! TLS: a TLS attempt that cannot verify the server would fail, not fall back.

use std::path::PathBuf;

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod};
use tokio_postgres::config::SslMode;
use tokio_postgres::{Config, NoTls};

/// Decodes `%XX` escapes (invalid ones are kept as they are).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Takes what tokio-postgres does not parse out of a `postgres://` URL:
/// `sslrootcert`, and `sslmode=verify-ca|verify-full` (kept as `require`).
pub fn take_extras(url: &str) -> (String, Option<PathBuf>) {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((head, query)) = url.split_once('?').filter(|_| is_url) else { return (url.to_owned(), None) };
    let mut root_cert = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("sslrootcert", file)) => root_cert = Some(PathBuf::from(percent_decode(file))),
            Some(("sslmode", "verify-ca" | "verify-full")) => kept.push("sslmode=require"),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() { head.to_owned() } else { format!("{head}?{}", kept.join("&")) };
    (url, root_cert)
}

/// A connection manager for `config`, trusting `root_cert` (PEM) if given.
pub fn manager(config: Config, root_cert: Option<PathBuf>) -> Result<Manager, String> {
    // Connections only return to the pool outside a transaction, so checking
    // that they are still open is enough.
    let settings = ManagerConfig { recycling_method: RecyclingMethod::Fast };
    if config.get_ssl_mode() != SslMode::Require {
        if root_cert.is_some() {
            return Err("`sslrootcert` is set, but TLS is not: add sslmode=require".into());
        }
        return Ok(Manager::from_config(config, NoTls, settings));
    }
    tls_manager(config, root_cert, settings)
}

#[cfg(feature = "postgres-tls")]
fn tls_manager(config: Config, root_cert: Option<PathBuf>, settings: ManagerConfig) -> Result<Manager, String> {
    use std::sync::Arc;

    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(file) => {
            let certs = CertificateDer::pem_file_iter(&file)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("reading sslrootcert {}: {e}", file.display()))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!("sslrootcert {} holds no usable certificate", file.display()));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(format!("sslmode=require, but the system's trust store is empty: {:?}", found.errors));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("setting up TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Manager::from_config(config, tokio_postgres_rustls::MakeRustlsConnect::new(tls), settings))
}

#[cfg(not(feature = "postgres-tls"))]
fn tls_manager(_: Config, _: Option<PathBuf>, _: ManagerConfig) -> Result<Manager, String> {
    Err("sslmode=require, but this build of stowage has no TLS for PostgreSQL (cargo feature `postgres-tls`)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_only_settings_are_taken_out_of_the_url() {
        let (url, root) = take_extras("postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&x=1");
        assert_eq!(url, "postgres://u@h/db?sslmode=require&x=1");
        assert_eq!(root, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(take_extras("host=h sslmode=require"), ("host=h sslmode=require".into(), None));
        assert_eq!(take_extras("postgres://h/db?sslrootcert=a").0, "postgres://h/db");
    }
}

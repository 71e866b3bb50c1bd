//! HTTPS through rustls (build feature `tls`; the `ring` provider, TLS 1.2 and
//! 1.3, no client certificates). The certificate chain and the private key are
//! PEM files named in `[server.tls]`.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

use crate::config::TlsFiles;

/// Accepts TLS connections.
pub type Acceptor = TlsAcceptor;

/// Builds the acceptor from the configured files.
pub fn acceptor(files: &TlsFiles) -> Result<Acceptor, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert_file)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| format!("certificate chain {}: {e}", files.cert_file.display()))?;
    if certs.is_empty() {
        return Err(format!("certificate chain {} holds no certificate", files.cert_file.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key_file)
        .map_err(|e| format!("private key {}: {e}", files.key_file.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate and key do not fit: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

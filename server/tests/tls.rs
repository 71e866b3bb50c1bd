//! HTTPS (feature `tls`): the API over rustls with a checked-in self-signed
//! certificate for localhost / 127.0.0.1 (tests/tls/, valid for 100 years).

#![cfg(feature = "tls")]

mod support;

use std::path::PathBuf;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use stowage_server::config::TlsFiles;
use support::{Result, TestServer};
use tokio_rustls::{TlsConnector, rustls};

fn files() -> TlsFiles {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
    TlsFiles { cert_file: dir.join("cert.pem"), key_file: dir.join("key.pem") }
}

#[tokio::test]
async fn the_api_is_served_over_tls_and_plain_http_is_not() -> Result<()> {
    let mut server = TestServer::start(|c| c.tls = Some(files())).await?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(files().cert_file)?)?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.addr).await?;
    let tls = TlsConnector::from(Arc::new(config)).connect(ServerName::try_from("localhost")?, tcp).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(connection);
    let request = hyper::Request::get("/v1/conversations")
        .header("host", "localhost")
        .header("authorization", format!("Bearer {}", support::TOKEN_ACME))
        .body(Full::new(Bytes::new()))?;
    let response = sender.send_request(request).await?;
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await?.to_bytes();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&body)?["conversations"], serde_json::json!([]));
    drop(sender);

    // Plain HTTP to the TLS port gets no HTTP answer.
    let plain = server.acme().get("/healthz").await;
    assert!(plain.is_err() || plain.is_ok_and(|r| r.status != 200));
    server.stop().await
}

//! Servers over TLS whose certificate a private CA signed, the CA made by the test (rcgen):
//! what a server behind a company CA looks like to the host. [`TlsFront`] puts a TLS acceptor
//! (tokio-rustls) in front of one of the tests' plain-HTTP servers on 127.0.0.1 (the scripted
//! model, `host mcp --http`) and forwards each connection's bytes to it, so the server
//! itself is the one the other tests use.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// A CA of the test's own, and a server certificate it signed for `localhost` and
/// `127.0.0.1`. No machine's trust store has it.
pub struct PrivateCa {
    _dir: tempfile::TempDir,
    pem_file: PathBuf,
    acceptor: TlsAcceptor,
}

impl PrivateCa {
    /// A new CA, its certificate written to a PEM file, and the server certificate.
    pub fn new() -> Self {
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "toolhost tests' private CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).expect("the CA's certificate");
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate().expect("a server key");
        let mut server = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("server parameters");
        server
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        server.use_authority_key_identifier_extension = true;
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = server
            .signed_by(&key, &issuer)
            .expect("the server's certificate");

        let dir = tempfile::tempdir().expect("a temporary directory");
        let pem_file = dir.path().join("private-ca.pem");
        std::fs::write(&pem_file, ca_cert.pem()).expect("the CA's PEM file is written");

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(server_cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("a server configuration");
        Self {
            _dir: dir,
            pem_file,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        }
    }

    /// The CA's certificate as a PEM file: what `TOOLHOST_CA_BUNDLE` names.
    pub fn pem_file(&self) -> &Path {
        &self.pem_file
    }
}

impl Default for PrivateCa {
    fn default() -> Self {
        Self::new()
    }
}

/// A TLS acceptor on a free port of 127.0.0.1 with `ca`'s server certificate, forwarding
/// every connection to a plain-HTTP server. It stops when dropped.
pub struct TlsFront {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsFront {
    /// Starts one in front of the server at `backend` (`127.0.0.1:PORT`).
    pub async fn start(ca: &PrivateCa, backend: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().expect("a bound address");
        let acceptor = ca.acceptor.clone();
        let backend = backend.to_owned();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, backend) = (acceptor.clone(), backend.clone());
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake: nothing to
                    // forward then.
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(&backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self { addr, task }
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }
}

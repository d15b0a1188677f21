//! One TLS set-up for every connection the host makes itself: to model servers, MCP servers
//! at a URL, their OAuth authorization servers, and OCI registries.
//!
//! - **Crypto**: rustls with ring, installed once as the process's default provider
//!   ([`install_crypto_provider`]); an application that installed another provider first
//!   keeps it.
//! - **Trust**: the platform's roots, through rustls-platform-verifier (what reqwest 0.13
//!   uses): on Linux the system's CA files (`/etc/ssl/certs`; the `SSL_CERT_FILE` and
//!   `SSL_CERT_DIR` variables name others *instead*, as for OpenSSL), on macOS and Windows the
//!   system's trust store. Plus the certificates of the PEM file that
//!   [`CA_BUNDLE_VARIABLE`] (`TOOLHOST_CA_BUNDLE`) names, *in addition* to those: a company CA,
//!   or a private one.
//!
//! Tools' own HTTPS requests (`sandbox::egress`) do not use this: a sandboxed tool trusts
//! Mozilla's roots (webpki-roots) on every machine, as wasmtime-wasi-http does, whatever the
//! host machine's store holds.

use std::error::Error;
use std::path::PathBuf;
use std::sync::Once;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

/// The environment variable naming a PEM file of CA certificates that every connection the
/// host makes itself trusts besides the platform's roots.
pub const CA_BUNDLE_VARIABLE: &str = "TOOLHOST_CA_BUNDLE";

/// What to do about a server certificate that is not trusted, for the errors that say so.
pub(crate) const UNTRUSTED_ADVICE: &str = "if a private or company CA issued it, name the CA's \
     PEM file in the environment variable TOOLHOST_CA_BUNDLE (or add the CA to the system's \
     trust store)";

/// The largest CA bundle read: the whole Mozilla set is about 200 KiB.
const MAX_BUNDLE_SIZE: u64 = 16 * 1024 * 1024;

/// The file [`CA_BUNDLE_VARIABLE`] names cannot be used.
#[derive(Debug, thiserror::Error)]
#[error(
    "the environment variable {CA_BUNDLE_VARIABLE} names {}, which {problem}; name a PEM file \
     of CA certificates, or unset it",
    path.display()
)]
pub struct CaBundleError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    problem: &'static str,
    /// The reading or parsing error, if there is one.
    #[source]
    source: Option<Box<dyn Error + Send + Sync + 'static>>,
}

/// Makes ring the process's default rustls provider, once, unless the application installed
/// one before (reqwest 0.13, rmcp's and oci-client's HTTP clients, built without a provider
/// of their own, use the process's default, and panic without one).
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The certificates of the file [`CA_BUNDLE_VARIABLE`] names (none when it is unset or
/// empty), in DER. A file that cannot be read, or holds no certificate or a malformed one, is
/// an error naming the variable.
pub(crate) fn extra_roots() -> Result<Vec<CertificateDer<'static>>, CaBundleError> {
    match std::env::var_os(CA_BUNDLE_VARIABLE) {
        Some(path) if !path.is_empty() => read_bundle(PathBuf::from(path)),
        _ => Ok(Vec::new()),
    }
}

fn read_bundle(path: PathBuf) -> Result<Vec<CertificateDer<'static>>, CaBundleError> {
    let error = |problem, source: Option<Box<dyn Error + Send + Sync>>| CaBundleError {
        path: path.clone(),
        problem,
        source,
    };
    let bytes = crate::file::read(&path, MAX_BUNDLE_SIZE, "a CA bundle")
        .map_err(|e| error("cannot be read", Some(e.into())))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error("is not a readable PEM file", Some(e.into())))?;
    if certs.is_empty() {
        return Err(error("holds no `BEGIN CERTIFICATE` block", None));
    }
    Ok(certs)
}

/// A reqwest client builder with the host's TLS: the crypto provider installed, and the
/// platform's roots plus [`extra_roots`].
pub(crate) fn client_builder() -> Result<reqwest::ClientBuilder, CaBundleError> {
    install_crypto_provider();
    let extra = extra_roots()?;
    let builder = reqwest::Client::builder();
    if extra.is_empty() {
        return Ok(builder);
    }
    let path = || PathBuf::from(std::env::var_os(CA_BUNDLE_VARIABLE).unwrap_or_default());
    let certs = extra
        .iter()
        .map(|der| reqwest::Certificate::from_der(der))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CaBundleError {
            path: path(),
            problem: "holds a certificate reqwest cannot use",
            source: Some(e.into()),
        })?;
    Ok(builder.tls_certs_merge(certs))
}

/// Whether `error`, or a cause under it, is a server certificate rustls refused (an unknown
/// issuer, a wrong name, an expired certificate).
pub(crate) fn is_untrusted_certificate(error: &(dyn Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if matches!(
            rustls_error(current),
            Some(rustls::Error::InvalidCertificate(_))
        ) {
            return true;
        }
        cause = current.source();
    }
    false
}

/// `error` as rustls's error, also when it is wrapped in `io::Error`s (tokio-rustls wraps it
/// in one, hyper-rustls that in another): an `io::Error`'s `source()` skips the error it
/// wraps, so the chain of causes alone never reaches it.
fn rustls_error<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(refused) = error.downcast_ref::<rustls::Error>() {
        return Some(refused);
    }
    let wrapped = error.downcast_ref::<std::io::Error>()?.get_ref()?;
    rustls_error(wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_certificates_is_refused_with_the_variable_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let error = read_bundle(empty.clone()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "the environment variable TOOLHOST_CA_BUNDLE names {}, which holds no `BEGIN \
                 CERTIFICATE` block; name a PEM file of CA certificates, or unset it",
                empty.display()
            )
        );
        let missing = dir.path().join("missing.pem");
        let error = read_bundle(missing).unwrap_err();
        assert!(
            error.to_string().contains("which cannot be read"),
            "{error}"
        );
        assert!(error.source().is_some());
    }

    #[test]
    fn a_refused_certificate_is_found_inside_an_io_error() {
        let refused = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, refused);
        assert!(is_untrusted_certificate(&io));
        let twice = std::io::Error::other(io);
        assert!(is_untrusted_certificate(&twice));
        let other = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(!is_untrusted_certificate(&other));
    }
}

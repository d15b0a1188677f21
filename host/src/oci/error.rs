//! Why a component could not be pulled, pushed, pinned or verified. Every variant names the
//! reference (or the file) it is about and, where there is one, the fix.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong with an OCI component.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// The text is not an `oci://` reference.
    #[error("`{reference}` is not a component reference: {problem}")]
    InvalidReference {
        /// The text.
        reference: String,
        /// What is wrong and what to write.
        problem: String,
    },
    /// The registry's TLS certificate was refused (not issued by a CA the host trusts, for
    /// another name, expired): never taken for a registry that is down.
    #[error(
        "{reference}: the registry's TLS certificate is not trusted: {}",
        crate::tls::UNTRUSTED_ADVICE
    )]
    Untrusted {
        /// The reference.
        reference: String,
        /// What the HTTP client said (rustls's reason under it).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The registry answered with an error, or could not be spoken to.
    #[error("{reference}: the registry {action} failed")]
    Registry {
        /// The reference.
        reference: String,
        /// What was asked (`manifest request`, `blob download`, `upload`).
        action: &'static str,
        /// What oci-client or the HTTP client said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The registry could not be reached and the cache has nothing for the reference.
    #[error(
        "{reference}: the registry cannot be reached and the cache has no copy of it (pull it \
         once while the registry is up: `host pull {reference}`)"
    )]
    Offline {
        /// The reference.
        reference: String,
        /// Why the registry could not be reached.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The registry did not finish in time.
    #[error(
        "{reference}: the registry did not finish within {} (a registry that stalls, or a \
         slow link: raise [oci] timeout in the manifest, or --timeout)",
        humantime::format_duration(*after)
    )]
    Timeout {
        /// The reference.
        reference: String,
        /// The limit.
        after: Duration,
    },
    /// The registry sent (or announced) more than a component or a manifest may be.
    #[error("{reference}: the {what} is larger than {}; refused without storing it", crate::units::format_bytes(*limit))]
    TooLarge {
        /// The reference.
        reference: String,
        /// `manifest`, `component layer`, `signature`.
        what: &'static str,
        /// The limit in bytes.
        limit: u64,
    },
    /// The artifact is not a WebAssembly component in the CNCF wasm layout.
    #[error(
        "{reference} is not a WebAssembly component artifact: {problem} (push components with \
         `host push`, `wkg oci push` or oras with config media type \
         application/vnd.wasm.config.v0+json and one application/wasm layer)"
    )]
    NotAComponent {
        /// The reference.
        reference: String,
        /// What the manifest has instead.
        problem: String,
    },
    /// Bytes do not hash to the digest that names them.
    #[error(
        "{reference}: the {what} does not match its digest (expected {expected}, got \
         {actual}); nothing was stored: the registry or something between it and here altered it"
    )]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// `manifest`, `component layer`, `cached component`.
        what: &'static str,
        /// The digest that names the bytes.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// Under a lock file, the tag points somewhere else than the lock says.
    #[error(
        "{reference}: the tag now points to {now}, but {} pins {locked}; if the new one is \
         wanted, run `host lock` again (check why it moved first)",
        lock.display()
    )]
    TagMoved {
        /// The reference.
        reference: String,
        /// The digest the lock file pins.
        locked: String,
        /// The digest the tag points to now.
        now: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// A lock file exists, and the reference is not in it.
    #[error(
        "{reference} is not pinned in {}: run `host lock` to pin it (or remove the lock file)",
        lock.display()
    )]
    NotLocked {
        /// The reference.
        reference: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// A signature was required and none could be verified.
    #[error("{reference} ({digest}): {problem}")]
    Signature {
        /// The reference.
        reference: String,
        /// The manifest digest whose signature was checked.
        digest: String,
        /// What is missing or wrong, and what to do.
        problem: String,
    },
    /// A key file cannot be used.
    #[error("key {}: {problem}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The cache of pulled components cannot be used.
    #[error("the cache of pulled components at {}: {problem}", path.display())]
    Store {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong, and how to fix it.
        problem: String,
    },
    /// The Docker config cannot be read.
    #[error("registry credentials in {}: {problem}", path.display())]
    Credentials {
        /// The config file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A local file (a component to push, a lock file) cannot be used.
    #[error("{}: {problem}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

impl OciError {
    /// A registry error for `reference` while doing `action`.
    pub(crate) fn registry(
        reference: &impl std::fmt::Display,
        action: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        let source = source.into();
        if crate::tls::is_untrusted_certificate(source.as_ref()) {
            return Self::Untrusted {
                reference: reference.to_string(),
                source,
            };
        }
        Self::Registry {
            reference: reference.to_string(),
            action,
            source,
        }
    }

    /// Whether the registry was not reached at all (so a cached copy may be used instead).
    pub(crate) fn is_unreachable(&self) -> bool {
        let Self::Registry { source, .. } = self else {
            return false;
        };
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(source.as_ref());
        while let Some(error) = cause {
            if let Some(io) = error.downcast_ref::<std::io::Error>()
                && matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionRefused
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::HostUnreachable
                        | std::io::ErrorKind::NetworkUnreachable
                )
            {
                return true;
            }
            if let Some(http) = error.downcast_ref::<reqwest::Error>()
                && http.is_connect()
            {
                return true;
            }
            cause = error.source();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_certificate_names_the_setting_and_is_no_registry_that_is_down() {
        let refused = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            refused,
        ));
        let error = OciError::registry(&"oci://registry.example/tools/x:1", "manifest request", io);
        assert!(matches!(error, OciError::Untrusted { .. }), "{error:?}");
        assert!(!error.is_unreachable());
        assert!(error.to_string().contains("TOOLHOST_CA_BUNDLE"), "{error}");
    }
}

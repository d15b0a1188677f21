//! The TLS provider rmcp's HTTP client needs.

use std::sync::Once;

/// rmcp's HTTP client (reqwest 0.13, built without a TLS provider of its own) uses the
/// process's default rustls provider, and panics without one: make it ring, which the host's
/// other HTTP client already builds. An application that installed another provider keeps it.
pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

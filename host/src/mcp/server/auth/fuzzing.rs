//! The decoders of what arrives from outside, for the fuzz target
//! (`fuzz/fuzz_targets/access_token.rs`), without the network: a bearer token read as a JWT
//! and checked against a key set and issuer metadata that are themselves arbitrary bytes.

use std::time::Duration;

use serde_json::Value;

use super::jwt::{self, Expected};
use super::keys::{self, JwkSetDocument};
use super::metadata::IssuerMetadata;

/// Splits `data` at the first two `0xFF` bytes into a token, issuer metadata and a JWK Set,
/// and runs them through the decoders and checks `host mcp --http` runs on them. Never
/// panics, whatever the bytes.
pub fn access_token(data: &[u8]) {
    let mut parts = data.splitn(3, |byte| *byte == 0xFF);
    let token = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let metadata = parts.next().unwrap_or_default();
    let jwks = parts.next().unwrap_or_default();
    let metadata = serde_json::from_slice::<IssuerMetadata>(metadata).unwrap_or(IssuerMetadata {
        issuer: "http://127.0.0.1:1".to_owned(),
        jwks_uri: None,
        introspection_endpoint: None,
        id_token_signing_alg_values_supported: None,
    });
    let document =
        serde_json::from_slice::<JwkSetDocument>(jwks).unwrap_or_else(|_| JwkSetDocument {
            keys: Vec::<Value>::new(),
        });
    let set = keys::key_set(document, &metadata);
    let _ = jwt::looks_like_jwt(&token);
    let Ok(header) = jwt::header(&token) else {
        return;
    };
    let Some(key) = set.find(header.kid.as_deref()) else {
        return;
    };
    let issuers = [metadata.issuer.clone()];
    let audiences = ["http://127.0.0.1:1/mcp".to_owned()];
    let expected = Expected {
        issuers: &issuers,
        audiences: &audiences,
        leeway: Duration::from_secs(60),
    };
    let _ = jwt::checked(&token, &header, &key, &set, &expected);
}

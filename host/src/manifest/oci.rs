//! `[oci]`: components from OCI registries: which signatures are required, which key checks a
//! registry's components, which registries speak plain HTTP, and how long a pull may take.
//!
//! ```toml
//! [oci]
//! require_signatures = true        # every oci:// component must carry a verified signature
//! timeout = "60s"                  # a pull, first request to last byte (default 2m)
//!
//! [oci.registries."registry.example.com"]
//! verify = { key = "keys/acme.pub" }   # cosign public key for its components
//!
//! [oci.registries."registry.lan:5000"]
//! plain_http = true                # HTTP, not HTTPS (loopback registries always may)
//!
//! [components.calculator]
//! path = "oci://registry.example.com/tools/calculator:1"
//! verify = { key = "keys/calculator.pub" }   # over the registry's
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::units::HumanDuration;

/// The `[oci]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciSection {
    /// Refuse any `oci://` component without a signature that verifies with its key.
    #[serde(default)]
    pub require_signatures: bool,
    /// How long a pull may take, from the first request to the last byte.
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Settings per registry, by `host[:port]` as references write it.
    #[serde(default)]
    pub registries: BTreeMap<String, RegistryEntry>,
}

/// One registry's settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryEntry {
    /// Speak plain HTTP to it (loopback registries always may).
    #[serde(default)]
    pub plain_http: bool,
    /// The key its components' signatures are checked with.
    #[serde(default)]
    pub verify: Option<VerifyEntry>,
}

/// How signatures are checked: against a public key (cosign's `--key`).
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "VerifyKeys")]
pub struct VerifyEntry {
    /// A P-256 public key in PEM (what `cosign generate-key-pair` writes as `cosign.pub`),
    /// relative to the manifest's directory.
    pub key: PathBuf,
}

/// `verify` as written: a key, or the keyless form (`identity`, `issuer`), which is refused
/// with why rather than as an unknown key, so it is never taken for no policy.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyKeys {
    key: Option<PathBuf>,
    identity: Option<String>,
    issuer: Option<String>,
}

impl TryFrom<VerifyKeys> for VerifyEntry {
    type Error = String;

    fn try_from(keys: VerifyKeys) -> Result<Self, String> {
        match keys {
            VerifyKeys {
                identity: None,
                issuer: None,
                key: Some(key),
            } => Ok(Self { key }),
            VerifyKeys {
                identity: None,
                issuer: None,
                key: None,
            } => Err("`verify` names no key: write verify = { key = \"keys/NAME.pub\" }".into()),
            _ => Err(
                "keyless verification (`identity`, `issuer`) is not supported: it needs \
                 Sigstore's trust root and transparency log, online; verify with a public key: \
                 verify = { key = \"keys/NAME.pub\" } (docs/sharing.md)"
                    .into(),
            ),
        }
    }
}

//! Components from OCI registries: `oci://REGISTRY/REPO:TAG` or `oci://REGISTRY/REPO@sha256:...`
//! wherever a component path is accepted, pulled once, verified and kept by digest; pushed,
//! pinned by a lock file, and signed the way cosign signs.
//!
//! ```no_run
//! # async fn example() -> Result<(), toolhost::oci::OciError> {
//! use toolhost::oci::{ComponentRef, PullPolicy, Store, pull};
//! let reference = ComponentRef::parse("oci://127.0.0.1:5000/tools/calculator:1")?;
//! let pulled = pull(&reference, &PullPolicy::default(), &Store::open_default()?).await?;
//! println!("{} is {} at {}", reference, pulled.digest, pulled.path.display());
//! # Ok(()) }
//! ```
//!
//! The artifacts follow the CNCF wasm OCI artifact layout (`artifact`), so what `wkg oci push`
//! or `oras push` make is pulled here, and the other way round. Registries are spoken to
//! through oci-client (`registry`), but what a pull reads, manifests and blobs, is asked for by
//! the host itself, each with a size bound and a span of its own (`request`). What is pulled
//! is kept in the cache (`store`) only once every check passed.

mod artifact;
mod credentials;
mod error;
mod lock;
mod pull;
mod push;
mod reference;
mod registry;
mod request;
mod sign;
mod store;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use artifact::{MANIFEST_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
pub use error::OciError;
pub use lock::{LOCK_FILE, Lock};
pub use pull::{DEFAULT_TIMEOUT, PullPolicy, Pulled, pull};
pub use push::{Pushed, push};
pub use reference::{ComponentRef, SCHEME, is_oci};
pub use registry::MAX_MANIFEST_SIZE;
pub use sign::{PAYLOAD_MEDIA_TYPE, SIGNATURE_ANNOTATION, public_key_pem, signature_tag};
pub use store::Store;

use crate::manifest::{ComponentEntry, Manifest};

/// What to check when pulling the component `entry` of `manifest`: its registry's settings
/// (`[oci.registries."HOST"]`), its own `verify` over the registry's, whether signatures are
/// required, the pull timeout, and the lock file beside the manifest. Key paths are resolved
/// against the manifest's directory.
pub fn policy_for(manifest: &Manifest, entry: &ComponentEntry) -> PullPolicy {
    let base = manifest.base_dir();
    let registry = entry
        .path
        .to_str()
        .and_then(|text| ComponentRef::parse(text).ok())
        .and_then(|reference| manifest.oci.registries.get(&reference.registry));
    let key = entry
        .verify
        .as_ref()
        .or_else(|| registry.and_then(|registry| registry.verify.as_ref()))
        .map(|verify| base.join(&verify.key));
    PullPolicy {
        plain_http: registry.is_some_and(|registry| registry.plain_http),
        key,
        require_signature: manifest.oci.require_signatures,
        lock: manifest.path.as_deref().map(Lock::path_beside),
        timeout: manifest.oci.timeout.map(|timeout| timeout.0),
    }
}

/// Pulls the component `text` names (an `oci://` reference) into the default store.
pub async fn fetch(text: &str, policy: &PullPolicy) -> Result<Pulled, OciError> {
    let reference = ComponentRef::parse(text)?;
    let store = Store::open_default()?;
    pull(&reference, policy, &store).await
}

/// Signs the component `reference` names with the private key at `key`: resolves it to its
/// manifest digest (checking it is a component), and adds a cosign signature to its
/// `sha256-<hex>.sig` tag. Returns the reference by digest and the signature tag's.
pub async fn sign(
    reference: &ComponentRef,
    key: &Path,
    plain_http: bool,
    timeout: Duration,
) -> Result<(ComponentRef, ComponentRef), OciError> {
    sign::read_private_key(key)?;
    let policy = PullPolicy {
        plain_http,
        timeout: Some(timeout),
        ..PullPolicy::default()
    };
    let pulled = pull(reference, &policy, &Store::open_default()?).await?;
    let registry = registry::Registry::new(reference, plain_http, timeout)?;
    let tag = tokio::time::timeout(timeout, sign::sign(&registry, &pulled.reference, key))
        .await
        .map_err(|_| OciError::Timeout {
            reference: reference.to_string(),
            after: timeout,
        })??;
    Ok((pulled.reference, tag))
}

/// The name a component is known by when only its reference is given: the last part of its
/// repository (`oci://r/tools/calculator:1` is `calculator`).
pub fn short_name(text: &str) -> Option<String> {
    let reference = ComponentRef::parse(text).ok()?;
    reference.repository.rsplit('/').next().map(str::to_owned)
}

/// Where the lock file of the manifest at `manifest` is.
pub fn lock_path(manifest: &Path) -> PathBuf {
    Lock::path_beside(manifest)
}

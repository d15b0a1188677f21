//! Pulling a component: resolve its tag (or take its digest), check the manifest is a wasm
//! artifact, check the pin and the signature, download the layer within its declared size,
//! verify it against its digest, and only then store it. With the registry unreachable, a
//! reference pulled before is served from the store (a tag through its record), with its
//! signature verified again from what was stored.

use std::path::PathBuf;
use std::time::Duration;

use crate::oci::artifact;
use crate::oci::error::OciError;
use crate::oci::lock::Lock;
use crate::oci::reference::ComponentRef;
use crate::oci::registry::{MAX_MANIFEST_SIZE, Registry};
use crate::oci::sign;
use crate::oci::store::{Store, StoredSignature};

/// How long a pull may take, from the first request to the last byte, unless set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// What a pull must check, and how.
#[derive(Debug, Clone, Default)]
pub struct PullPolicy {
    /// Speak plain HTTP to this registry although it is not on loopback (the manifest's
    /// `plain_http` for the registry).
    pub plain_http: bool,
    /// Verify the cosign signature with this public key (PEM).
    pub key: Option<PathBuf>,
    /// Refuse the component unless a signature verifies (needs `key`).
    pub require_signature: bool,
    /// The lock file to pin tags with (`toolhost.lock` beside the manifest); nothing is
    /// pinned when the file does not exist.
    pub lock: Option<PathBuf>,
    /// How long the pull may take; [`DEFAULT_TIMEOUT`] when unset.
    pub timeout: Option<Duration>,
}

/// A component that was pulled (or found in the store), verified.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference, with the digest it resolved to.
    pub reference: ComponentRef,
    /// The manifest's digest.
    pub digest: String,
    /// The component layer's digest (the SHA-256 of the component's bytes).
    pub layer_digest: String,
    /// The component file in the store.
    pub path: PathBuf,
    /// Whether it came from the store without asking the registry.
    pub offline: bool,
    /// Whether a signature was verified.
    pub verified: bool,
}

/// Pulls `reference` under `policy` into `store`, in a span (`oci pull`) whose children are
/// the requests to the registry.
#[tracing::instrument(
    name = "oci_pull",
    skip_all,
    fields(otel.name = "oci pull", oci.reference = %reference)
)]
pub async fn pull(
    reference: &ComponentRef,
    policy: &PullPolicy,
    store: &Store,
) -> Result<Pulled, OciError> {
    let timeout = policy.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let pinned = pinned(reference, policy)?;
    match tokio::time::timeout(
        timeout,
        pull_within(reference, policy, store, pinned, timeout),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(OciError::Timeout {
            reference: reference.to_string(),
            after: timeout,
        }),
    }
}

/// The digest the lock file pins a tag reference to; `None` for a digest reference or
/// without a lock file.
fn pinned(reference: &ComponentRef, policy: &PullPolicy) -> Result<Option<String>, OciError> {
    if reference.digest.is_some() {
        return Ok(None);
    }
    let Some(path) = &policy.lock else {
        return Ok(None);
    };
    let Some(lock) = Lock::read(path)? else {
        return Ok(None);
    };
    match lock.pin(reference) {
        Some(digest) => Ok(Some(digest.to_owned())),
        None => Err(OciError::NotLocked {
            reference: reference.to_string(),
            lock: path.clone(),
        }),
    }
}

async fn pull_within(
    reference: &ComponentRef,
    policy: &PullPolicy,
    store: &Store,
    pinned: Option<String>,
    timeout: Duration,
) -> Result<Pulled, OciError> {
    if let Some(digest) = &reference.digest
        && let Some(pulled) = from_store(reference, digest, policy, store)?
    {
        return Ok(pulled);
    }
    let registry = Registry::new(reference, policy.plain_http, timeout)?;
    let manifest = match registry.manifest(reference, MAX_MANIFEST_SIZE).await {
        Ok(manifest) => manifest,
        Err(error) if error.is_unreachable() => {
            return offline(reference, policy, store, pinned, error);
        }
        Err(error) => return Err(error),
    };
    check_pin(reference, &manifest.digest, pinned, policy)?;
    let resolved = reference.with_digest(&manifest.digest);
    let parsed =
        artifact::parse_manifest(&resolved, &manifest.bytes, manifest.content_type.as_deref())?;
    let layer = artifact::component_layer(&resolved, &parsed, crate::file::MAX_COMPONENT_SIZE)?;
    let signatures = signatures_of(&registry, &resolved, policy).await?;
    let path = match store.blob(&layer.digest)? {
        Some(path) => path,
        None => {
            let bytes = registry.blob(&resolved, &layer, "component layer").await?;
            crate::file::check_component_header(&bytes).map_err(|problem| {
                OciError::NotAComponent {
                    reference: resolved.to_string(),
                    problem,
                }
            })?;
            store.put_blob(&bytes)?
        }
    };
    store.put_blob(&manifest.bytes)?;
    if !signatures.is_empty() {
        store.set_signatures(&manifest.digest, &signatures)?;
    }
    if reference.tag.is_some() && reference.digest.is_none() {
        store.set_tag(reference, &manifest.digest)?;
    }
    Ok(Pulled {
        reference: resolved,
        digest: manifest.digest,
        layer_digest: layer.digest,
        path,
        offline: false,
        verified: policy.key.is_some(),
    })
}

/// The digest a reference resolved to must be the one it names, and the one the lock pins.
fn check_pin(
    reference: &ComponentRef,
    digest: &str,
    pinned: Option<String>,
    policy: &PullPolicy,
) -> Result<(), OciError> {
    if let Some(expected) = &reference.digest
        && digest != expected
    {
        return Err(OciError::DigestMismatch {
            reference: reference.to_string(),
            what: "manifest",
            expected: expected.clone(),
            actual: digest.to_owned(),
        });
    }
    match pinned {
        Some(locked) if locked != digest => Err(OciError::TagMoved {
            reference: reference.to_string(),
            locked,
            now: digest.to_owned(),
            lock: policy.lock.clone().unwrap_or_default(),
        }),
        _ => Ok(()),
    }
}

/// The signatures of `resolved`, verified with the policy's key; none without a key (an error
/// when signatures are required).
async fn signatures_of(
    registry: &Registry,
    resolved: &ComponentRef,
    policy: &PullPolicy,
) -> Result<Vec<StoredSignature>, OciError> {
    match &policy.key {
        Some(key) => {
            let signatures = sign::fetch(registry, resolved).await?;
            sign::verify(resolved, key, &signatures)?;
            Ok(signatures)
        }
        None if policy.require_signature => Err(sign::no_key(resolved)),
        None => Ok(Vec::new()),
    }
}

/// The registry could not be reached: the pinned digest, else the tag's last record, from the
/// store.
fn offline(
    reference: &ComponentRef,
    policy: &PullPolicy,
    store: &Store,
    pinned: Option<String>,
    error: OciError,
) -> Result<Pulled, OciError> {
    let unreachable = |error: OciError| OciError::Offline {
        reference: reference.to_string(),
        source: Box::new(error),
    };
    // A reference's own digest, else the lock's pin, else the tag's last record.
    let digest = match (&reference.digest, pinned) {
        (Some(digest), _) => Some(digest.clone()),
        (None, Some(pinned)) => Some(pinned),
        (None, None) => store.tag(reference)?,
    };
    let Some(digest) = digest else {
        return Err(unreachable(error));
    };
    match from_store(reference, &digest, policy, store)? {
        Some(pulled) => {
            tracing::info!(
                "{reference}: the registry cannot be reached; using {digest} from the cache"
            );
            Ok(pulled)
        }
        None => Err(unreachable(error)),
    }
}

/// `digest` from the store, when its manifest and layer are there: checked as at a pull, its
/// signature verified from the stored ones.
fn from_store(
    reference: &ComponentRef,
    digest: &str,
    policy: &PullPolicy,
    store: &Store,
) -> Result<Option<Pulled>, OciError> {
    let Some(bytes) = store.manifest(digest, MAX_MANIFEST_SIZE)? else {
        return Ok(None);
    };
    let resolved = reference.with_digest(digest);
    let parsed = artifact::parse_manifest(&resolved, &bytes, None)?;
    let layer = artifact::component_layer(&resolved, &parsed, crate::file::MAX_COMPONENT_SIZE)?;
    let Some(path) = store.blob(&layer.digest)? else {
        return Ok(None);
    };
    match &policy.key {
        Some(key) => {
            let signatures: Vec<StoredSignature> = store.signatures(digest)?;
            if signatures.is_empty() {
                // Pulled before without a key: ask the registry for its signatures.
                return Ok(None);
            }
            sign::verify(&resolved, key, &signatures)?;
        }
        None if policy.require_signature => return Err(sign::no_key(&resolved)),
        None => {}
    }
    Ok(Some(Pulled {
        reference: resolved,
        digest: digest.to_owned(),
        layer_digest: layer.digest,
        path,
        offline: true,
        verified: policy.key.is_some(),
    }))
}

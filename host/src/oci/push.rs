//! Pushing a component: its bytes as the one `application/wasm` layer, a config of media type
//! `application/vnd.wasm.config.v0+json`, and the manifest naming both, under a tag.

use std::path::Path;
use std::time::Duration;

use crate::oci::artifact::{self, MANIFEST_MEDIA_TYPE};
use crate::oci::error::OciError;
use crate::oci::reference::ComponentRef;
use crate::oci::registry::Registry;
use crate::oci::store::sha256_digest;

/// What a push uploaded.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The reference, with the manifest's digest.
    pub reference: ComponentRef,
    /// The manifest's digest: what `@sha256:...` and a lock file pin.
    pub digest: String,
    /// The component's digest (its layer).
    pub layer_digest: String,
    /// The component's size in bytes.
    pub size: u64,
}

/// Pushes the component file at `component` to `reference`.
pub async fn push(
    component: &Path,
    reference: &ComponentRef,
    plain_http: bool,
    timeout: Duration,
) -> Result<Pushed, OciError> {
    let bytes = crate::file::read(component, crate::file::MAX_COMPONENT_SIZE, "a component")
        .map_err(|e| OciError::File {
            path: component.to_owned(),
            problem: format!("cannot read it ({e})"),
        })?;
    crate::file::check_component_header(&bytes).map_err(|problem| OciError::File {
        path: component.to_owned(),
        problem,
    })?;
    let (config, manifest) = artifact::component_manifest(&bytes);
    let digest = sha256_digest(&manifest);
    if let Some(expected) = &reference.digest
        && *expected != digest
    {
        return Err(OciError::DigestMismatch {
            reference: reference.to_string(),
            what: "manifest to push",
            expected: expected.clone(),
            actual: digest,
        });
    }
    let size = bytes.len() as u64;
    let upload = async {
        let registry = Registry::new(reference, plain_http, timeout)?;
        let layer_digest = registry.push_blob(reference, bytes).await?;
        registry.push_blob(reference, config).await?;
        registry
            .push_manifest(reference, manifest, MANIFEST_MEDIA_TYPE)
            .await?;
        Ok::<_, OciError>(layer_digest)
    };
    let layer_digest =
        tokio::time::timeout(timeout, upload)
            .await
            .map_err(|_| OciError::Timeout {
                reference: reference.to_string(),
                after: timeout,
            })??;
    Ok(Pushed {
        reference: reference.with_digest(&digest),
        digest,
        layer_digest,
        size,
    })
}

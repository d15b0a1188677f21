//! The CNCF wasm OCI artifact layout: an OCI image manifest whose config has the media type
//! `application/vnd.wasm.config.v0+json` and whose one layer is the component,
//! `application/wasm`. What `wkg oci push` and `oras push` with those media types make, and
//! what `host push` makes.

use oci_client::manifest::OciDescriptor;
use serde::{Deserialize, Serialize};

use crate::oci::error::OciError;
use crate::oci::reference::ComponentRef;
use crate::oci::store::sha256_digest;

/// An OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index (several manifests, one per platform).
const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The config of a wasm artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// A WebAssembly component (or module) layer.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The parts of a manifest that are checked and used.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    pub(crate) schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) artifact_type: Option<String>,
    pub(crate) config: OciDescriptor,
    pub(crate) layers: Vec<OciDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// The media type of `bytes` as a manifest: its own `mediaType`, else the one the registry
/// sent with it.
fn media_type_of(bytes: &[u8], content_type: Option<&str>) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Typed {
        media_type: Option<String>,
    }
    serde_json::from_slice::<Typed>(bytes)
        .ok()
        .and_then(|typed| typed.media_type)
        .or_else(|| content_type.map(str::to_owned))
}

/// Parses `bytes` as an OCI image manifest, whatever its config and layers.
pub(crate) fn parse_manifest(
    reference: &ComponentRef,
    bytes: &[u8],
    content_type: Option<&str>,
) -> Result<Manifest, OciError> {
    let not_a_component = |problem: String| OciError::NotAComponent {
        reference: reference.to_string(),
        problem,
    };
    match media_type_of(bytes, content_type).as_deref() {
        Some(MANIFEST_MEDIA_TYPE) | None => {}
        Some(INDEX_MEDIA_TYPE) => {
            return Err(not_a_component(
                "it is an image index (one manifest per platform), not one artifact".to_owned(),
            ));
        }
        Some(other) => {
            return Err(not_a_component(format!(
                "its manifest has media type {other}, not {MANIFEST_MEDIA_TYPE}"
            )));
        }
    }
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| not_a_component(format!("its manifest is not an OCI manifest ({e})")))?;
    if manifest.schema_version != 2 {
        return Err(not_a_component(format!(
            "its manifest has schemaVersion {}, not 2",
            manifest.schema_version
        )));
    }
    Ok(manifest)
}

/// The component layer of a manifest in the wasm layout; an error saying what is there
/// instead otherwise.
pub(crate) fn component_layer(
    reference: &ComponentRef,
    manifest: &Manifest,
    limit: u64,
) -> Result<OciDescriptor, OciError> {
    let not_a_component = |problem: String| OciError::NotAComponent {
        reference: reference.to_string(),
        problem,
    };
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(not_a_component(format!(
            "its config has media type {}, not {WASM_CONFIG_MEDIA_TYPE}",
            manifest.config.media_type
        )));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(not_a_component(format!(
            "it has {} layers, not one",
            manifest.layers.len()
        )));
    };
    if layer.media_type != WASM_LAYER_MEDIA_TYPE {
        return Err(not_a_component(format!(
            "its layer has media type {}, not {WASM_LAYER_MEDIA_TYPE}",
            layer.media_type
        )));
    }
    crate::oci::reference::check_digest(&layer.digest).map_err(not_a_component)?;
    match u64::try_from(layer.size) {
        Ok(size) if size <= limit => Ok(layer.clone()),
        _ => Err(OciError::TooLarge {
            reference: reference.to_string(),
            what: "component layer",
            limit,
        }),
    }
}

/// What `host push` uploads for a component: the config blob, and the manifest naming it and
/// the component. No time stamp, so pushing the same bytes twice gives the same digest.
pub(crate) fn component_manifest(component: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let layer_digest = sha256_digest(component);
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    });
    let config = serde_json::to_vec(&config).unwrap_or_default();
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: None,
        config: descriptor(WASM_CONFIG_MEDIA_TYPE, &config),
        layers: vec![descriptor(WASM_LAYER_MEDIA_TYPE, component)],
        annotations: None,
    };
    let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
    (config, manifest)
}

/// A descriptor of `bytes` with `media_type`.
pub(crate) fn descriptor(media_type: &str, bytes: &[u8]) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: sha256_digest(bytes),
        size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        ..OciDescriptor::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> ComponentRef {
        ComponentRef::parse("oci://127.0.0.1:5000/calc:1").expect("parses")
    }

    #[test]
    fn what_push_makes_is_what_pull_accepts() {
        let (_, manifest) = component_manifest(b"\0asm\x0d\0\x01\0");
        let parsed = parse_manifest(&reference(), &manifest, None).expect("a manifest");
        let layer = component_layer(&reference(), &parsed, 100).expect("a component");
        assert_eq!(layer.size, 8);
        assert_eq!(component_manifest(b"\0asm\x0d\0\x01\0").1, manifest);
    }

    #[test]
    fn other_artifacts_are_refused_with_what_they_are() {
        let image = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
            "config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:00","size":2},
            "layers":[]}"#;
        let parsed = parse_manifest(&reference(), image, None).expect("a manifest");
        let error = component_layer(&reference(), &parsed, 100).expect_err("an image");
        assert!(
            error
                .to_string()
                .contains("config has media type application/vnd.oci.image.config.v1+json"),
            "{error}"
        );
        let docker = br#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json"}"#;
        let error = parse_manifest(&reference(), docker, None).expect_err("docker");
        assert!(
            error.to_string().contains("oci://127.0.0.1:5000/calc:1"),
            "{error}"
        );
    }
}

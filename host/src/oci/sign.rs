//! Cosign-compatible signatures with a key pair: what `cosign sign --key` stores and
//! `cosign verify --key` checks.
//!
//! A signature of the manifest `sha256:<hex>` lives in the same repository under the tag
//! `sha256-<hex>.sig`: an OCI manifest whose layers are cosign "simple signing" payloads
//! (`application/vnd.dev.cosign.simplesigning.v1+json`, a JSON document naming the manifest
//! digest), each with its ECDSA P-256 / SHA-256 signature, base64 of DER, in the annotation
//! `dev.cosignproject.cosign/signature`. A signature verifies when the key verifies it over the
//! payload's exact bytes and the payload names the manifest's digest.
//!
//! Keys are PEM: a public key as `cosign generate-key-pair` and `openssl pkey -pubout` write it
//! (`PUBLIC KEY`); a private key unencrypted, PKCS#8 (`PRIVATE KEY`) or SEC1 (`EC PRIVATE
//! KEY`). cosign's own encrypted private keys are not read.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{DerSignature, Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _, EncodePublicKey as _};
use serde::{Deserialize, Serialize};

use crate::oci::artifact::{self, MANIFEST_MEDIA_TYPE};
use crate::oci::error::OciError;
use crate::oci::reference::ComponentRef;
use crate::oci::registry::{MAX_MANIFEST_SIZE, Registry};
use crate::oci::store::StoredSignature;

/// A simple-signing payload layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation that holds a payload's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `type` of a cosign payload.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The config media type of a signature manifest.
const SIGNATURE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The most signature layers read, and the largest payload.
const MAX_SIGNATURES: usize = 64;
const MAX_PAYLOAD: i64 = 64 * 1024;

/// Cosign's simple-signing payload.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    critical: Critical,
    optional: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// The tag a manifest's signatures live under.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The error for a reference that must be signed but has no key to check it with.
pub(crate) fn no_key(reference: &ComponentRef) -> OciError {
    OciError::Signature {
        reference: reference.to_string(),
        digest: reference.digest.clone().unwrap_or_default(),
        problem: format!(
            "signatures are required ([oci] require_signatures) but no key is named for it: \
             add verify = {{ key = \"keys/NAME.pub\" }} to the component, or to \
             [oci.registries.\"{}\"]",
            reference.registry
        ),
    }
}

/// The signatures stored for `reference`'s manifest (resolved to a digest): none when the
/// registry has no signature tag for it.
pub(crate) async fn fetch(
    registry: &Registry,
    reference: &ComponentRef,
) -> Result<Vec<StoredSignature>, OciError> {
    let digest = reference.digest.clone().unwrap_or_default();
    let tag = reference.at_tag(&signature_tag(&digest));
    let Some(manifest) = registry.find_manifest(&tag, MAX_MANIFEST_SIZE).await? else {
        return Ok(Vec::new());
    };
    let parsed = artifact::parse_manifest(&tag, &manifest.bytes, manifest.content_type.as_deref())?;
    let mut signatures = Vec::new();
    for layer in parsed.layers.iter().take(MAX_SIGNATURES) {
        let Some(signature) = layer
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(SIGNATURE_ANNOTATION))
        else {
            continue;
        };
        if layer.media_type != PAYLOAD_MEDIA_TYPE || !(0..=MAX_PAYLOAD).contains(&layer.size) {
            continue;
        }
        let payload = registry.blob(&tag, layer, "signature payload").await?;
        signatures.push(StoredSignature {
            payload: base64::engine::general_purpose::STANDARD.encode(payload),
            signature: signature.clone(),
        });
    }
    Ok(signatures)
}

/// Checks that one of `signatures` is by the key at `key` and names `reference`'s digest.
pub(crate) fn verify(
    reference: &ComponentRef,
    key: &Path,
    signatures: &[StoredSignature],
) -> Result<(), OciError> {
    let digest = reference.digest.clone().unwrap_or_default();
    let failed = |problem: String| OciError::Signature {
        reference: reference.to_string(),
        digest: digest.clone(),
        problem,
    };
    let key_name = key.display();
    if signatures.is_empty() {
        return Err(failed(format!(
            "it is not signed (no {} tag in the repository); the publisher signs it with \
             `host sign {reference} --key KEY` or `cosign sign --key`, and {key_name} must be \
             the public half of that key",
            signature_tag(&digest)
        )));
    }
    let verifying_key = read_public_key(key)?;
    let mut problems = Vec::new();
    for stored in signatures {
        match check_one(&verifying_key, &digest, stored) {
            Ok(()) => return Ok(()),
            Err(problem) => problems.push(problem),
        }
    }
    Err(failed(format!(
        "no signature verifies with {key_name} ({}); it was signed with another key, or \
         altered",
        problems.join("; ")
    )))
}

fn check_one(key: &VerifyingKey, digest: &str, stored: &StoredSignature) -> Result<(), String> {
    let base64 = base64::engine::general_purpose::STANDARD;
    let payload = base64
        .decode(&stored.payload)
        .map_err(|_| "a payload is not base64".to_owned())?;
    let signature = base64
        .decode(stored.signature.trim())
        .map_err(|_| "a signature is not base64".to_owned())?;
    let signature = Signature::from_der(&signature)
        .or_else(|_| Signature::from_slice(&signature))
        .map_err(|_| "a signature is not an ECDSA P-256 signature".to_owned())?;
    key.verify(&payload, &signature)
        .map_err(|_| "a signature does not verify with this key".to_owned())?;
    let payload: Payload = serde_json::from_slice(&payload)
        .map_err(|e| format!("a signed payload is not cosign's simple signing ({e})"))?;
    if payload.critical.kind != PAYLOAD_TYPE {
        return Err(format!(
            "a signed payload is of type `{}`",
            payload.critical.kind
        ));
    }
    if payload.critical.image.docker_manifest_digest != digest {
        return Err(format!(
            "a signature by this key is for {}, another manifest",
            payload.critical.image.docker_manifest_digest
        ));
    }
    Ok(())
}

/// Signs `reference` (resolved to its manifest digest) with the private key at `key`, and
/// adds the signature to its signature tag; returns that tag's reference.
pub async fn sign(
    registry: &Registry,
    reference: &ComponentRef,
    key: &Path,
) -> Result<ComponentRef, OciError> {
    let signing_key = read_private_key(key)?;
    let digest = reference.digest.clone().unwrap_or_default();
    let payload = serde_json::to_vec(&Payload {
        critical: Critical {
            identity: Identity {
                docker_reference: reference.repository_name(),
            },
            image: Image {
                docker_manifest_digest: digest.clone(),
            },
            kind: PAYLOAD_TYPE.to_owned(),
        },
        optional: None,
    })
    .unwrap_or_default();
    let signature: DerSignature = signing_key.sign(&payload);
    let signature = base64::engine::general_purpose::STANDARD.encode(signature.as_bytes());
    let tag = reference.at_tag(&signature_tag(&digest));
    let mut layers = match registry.find_manifest(&tag, MAX_MANIFEST_SIZE).await? {
        Some(existing) => {
            artifact::parse_manifest(&tag, &existing.bytes, existing.content_type.as_deref())?
                .layers
        }
        None => Vec::new(),
    };
    let mut layer = artifact::descriptor(PAYLOAD_MEDIA_TYPE, &payload);
    layer.annotations = Some(BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_owned(),
        signature,
    )]));
    if !layers
        .iter()
        .any(|old| old.digest == layer.digest && old.annotations == layer.annotations)
    {
        layers.push(layer);
    }
    registry.push_blob(&tag, payload).await?;
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "os": "",
        "config": {},
        "rootfs": {
            "type": "layers",
            "diff_ids": layers.iter().map(|layer| layer.digest.clone()).collect::<Vec<_>>(),
        },
    }))
    .unwrap_or_default();
    let manifest = artifact::Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: None,
        config: artifact::descriptor(SIGNATURE_CONFIG_MEDIA_TYPE, &config),
        layers,
        annotations: None,
    };
    registry.push_blob(&tag, config).await?;
    let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
    registry
        .push_manifest(&tag, manifest, MANIFEST_MEDIA_TYPE)
        .await?;
    Ok(tag)
}

/// The public key at `path` (PEM, `PUBLIC KEY`, P-256).
pub fn read_public_key(path: &Path) -> Result<VerifyingKey, OciError> {
    let text = read_key_file(path)?;
    VerifyingKey::from_public_key_pem(&text).map_err(|e| OciError::Key {
        path: path.to_owned(),
        problem: format!(
            "it is not a P-256 public key in PEM (`-----BEGIN PUBLIC KEY-----`, what `cosign \
             generate-key-pair` and `openssl pkey -pubout` write): {e}"
        ),
    })
}

/// The private key at `path` (PEM: PKCS#8 or SEC1, P-256, unencrypted).
pub fn read_private_key(path: &Path) -> Result<SigningKey, OciError> {
    let text = read_key_file(path)?;
    if text.contains("ENCRYPTED") {
        return Err(OciError::Key {
            path: path.to_owned(),
            problem: "it is encrypted (cosign's own key format); sign with an unencrypted \
                      P-256 key in PEM (`openssl genpkey -algorithm EC -pkeyopt \
                      ec_paramgen_curve:P-256`), or with `cosign sign --key`"
                .to_owned(),
        });
    }
    let key = SigningKey::from_pkcs8_pem(&text)
        .ok()
        .or_else(|| {
            p256::SecretKey::from_sec1_pem(&text)
                .ok()
                .map(SigningKey::from)
        })
        .ok_or_else(|| OciError::Key {
            path: path.to_owned(),
            problem: "it is not a P-256 private key in PEM (PKCS#8 `PRIVATE KEY` or SEC1 `EC \
                      PRIVATE KEY`)"
                .to_owned(),
        })?;
    Ok(key)
}

/// The public half of the private key at `path`, in PEM: what verifiers name.
pub fn public_key_pem(path: &Path) -> Result<String, OciError> {
    let key = read_private_key(path)?;
    key.verifying_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .map_err(|e| OciError::Key {
            path: path.to_owned(),
            problem: e.to_string(),
        })
}

fn read_key_file(path: &Path) -> Result<String, OciError> {
    let bytes = crate::file::read(path, 64 * 1024, "a key").map_err(|e| OciError::Key {
        path: path.to_owned(),
        problem: format!("cannot read it ({e})"),
    })?;
    String::from_utf8(bytes).map_err(|_| OciError::Key {
        path: path.to_owned(),
        problem: "it is not PEM text".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(key: &SigningKey, digest: &str) -> StoredSignature {
        let payload = serde_json::to_vec(&serde_json::json!({
            "critical": {
                "identity": { "docker-reference": "127.0.0.1:5000/calc" },
                "image": { "docker-manifest-digest": digest },
                "type": PAYLOAD_TYPE,
            },
            "optional": null,
        }))
        .unwrap_or_default();
        let signature: DerSignature = key.sign(&payload);
        let base64 = base64::engine::general_purpose::STANDARD;
        StoredSignature {
            payload: base64.encode(&payload),
            signature: base64.encode(signature.as_bytes()),
        }
    }

    #[test]
    fn a_signature_verifies_only_with_its_key_and_for_its_digest() {
        let key = SigningKey::from_slice(&[7; 32]).expect("a key");
        let other = SigningKey::from_slice(&[9; 32]).expect("a key");
        let digest = format!("sha256:{}", "a".repeat(64));
        let signature = stored(&key, &digest);
        assert_eq!(check_one(key.verifying_key(), &digest, &signature), Ok(()));
        let wrong_key = check_one(other.verifying_key(), &digest, &signature);
        assert!(wrong_key.is_err_and(|e| e.contains("does not verify")));
        let elsewhere = check_one(
            key.verifying_key(),
            &format!("sha256:{}", "b".repeat(64)),
            &signature,
        );
        assert!(elsewhere.is_err_and(|e| e.contains("another manifest")));
        let mut altered = signature.clone();
        altered.payload = base64::engine::general_purpose::STANDARD.encode(b"{}");
        assert!(check_one(key.verifying_key(), &digest, &altered).is_err());
    }

    #[test]
    fn the_signature_tag_is_cosigns() {
        assert_eq!(signature_tag("sha256:0123"), "sha256-0123.sig");
    }
}

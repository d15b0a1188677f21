//! Talking to one registry: oci-client for authentication and uploads; what a pull reads
//! (manifests and blobs) asked for by the host itself, each with a size bound (oci-client reads
//! a manifest whole, whatever its size, so a registry that answers 10 GB would exhaust memory)
//! and a span of its own with the trace context sent on (`request.rs`).
//!
//! Plain HTTP only for a loopback registry (127.0.0.1, [::1], localhost) or one the manifest
//! marks `plain_http`; HTTPS otherwise, with the TLS of the rest of the host (`crate::tls`).

use std::time::Duration;

use futures::StreamExt as _;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, RegistryOperation};
use tracing::Instrument as _;

use crate::oci::credentials;
use crate::oci::error::OciError;
use crate::oci::reference::ComponentRef;
use crate::oci::request;
use crate::oci::store::sha256_digest;
use crate::tls;

/// The manifest media types asked for; anything else that comes back is refused by the caller
/// with what it is.
pub(crate) const ACCEPTED_MANIFESTS: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json";

/// The largest manifest read (the OCI distribution spec asks registries to accept 4 MiB).
pub const MAX_MANIFEST_SIZE: u64 = 4 * 1024 * 1024;

/// A manifest as it came: its bytes, their digest, and the media type the registry gave.
#[derive(Debug)]
pub(crate) struct RawManifest {
    pub(crate) bytes: Vec<u8>,
    pub(crate) digest: String,
    pub(crate) content_type: Option<String>,
}

/// A connection to the registry of one reference.
pub(crate) struct Registry {
    client: Client,
    http: reqwest::Client,
    auth: RegistryAuth,
    scheme: &'static str,
}

impl Registry {
    /// A client for `reference`'s registry, with its credentials.
    pub(crate) fn new(
        reference: &ComponentRef,
        plain_http: bool,
        read_timeout: Duration,
    ) -> Result<Self, OciError> {
        let plain = plain_http || reference.is_loopback();
        // The host's TLS (tls.rs) for both clients: the builder installs the crypto provider
        // oci-client's client needs too, and the extra roots go to both.
        let builder =
            tls::client_builder().map_err(|e| OciError::registry(reference, "client setup", e))?;
        let extra_root_certificates = tls::extra_roots()
            .map_err(|e| OciError::registry(reference, "client setup", e))?
            .into_iter()
            .map(|der| Certificate {
                encoding: CertificateEncoding::Der,
                data: der.to_vec(),
            })
            .collect();
        let config = ClientConfig {
            protocol: if plain {
                ClientProtocol::HttpsExcept(vec![reference.registry.clone()])
            } else {
                ClientProtocol::Https
            },
            read_timeout: Some(read_timeout),
            connect_timeout: Some(read_timeout.min(Duration::from_secs(10))),
            user_agent: concat!("toolhost/", env!("CARGO_PKG_VERSION")),
            platform_resolver: None,
            extra_root_certificates,
            ..ClientConfig::default()
        };
        let http = builder
            .read_timeout(read_timeout)
            .connect_timeout(read_timeout.min(Duration::from_secs(10)))
            .redirect(reqwest::redirect::Policy::limited(5))
            .build()
            .map_err(|e| OciError::registry(reference, "client setup", e))?;
        Ok(Self {
            client: Client::new(config),
            http,
            auth: credentials::for_registry(&reference.registry)?,
            scheme: if plain { "http" } else { "https" },
        })
    }

    /// The manifest `reference` names, at most `limit` bytes, hashed as received.
    pub(crate) async fn manifest(
        &self,
        reference: &ComponentRef,
        limit: u64,
    ) -> Result<RawManifest, OciError> {
        self.find_manifest(reference, limit)
            .await?
            .ok_or_else(|| status_error(reference, reqwest::StatusCode::NOT_FOUND))
    }

    /// The manifest `reference` names, or `None` when the registry has none (404).
    pub(crate) async fn find_manifest(
        &self,
        reference: &ComponentRef,
        limit: u64,
    ) -> Result<Option<RawManifest>, OciError> {
        let target = reference.digest.clone().or_else(|| reference.tag.clone());
        let url = format!(
            "{}://{}/v2/{}/manifests/{}",
            self.scheme,
            reference.registry,
            reference.repository,
            target.unwrap_or_default()
        );
        let request = self
            .http
            .get(&url)
            .header(http::header::ACCEPT, ACCEPTED_MANIFESTS);
        let request = self
            .authorize(reference, RegistryOperation::Pull, request)
            .await?
            .build()
            .map_err(|e| OciError::registry(reference, "manifest request", e))?;
        request::send(&self.http, request, |answer| async move {
            let response =
                answer.map_err(|e| OciError::registry(reference, "manifest request", e))?;
            let status = response.status();
            if status == reqwest::StatusCode::NOT_FOUND {
                return Ok(None);
            }
            if !status.is_success() {
                return Err(status_error(reference, status));
            }
            let content_type = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .map(|value| value.split(';').next().unwrap_or(value).trim().to_owned());
            let bytes =
                bounded_body(reference, response, "manifest", limit, "manifest request").await?;
            let digest = sha256_digest(&bytes);
            Ok(Some(RawManifest {
                bytes,
                digest,
                content_type,
            }))
        })
        .await
    }

    /// The blob `descriptor` names, refused past its declared size and checked against its
    /// digest.
    pub(crate) async fn blob(
        &self,
        reference: &ComponentRef,
        descriptor: &OciDescriptor,
        what: &'static str,
    ) -> Result<Vec<u8>, OciError> {
        let limit = u64::try_from(descriptor.size).unwrap_or(0);
        let url = format!(
            "{}://{}/v2/{}/blobs/{}",
            self.scheme, reference.registry, reference.repository, descriptor.digest
        );
        let request = self
            .authorize(reference, RegistryOperation::Pull, self.http.get(&url))
            .await?
            .build()
            .map_err(|e| OciError::registry(reference, "blob download", e))?;
        let bytes = request::send(&self.http, request, |answer| async move {
            let response = answer.map_err(|e| OciError::registry(reference, "blob download", e))?;
            let status = response.status();
            if !status.is_success() {
                return Err(OciError::registry(
                    reference,
                    "blob download",
                    status.to_string(),
                ));
            }
            bounded_body(reference, response, what, limit, "blob download").await
        })
        .await?;
        let actual = sha256_digest(&bytes);
        if actual != descriptor.digest || bytes.len() as u64 != limit {
            return Err(OciError::DigestMismatch {
                reference: reference.to_string(),
                what,
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Uploads `bytes` as a blob of `reference`'s repository (unless it is there), and returns
    /// its digest.
    #[tracing::instrument(
        name = "oci_request",
        skip_all,
        fields(otel.name = "oci push blob", otel.kind = "client", oci.reference = %reference)
    )]
    pub(crate) async fn push_blob(
        &self,
        reference: &ComponentRef,
        bytes: Vec<u8>,
    ) -> Result<String, OciError> {
        let image = reference.to_client();
        let digest = sha256_digest(&bytes);
        self.client
            .auth(&image, &self.auth, RegistryOperation::Push)
            .await
            .map_err(|e| OciError::registry(reference, "authentication", e))?;
        let present = self
            .client
            .blob_exists(&image, &digest)
            .await
            .map_err(|e| OciError::registry(reference, "upload", e))?;
        if !present {
            self.client
                .push_blob(&image, bytes, &digest)
                .await
                .map_err(|e| OciError::registry(reference, "upload", e))?;
        }
        Ok(digest)
    }

    /// Uploads a manifest under `reference`'s tag (or digest).
    #[tracing::instrument(
        name = "oci_request",
        skip_all,
        fields(otel.name = "oci push manifest", otel.kind = "client", oci.reference = %reference)
    )]
    pub(crate) async fn push_manifest(
        &self,
        reference: &ComponentRef,
        bytes: Vec<u8>,
        media_type: &'static str,
    ) -> Result<(), OciError> {
        let image = reference.to_client();
        self.client
            .auth(&image, &self.auth, RegistryOperation::Push)
            .await
            .map_err(|e| OciError::registry(reference, "authentication", e))?;
        self.client
            .push_manifest_raw(&image, bytes, http::HeaderValue::from_static(media_type))
            .await
            .map_err(|e| OciError::registry(reference, "manifest upload", e))?;
        Ok(())
    }

    /// `request` with the registry's authorization: a bearer token when the registry hands
    /// them out, else the user's name and password, else nothing.
    ///
    /// oci-client asks the registry (its `/v2/` probe, and a token request when the registry
    /// hands them out) without a hook for a span of each: the whole is one span, `oci
    /// authorize`.
    async fn authorize(
        &self,
        reference: &ComponentRef,
        operation: RegistryOperation,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, OciError> {
        let span = tracing::info_span!(
            "oci_authorize",
            otel.name = "oci authorize",
            server.address = %reference.registry,
        );
        let token = self
            .client
            .auth(&reference.to_client(), &self.auth, operation)
            .instrument(span)
            .await
            .map_err(|e| OciError::registry(reference, "authentication", e))?;
        Ok(match (token, &self.auth) {
            (Some(token), _) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, _) => request,
        })
    }
}

fn too_large(reference: &ComponentRef, what: &'static str, limit: u64) -> OciError {
    OciError::TooLarge {
        reference: reference.to_string(),
        what,
        limit,
    }
}

/// An HTTP status other than success, as the user can act on it.
fn status_error(reference: &ComponentRef, status: reqwest::StatusCode) -> OciError {
    let problem = match status.as_u16() {
        401 | 403 => format!(
            "{status}: the registry wants credentials (`docker login {}` or `oras login`, or \
             TOOLHOST_REGISTRY, TOOLHOST_REGISTRY_USERNAME, TOOLHOST_REGISTRY_PASSWORD)",
            reference.registry
        ),
        404 => format!("{status}: the registry has no such tag or digest in this repository"),
        _ => status.to_string(),
    };
    OciError::registry(reference, "manifest request", problem)
}

/// The body of `response`, refused as too large (`what`, the thing it is) past `limit` bytes,
/// announced or sent; `action` names what failed if the body breaks off.
async fn bounded_body(
    reference: &ComponentRef,
    response: reqwest::Response,
    what: &'static str,
    limit: u64,
    action: &'static str,
) -> Result<Vec<u8>, OciError> {
    if response.content_length().is_some_and(|size| size > limit) {
        return Err(too_large(reference, what, limit));
    }
    let mut bytes = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| OciError::registry(reference, action, e))?;
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            return Err(too_large(reference, what, limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

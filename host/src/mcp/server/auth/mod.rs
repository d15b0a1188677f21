//! `host mcp --http` as an OAuth 2.1 resource server (the MCP authorization spec): every
//! request to `/mcp` carries an access token from the configured authorization server, for
//! this resource, granting the configured scopes. A request that passes gets its verified
//! [`Caller`] as an `Arc<Caller>` extension of its `http::Request`, which rmcp hands on to
//! the handler (inside the request's `http::request::Parts`).
//!
//! - JWT access tokens (RFC 9068) are checked here: the signature against the issuer's keys
//!   (found through its metadata's `jwks_uri`, cached, fetched again when an unknown key id
//!   shows up: `keys.rs`), `iss`, `aud`, `exp`, `nbf`, in an asymmetric algorithm the issuer
//!   announces (`jwt.rs`).
//! - Opaque tokens are asked about at the issuer's introspection endpoint (RFC 7662), answers
//!   cached until the token expires (`introspection.rs`).
//! - `/.well-known/oauth-protected-resource` (and its form for `/mcp`) publishes this
//!   server's metadata (RFC 9728, `metadata.rs`), which the `WWW-Authenticate` of a 401
//!   points at (`challenge.rs`, which also has the 403 for a step-up).
//!
//! - A JWT verified once is found again by its SHA-256 until it expires, for as long as the
//!   key it was verified with stays in the issuer's key set (`verified.rs`): a caller's
//!   second request costs a hash and a lookup, not a signature check.
//!
//! The token itself is never logged, nor kept (both caches hold its SHA-256), and the
//! `Authorization` header is taken off the request before rmcp sees it.

mod challenge;
mod fetch;
#[doc(hidden)]
pub mod fuzzing;
mod introspection;
mod jwt;
mod keys;
mod metadata;
mod verified;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use http::HeaderMap;
use serde_json::Value;
use url::Url;

pub use challenge::{Challenge, insufficient_scope};
pub use introspection::IntrospectionClient;

use self::introspection::{IntrospectionError, Introspector};
use self::jwt::JwtError;
use self::keys::{KeyCache, KeyError};
use self::verified::{MAX_VERIFIED, VerifiedTokens};
use crate::caller::Caller;
use crate::manifest::resource_server::ResourceServerSection;

/// The longest token read: a larger `Authorization` header is refused before any parsing.
pub const MAX_TOKEN: usize = 8 << 10;

/// Which access tokens the server accepts (the manifest's `[mcp.auth]`).
#[derive(Debug, Clone)]
pub struct ResourceServerConfig {
    /// The authorization server's issuer URL: a token's `iss` must be exactly this, and its
    /// metadata is found under it.
    pub issuer: Url,
    /// This server's canonical resource URI (where clients reach `/mcp`): a token's `aud` must
    /// name it.
    pub resource: Url,
    /// The scopes a token must grant to use `/mcp` at all.
    pub scopes: Vec<String>,
    /// How opaque tokens are introspected; without it only JWTs are accepted.
    pub introspection: Option<IntrospectionClient>,
    /// How far `exp` and `nbf` may be off this server's clock.
    pub leeway: Duration,
    /// The shortest time between two fetches of the issuer's keys.
    pub keys_refetch_interval: Duration,
    /// How long a request to the authorization server may take.
    pub fetch_timeout: Duration,
}

impl ResourceServerConfig {
    /// Tokens from `issuer` for `resource`, no scope needed, JWTs only; 60 s of leeway, keys
    /// fetched again at most every 10 s, 5 s for each request to the authorization server.
    pub fn new(issuer: Url, resource: Url) -> Self {
        Self {
            issuer,
            resource,
            scopes: Vec::new(),
            introspection: None,
            leeway: Duration::from_secs(60),
            keys_refetch_interval: Duration::from_secs(10),
            fetch_timeout: Duration::from_secs(5),
        }
    }

    /// The configuration `section` describes; the introspection secret is read from the
    /// environment variable it names.
    pub fn from_section(section: &ResourceServerSection) -> anyhow::Result<Self> {
        let issuer = Url::parse(&section.issuer)
            .with_context(|| format!("[mcp.auth] issuer `{}` is not a URL", section.issuer))?;
        let resource = Url::parse(&section.resource)
            .with_context(|| format!("[mcp.auth] resource `{}` is not a URL", section.resource))?;
        let mut config = Self::new(issuer, resource);
        config.scopes.clone_from(&section.scopes);
        if let Some(leeway) = section.leeway {
            config.leeway = leeway.0;
        }
        if let Some(interval) = section.keys_refetch_interval {
            config.keys_refetch_interval = interval.0;
        }
        if let Some(introspection) = &section.introspection {
            let var = &introspection.client_secret_env;
            let secret = std::env::var(var).ok().filter(|s| !s.trim().is_empty());
            let Some(client_secret) = secret else {
                bail!(
                    "[mcp.auth] introspection: the environment variable {var} \
                     (client_secret_env) is not set or empty; put the client's secret in it"
                );
            };
            config.introspection = Some(IntrospectionClient {
                client_id: introspection.client_id.clone(),
                client_secret: client_secret.trim().to_owned(),
            });
        }
        config.checked()
    }

    /// This configuration, or what is wrong with it.
    pub fn checked(self) -> anyhow::Result<Self> {
        for (what, url) in [("issuer", &self.issuer), ("resource", &self.resource)] {
            if !matches!(url.scheme(), "https" | "http") || url.fragment().is_some() {
                bail!("[mcp.auth] {what} `{url}` must be an http(s) URL without a fragment");
            }
        }
        if self.resource.query().is_some() {
            bail!(
                "[mcp.auth] resource `{}` must not have a query",
                self.resource
            );
        }
        Ok(self)
    }
}

/// Checks the tokens of requests to `/mcp`, and publishes the resource metadata.
pub(super) struct ResourceServer {
    config: ResourceServerConfig,
    http: reqwest::Client,
    keys: KeyCache,
    /// The JWTs verified so far, by digest.
    verified: VerifiedTokens,
    introspector: Option<Introspector>,
    /// Where this server's metadata is, as told in a `WWW-Authenticate`.
    resource_metadata: String,
    document: Value,
}

impl ResourceServer {
    pub(super) fn new(config: ResourceServerConfig) -> anyhow::Result<Self> {
        let http = fetch::client(config.fetch_timeout)
            .context("cannot make the HTTP client for the authorization server")?;
        let keys = KeyCache::new(
            http.clone(),
            config.issuer.clone(),
            config.fetch_timeout,
            config.keys_refetch_interval,
        );
        Ok(Self {
            introspector: config.introspection.clone().map(Introspector::new),
            resource_metadata: metadata::well_known(&config.resource, "oauth-protected-resource"),
            document: metadata::protected_resource(
                &config.resource,
                &config.issuer,
                &config.scopes,
            ),
            http,
            keys,
            verified: VerifiedTokens::new(MAX_VERIFIED),
            config,
        })
    }

    /// Whether `path` is where this server's metadata is published: the bare well-known path,
    /// or the one suffixed with the resource's path (RFC 9728 section 3.1).
    pub(super) fn is_metadata_path(&self, path: &str) -> bool {
        let Some(rest) = path.strip_prefix("/.well-known/oauth-protected-resource") else {
            return false;
        };
        rest.is_empty() || rest == self.config.resource.path().trim_end_matches('/')
    }

    /// This server's metadata document (RFC 9728).
    pub(super) fn document(&self) -> &Value {
        &self.document
    }

    /// 403 naming the scopes `needed`, for a step-up.
    pub(super) fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        insufficient_scope(&self.resource_metadata, needed)
    }

    /// The caller the request's token stands for, or the answer to give instead.
    pub(super) async fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<Caller>, Challenge> {
        let token = self.bearer(headers)?;
        let caller = if jwt::looks_like_jwt(token) {
            self.jwt(token).await?
        } else {
            Arc::new(self.introspect(token).await?)
        };
        let missing: Vec<String> = (self.config.scopes.iter())
            .filter(|scope| !caller.scopes.contains(*scope))
            .cloned()
            .collect();
        if !missing.is_empty() {
            tracing::info!("refused {}: its token lacks {missing:?}", caller.subject);
            return Err(self.insufficient_scope(&self.config.scopes));
        }
        Ok(caller)
    }

    /// The caller a JWT stands for: found among those verified before, or verified now.
    async fn jwt(&self, token: &str) -> Result<Arc<Caller>, Challenge> {
        let digest = VerifiedTokens::digest(token);
        if let Some(caller) = self.verified.get(&digest, verified::now(), &self.keys) {
            return Ok(caller);
        }
        let expected = jwt::Expected {
            issuers: &spellings(&self.config.issuer),
            audiences: &spellings(&self.config.resource),
            leeway: self.config.leeway,
        };
        let verified = jwt::verify(token, &self.keys, &expected)
            .await
            .map_err(|error| self.jwt_refused(&error))?;
        let caller = verified.caller.clone();
        self.verified.insert(digest, verified);
        Ok(caller)
    }

    /// The bearer token of `headers`.
    fn bearer<'h>(&self, headers: &'h HeaderMap) -> Result<&'h str, Challenge> {
        let scopes = &self.config.scopes;
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Err(challenge::no_token(&self.resource_metadata, scopes));
        };
        if value.len() > MAX_TOKEN {
            let said = format!("the Authorization header is longer than {MAX_TOKEN} bytes");
            return Err(challenge::invalid_request(
                &self.resource_metadata,
                scopes,
                &said,
            ));
        }
        let Ok(value) = value.to_str() else {
            let said = "the Authorization header is not ASCII";
            return Err(challenge::invalid_request(
                &self.resource_metadata,
                scopes,
                said,
            ));
        };
        match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                let token = token.trim();
                if token.is_empty() {
                    let said = "the Authorization header has no token after `Bearer`";
                    return Err(challenge::invalid_request(
                        &self.resource_metadata,
                        scopes,
                        said,
                    ));
                }
                Ok(token)
            }
            _ => Err(challenge::no_token(&self.resource_metadata, scopes)),
        }
    }

    /// Who an opaque token stands for, by introspection.
    async fn introspect(&self, token: &str) -> Result<Caller, Challenge> {
        let scopes = &self.config.scopes;
        let Some(introspector) = &self.introspector else {
            let said = "the token is not a JWT, and this server does not introspect tokens";
            return Err(challenge::invalid_token(
                &self.resource_metadata,
                scopes,
                said,
            ));
        };
        let metadata = self.keys.metadata().await.map_err(|error| {
            tracing::warn!("cannot check an opaque token: {error}");
            challenge::unavailable("the authorization server could not be reached")
        })?;
        let Some(endpoint) = &metadata.introspection_endpoint else {
            let said = "the authorization server has no introspection endpoint";
            return Err(challenge::invalid_token(
                &self.resource_metadata,
                scopes,
                said,
            ));
        };
        let expected = (self.config.issuer.as_str(), self.config.resource.as_str());
        let timeout = self.config.fetch_timeout;
        introspector
            .verify(&self.http, endpoint, token, expected, timeout)
            .await
            .map_err(|error| match error {
                IntrospectionError::Unavailable(_) => {
                    tracing::warn!("cannot check an opaque token: {error}");
                    challenge::unavailable("the authorization server could not be asked")
                }
                other => {
                    tracing::info!("refused a token: {other}");
                    let said = other.to_string();
                    challenge::invalid_token(&self.resource_metadata, scopes, &said)
                }
            })
    }

    /// The answer to a JWT refused for `error`.
    fn jwt_refused(&self, error: &JwtError) -> Challenge {
        if let JwtError::Key(KeyError::Unavailable(why)) = error {
            tracing::warn!("cannot check a token: the authorization server's keys: {why}");
            return challenge::unavailable("the authorization server's keys could not be fetched");
        }
        tracing::info!("refused a token: {error}");
        let said = error.to_string();
        challenge::invalid_token(&self.resource_metadata, &self.config.scopes, &said)
    }
}

/// The ways `url` is written alike: as parsed, and without the `/` that parsing adds to a
/// bare origin (`https://login.example` is both `https://login.example/` and itself).
fn spellings(url: &Url) -> Vec<String> {
    let parsed = url.as_str();
    let mut both = vec![parsed.to_owned()];
    if url.path() == "/" && url.query().is_none() {
        both.push(parsed.trim_end_matches('/').to_owned());
    }
    both
}

//! The two metadata documents: the authorization server's (RFC 8414, or OpenID Connect
//! discovery), read to find its keys and introspection endpoint, and this resource server's
//! own (RFC 9728), published for clients to find the authorization server.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use super::fetch::{self, FetchError};

/// What the authorization server's metadata says that this server uses. Unknown fields are
/// ignored: the documents carry many this server has no use for.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct IssuerMetadata {
    /// Must be the configured issuer exactly (RFC 8414 section 3.3).
    pub issuer: String,
    /// Where its signing keys are (a JWK Set).
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Where opaque tokens are introspected (RFC 7662).
    #[serde(default)]
    pub introspection_endpoint: Option<String>,
    /// The algorithms it signs with; access tokens are accepted in the asymmetric ones only.
    #[serde(default)]
    pub id_token_signing_alg_values_supported: Option<Vec<String>>,
}

/// Why the issuer's metadata could not be had.
#[derive(Debug, thiserror::Error)]
pub(super) enum MetadataError {
    #[error("the authorization server's metadata at {url}: {source}")]
    Fetch {
        url: String,
        #[source]
        source: FetchError,
    },
    #[error(
        "the authorization server's metadata at {url} names the issuer `{found}`, not the \
         configured `{expected}`: fix `issuer` in [mcp.auth]"
    )]
    OtherIssuer {
        url: String,
        found: String,
        expected: String,
    },
}

/// Fetches `issuer`'s metadata: RFC 8414's well-known URL first, then OpenID Connect's.
pub(super) async fn discover(
    client: &reqwest13::Client,
    issuer: &Url,
    timeout: Duration,
) -> Result<IssuerMetadata, MetadataError> {
    let urls = [
        well_known(issuer, "oauth-authorization-server"),
        format!(
            "{}/.well-known/openid-configuration",
            issuer.as_str().trim_end_matches('/')
        ),
    ];
    let mut failure = None;
    for url in urls {
        match fetch::json::<IssuerMetadata>(client.get(&url), timeout).await {
            Ok(metadata) if same_issuer(&metadata.issuer, issuer) => return Ok(metadata),
            Ok(metadata) => {
                return Err(MetadataError::OtherIssuer {
                    url,
                    found: metadata.issuer,
                    expected: issuer.to_string(),
                });
            }
            Err(source) => failure = Some(MetadataError::Fetch { url, source }),
        }
    }
    Err(failure.expect("two URLs were tried"))
}

/// `base`'s well-known URL for `name`, inserted between the host and the path (RFC 8414
/// section 3.1, RFC 9728 section 3.1): `https://a.example/tenant` gives
/// `https://a.example/.well-known/NAME/tenant`.
pub(super) fn well_known(base: &Url, name: &str) -> String {
    let path = base.path().trim_end_matches('/');
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(&format!("/.well-known/{name}{path}"));
    url.to_string()
}

/// Whether the issuer a document names is `configured` (a trailing slash aside, which URL
/// parsing adds to a bare origin).
pub(super) fn same_issuer(named: &str, configured: &Url) -> bool {
    named.trim_end_matches('/') == configured.as_str().trim_end_matches('/')
}

/// This resource server's metadata document (RFC 9728 section 2).
pub(super) fn protected_resource(resource: &Url, issuer: &Url, scopes: &[String]) -> Value {
    json!({
        "resource": resource.as_str(),
        "authorization_servers": [issuer.as_str().trim_end_matches('/')],
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a URL")
    }

    #[test]
    fn well_known_urls_go_between_host_and_path() {
        assert_eq!(
            well_known(
                &url("http://127.0.0.1:9000/mcp"),
                "oauth-protected-resource"
            ),
            "http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            well_known(&url("https://login.example"), "oauth-authorization-server"),
            "https://login.example/.well-known/oauth-authorization-server"
        );
        assert_eq!(
            well_known(
                &url("https://login.example/t/1/"),
                "oauth-authorization-server"
            ),
            "https://login.example/.well-known/oauth-authorization-server/t/1"
        );
    }

    #[test]
    fn an_issuer_is_the_same_with_or_without_its_trailing_slash() {
        assert!(same_issuer(
            "http://127.0.0.1:9100",
            &url("http://127.0.0.1:9100")
        ));
        assert!(!same_issuer(
            "http://127.0.0.1:9101",
            &url("http://127.0.0.1:9100")
        ));
    }
}

//! `[mcp.auth]`: `host mcp --http` as an OAuth 2.1 resource server, the authorization server
//! whose access tokens it accepts and the resource it is.

use serde::Deserialize;

use crate::units::HumanDuration;

/// Which access tokens `host mcp --http` accepts: those the authorization server at `issuer`
/// issued for `resource`, granting every scope of `scopes`.
///
/// ```toml
/// [mcp.auth]
/// issuer = "https://login.example.com"
/// resource = "https://tools.example.com/mcp"
/// scopes = ["mcp:tools"]
/// introspection = { client_id = "toolhost", client_secret_env = "INTROSPECTION_SECRET" }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceServerSection {
    /// The authorization server's issuer URL: its metadata is found under it (RFC 8414, then
    /// OpenID Connect discovery), and a token's `iss` must be exactly this.
    pub issuer: String,
    /// This server's canonical resource URI (RFC 8707), the URL clients reach `/mcp` at: a
    /// token's `aud` must name it.
    pub resource: String,
    /// The scopes a token must grant to use `/mcp` at all (none by default).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// How opaque tokens are checked (RFC 7662 introspection); without it only JWT access
    /// tokens (RFC 9068) are accepted.
    #[serde(default)]
    pub introspection: Option<IntrospectionSection>,
    /// How far a token's `exp` and `nbf` may be off the server's clock (60s by default).
    #[serde(default)]
    pub leeway: Option<HumanDuration>,
    /// The shortest time between two fetches of the issuer's keys when a token names a key
    /// that is not known (10s by default).
    #[serde(default)]
    pub keys_refetch_interval: Option<HumanDuration>,
}

/// Who this server is to the authorization server's introspection endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionSection {
    /// The client id the authorization server knows this resource server by.
    pub client_id: String,
    /// The environment variable that holds its secret (never the secret itself).
    pub client_secret_env: String,
}

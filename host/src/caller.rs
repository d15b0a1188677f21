//! Who is calling: the identity a verified access token gives a request to `host mcp`, carried
//! with each call it makes ([`CallContext::caller`](crate::source::CallContext::caller)) so
//! that policy, per-caller grants, limits and the audit log can tell callers apart.
//!
//! A request without an identity (stdio, a static bearer token, the library called directly)
//! has no `Caller`; everything that depends on one treats that as the single local user.

use std::collections::{BTreeMap, BTreeSet};

/// The verified identity of whoever made a request: what its access token said, after its
/// signature (or introspection), issuer, audience and lifetime were checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The token's `sub`: the person or service the token was issued for.
    pub subject: String,
    /// The token's `client_id`: the application that obtained it, when the token names one.
    pub client_id: Option<String>,
    /// The token's `iss`: the authorization server that issued it.
    pub issuer: String,
    /// The scopes the token grants (its `scope`, split on spaces).
    pub scopes: BTreeSet<String>,
    /// The token's other claims that policy may name (a groups claim, say), as JSON values.
    /// Never the token itself.
    pub claims: BTreeMap<String, serde_json::Value>,
}

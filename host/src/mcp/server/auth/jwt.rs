//! JWT access tokens (RFC 9068): the header read, the key found, the signature checked by
//! `jsonwebtoken` in an algorithm the issuer announces (never `none`, never HMAC), then `iss`,
//! `aud`, `exp` and `nbf` (with a small leeway) and the type `at+jwt`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Header, Validation};
use serde::Deserialize;
use serde_json::Value;

use super::keys::{ASYMMETRIC, Key, KeyCache, KeyError, KeySet};
use super::verified::Verified;
use crate::caller::Caller;

/// Why a JWT is refused; the text is the `error_description` a client sees (never the token).
#[derive(Debug, thiserror::Error)]
pub(super) enum JwtError {
    #[error("the token is not a JWT: {0}")]
    Malformed(String),
    #[error("the token is signed with {0:?}, which this server does not accept")]
    Algorithm(Algorithm),
    #[error("the token's type is {0:?}, not an access token (at+jwt)")]
    Type(Option<String>),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was issued by another authorization server")]
    Issuer,
    #[error("the token is for another resource")]
    Audience,
    #[error("the token lacks the claim `{0}`")]
    MissingClaim(String),
}

/// The claims of an access token this server reads; the others go to [`Caller::claims`].
#[derive(Deserialize)]
struct Claims {
    sub: String,
    iss: String,
    exp: u64,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

/// Whether `token` looks like a JWT (three dot-separated parts) rather than an opaque token.
pub(super) fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

/// What a token must say: who issued it, for which resource, and how far off the clock its
/// times may be.
pub(super) struct Expected<'a> {
    /// The issuer, as each of its spellings.
    pub issuers: &'a [String],
    /// This resource, as each of its spellings.
    pub audiences: &'a [String],
    pub leeway: Duration,
}

/// Checks `token`, a JWT access token, against `keys` and what it is `expected` to say:
/// who it stands for, until when, and the key that says so.
pub(super) async fn verify(
    token: &str,
    keys: &KeyCache,
    expected: &Expected<'_>,
) -> Result<Verified, JwtError> {
    let header = header(token)?;
    let (key, set) = keys.key(header.kid.as_deref()).await?;
    let (caller, exp) = checked(token, &header, &key, &set, expected)?;
    Ok(Verified {
        caller: std::sync::Arc::new(caller),
        exp,
        kid: header.kid,
        key,
        alg: header.alg,
    })
}

/// The header of `token`, if it is an access token in an algorithm this server could accept.
pub(super) fn header(token: &str) -> Result<Header, JwtError> {
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| JwtError::Malformed(e.to_string()))?;
    if !ASYMMETRIC.contains(&header.alg) {
        return Err(JwtError::Algorithm(header.alg));
    }
    let typ = header.typ.as_deref().map(str::to_ascii_lowercase);
    if !matches!(typ.as_deref(), Some("at+jwt" | "application/at+jwt")) {
        return Err(JwtError::Type(header.typ));
    }
    Ok(header)
}

/// Checks `token` (whose `header` passed [`header`]) with `key`, one of `set`: who it stands
/// for, and its `exp`.
pub(super) fn checked(
    token: &str,
    header: &Header,
    key: &Key,
    set: &KeySet,
    expected: &Expected<'_>,
) -> Result<(Caller, u64), JwtError> {
    if !set.algorithms.contains(&header.alg) || key.alg.is_some_and(|alg| alg != header.alg) {
        return Err(JwtError::Algorithm(header.alg));
    }
    let mut validation = Validation::new(header.alg);
    validation.leeway = expected.leeway.as_secs();
    validation.validate_nbf = true;
    validation.set_issuer(expected.issuers);
    validation.set_audience(expected.audiences);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data =
        jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation).map_err(refused)?;
    let exp = data.claims.exp;
    Ok((caller(data.claims), exp))
}

/// The refusal `error` from the JWT crate stands for.
fn refused(error: jsonwebtoken::errors::Error) -> JwtError {
    match error.kind() {
        ErrorKind::ExpiredSignature => JwtError::Expired,
        ErrorKind::ImmatureSignature => JwtError::NotYetValid,
        ErrorKind::InvalidIssuer => JwtError::Issuer,
        ErrorKind::InvalidAudience => JwtError::Audience,
        ErrorKind::MissingRequiredClaim(claim) => JwtError::MissingClaim(claim.clone()),
        ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm | ErrorKind::Crypto(_) => {
            JwtError::Signature
        }
        _ => JwtError::Malformed(error.to_string()),
    }
}

/// Who the claims say is calling.
fn caller(claims: Claims) -> Caller {
    const READ: [&str; 6] = ["aud", "exp", "nbf", "iat", "jti", "auth_time"];
    let other = claims
        .other
        .into_iter()
        .filter(|(name, _)| !READ.contains(&name.as_str()))
        .collect();
    Caller {
        subject: claims.sub,
        client_id: claims.client_id,
        issuer: claims.iss,
        scopes: scopes(claims.scope.as_deref()),
        claims: other,
    }
}

/// The scopes of a space-separated `scope` value.
pub(super) fn scopes(scope: Option<&str>) -> BTreeSet<String> {
    scope
        .unwrap_or_default()
        .split_ascii_whitespace()
        .map(str::to_owned)
        .collect()
}

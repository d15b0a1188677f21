//! Opaque access tokens: asked about at the authorization server's introspection endpoint
//! (RFC 7662), with this server's own client credentials. An active token's answer is cached
//! until the token's `exp`, under the token's SHA-256 (never the token itself), for a bounded
//! number of tokens.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::fetch;
use super::jwt::scopes;
use crate::caller::Caller;

/// The most introspection answers kept; past it, the expired ones go, then the cache is
/// emptied.
const MAX_CACHED: usize = 10_000;

/// How long an answer without an `exp` is kept.
const NO_EXP_TTL: u64 = 60;

/// Who this server is to the introspection endpoint.
#[derive(Clone)]
pub struct IntrospectionClient {
    /// The client id the authorization server knows this resource server by.
    pub client_id: String,
    /// Its secret.
    pub client_secret: String,
}

impl std::fmt::Debug for IntrospectionClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<hidden>")
            .finish()
    }
}

/// An introspection answer (RFC 7662 section 2.2); only `active` is required.
#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Value>,
}

/// Why an opaque token is refused; the text is what a client is told.
#[derive(Debug, thiserror::Error)]
pub(super) enum IntrospectionError {
    #[error("the token is not active")]
    Inactive,
    #[error("the token is for another resource")]
    Audience,
    #[error("the token was issued by another authorization server")]
    Issuer,
    #[error("the authorization server's answer names no subject nor client")]
    NoSubject,
    #[error("the authorization server could not be asked about the token: {0}")]
    Unavailable(String),
}

/// Asks the introspection endpoint, and remembers active tokens until they expire.
pub(super) struct Introspector {
    client: IntrospectionClient,
    cache: Mutex<HashMap<[u8; 32], (Caller, u64)>>,
}

impl Introspector {
    pub(super) fn new(client: IntrospectionClient) -> Self {
        Self {
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Who `token` stands for, by the cache or by asking `endpoint`.
    pub(super) async fn verify(
        &self,
        http: &reqwest::Client,
        endpoint: &str,
        token: &str,
        expected: (&str, &str),
        timeout: Duration,
    ) -> Result<Caller, IntrospectionError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = now();
        if let Some((caller, until)) = self.lock().get(&digest)
            && *until > now
        {
            return Ok(caller.clone());
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let request = http
            .post(endpoint)
            .basic_auth(&self.client.client_id, Some(&self.client.client_secret))
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        let answer: Answer = fetch::json(request, timeout).await.map_err(|error| {
            IntrospectionError::Unavailable(format!("{endpoint}: {}", crate::error::chain(&error)))
        })?;
        let (caller, until) = checked(answer, expected, now)?;
        self.remember(digest, caller.clone(), until, now);
        Ok(caller)
    }

    fn remember(&self, digest: [u8; 32], caller: Caller, until: u64, now: u64) {
        let mut cache = self.lock();
        if cache.len() >= MAX_CACHED {
            cache.retain(|_, (_, until)| *until > now);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(digest, (caller, until));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], (Caller, u64)>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The caller an active `answer` names, and until when (seconds since the epoch) it may be
/// trusted; `expected` is the issuer and the resource.
fn checked(
    answer: Answer,
    (issuer, resource): (&str, &str),
    now: u64,
) -> Result<(Caller, u64), IntrospectionError> {
    if !answer.active || answer.exp.is_some_and(|exp| exp <= now) {
        return Err(IntrospectionError::Inactive);
    }
    if let Some(iss) = &answer.iss
        && iss.trim_end_matches('/') != issuer.trim_end_matches('/')
    {
        return Err(IntrospectionError::Issuer);
    }
    let audience_ok = match &answer.aud {
        None => false,
        Some(Value::String(aud)) => aud == resource,
        Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(resource)),
        Some(_) => false,
    };
    if !audience_ok {
        return Err(IntrospectionError::Audience);
    }
    let until = answer.exp.unwrap_or(now + NO_EXP_TTL);
    let Some(subject) = answer.sub.or_else(|| answer.client_id.clone()) else {
        return Err(IntrospectionError::NoSubject);
    };
    let caller = Caller {
        subject,
        client_id: answer.client_id,
        issuer: answer.iss.unwrap_or_else(|| issuer.to_owned()),
        scopes: scopes(answer.scope.as_deref()),
        claims: Default::default(),
    };
    Ok((caller, until))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: Value) -> Answer {
        serde_json::from_value(json).expect("an answer")
    }

    const EXPECTED: (&str, &str) = ("http://as", "http://rs/mcp");

    #[test]
    fn only_an_active_answer_for_this_resource_is_a_caller() {
        let now = 1_000;
        let inactive = answer(serde_json::json!({ "active": false }));
        assert!(matches!(
            checked(inactive, EXPECTED, now),
            Err(IntrospectionError::Inactive)
        ));
        let other = answer(serde_json::json!({ "active": true, "aud": "http://rs/other" }));
        assert!(matches!(
            checked(other, EXPECTED, now),
            Err(IntrospectionError::Audience)
        ));
        let expired =
            answer(serde_json::json!({ "active": true, "aud": "http://rs/mcp", "exp": 999 }));
        assert!(matches!(
            checked(expired, EXPECTED, now),
            Err(IntrospectionError::Inactive)
        ));
        let good = answer(serde_json::json!({
            "active": true, "aud": ["http://rs/mcp"], "exp": 2_000, "sub": "alice",
            "scope": "mcp:tools mcp:read", "iss": "http://as/"
        }));
        let (caller, until) = checked(good, EXPECTED, now).expect("active");
        assert_eq!((caller.subject.as_str(), until), ("alice", 2_000));
        assert!(caller.scopes.contains("mcp:read"));
    }
}

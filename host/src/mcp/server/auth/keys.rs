//! The authorization server's signing keys: found through its metadata (`jwks_uri`), cached,
//! and fetched again when a token names a key id the cache does not hold (at most once per
//! refetch interval), so that a key rotation needs no restart. A fetch that fails keeps the
//! keys already held: calls with tokens signed by them go on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;
use url::Url;

use super::fetch;
use super::metadata::{self, IssuerMetadata};
use crate::error::chain;

/// The asymmetric algorithms a token may be signed with: never `none` (which the JWT crate
/// cannot even parse) nor HMAC, whose key would be the public key everyone has.
pub(super) const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How long keys are used before they are fetched again even if no token asked for a new one.
const MAX_KEY_AGE: Duration = Duration::from_secs(3600);

/// One verification key of the issuer.
pub(super) struct Key {
    pub decoding: DecodingKey,
    /// The algorithm the key set says it is for, when it says.
    pub alg: Option<Algorithm>,
    /// The key as the key set publishes it, to tell whether a later key set still does.
    jwk: Value,
}

/// The keys held, by key id, and the algorithms the issuer announces.
#[derive(Default)]
pub(super) struct KeySet {
    keys: HashMap<String, Arc<Key>>,
    /// Keys without a key id, for tokens without one.
    unnamed: Vec<Arc<Key>>,
    /// The asymmetric algorithms the issuer's metadata announces (all of [`ASYMMETRIC`] when it
    /// announces none).
    pub algorithms: Vec<Algorithm>,
}

impl KeySet {
    /// The key `kid` names; a token without a `kid` gets the only key, when there is one.
    pub(super) fn find(&self, kid: Option<&str>) -> Option<Arc<Key>> {
        match kid {
            Some(kid) => self.keys.get(kid).cloned(),
            None if self.keys.len() + self.unnamed.len() == 1 => {
                self.keys.values().chain(&self.unnamed).next().cloned()
            }
            None => None,
        }
    }

    /// This set, holding on to each key of `previous` it publishes unchanged (the very same
    /// `Arc`), so that whatever rests on a key ([`KeyCache::trusts`]) outlives a fetch that
    /// brings it again, and not one that drops or replaces it.
    fn keeping(mut self, previous: &KeySet) -> Self {
        for (kid, key) in &mut self.keys {
            if let Some(old) = previous.keys.get(kid)
                && old.jwk == key.jwk
            {
                *key = old.clone();
            }
        }
        for key in &mut self.unnamed {
            if let Some(old) = previous.unnamed.iter().find(|old| old.jwk == key.jwk) {
                *key = old.clone();
            }
        }
        self
    }
}

/// What the cache holds, and when it last tried to fetch.
#[derive(Default)]
struct Held {
    set: Arc<KeySet>,
    metadata: Option<Arc<IssuerMetadata>>,
    fetched: Option<Instant>,
    tried: Option<Instant>,
    /// Why the last fetch failed, told with a token whose key is not held.
    failure: Option<String>,
}

/// The issuer's keys, fetched when needed.
pub(super) struct KeyCache {
    client: reqwest::Client,
    issuer: Url,
    timeout: Duration,
    refetch_interval: Duration,
    held: Mutex<Held>,
    /// One fetch at a time; tokens whose key is held never wait for it.
    fetching: tokio::sync::Mutex<()>,
}

/// Why a token's key is not to be had.
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyError {
    #[error("the token names a key the authorization server does not publish")]
    Unknown,
    #[error("the authorization server's keys could not be fetched: {0}")]
    Unavailable(String),
}

impl KeyCache {
    pub(super) fn new(
        client: reqwest::Client,
        issuer: Url,
        timeout: Duration,
        refetch_interval: Duration,
    ) -> Self {
        Self {
            client,
            issuer,
            timeout,
            refetch_interval,
            held: Mutex::new(Held::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The issuer's metadata, fetched with the keys (none before the first fetch).
    pub(super) async fn metadata(&self) -> Result<Arc<IssuerMetadata>, KeyError> {
        if let Some(metadata) = self.lock().metadata.clone() {
            return Ok(metadata);
        }
        self.refresh(None).await;
        let held = self.lock();
        held.metadata.clone().ok_or_else(|| {
            let failure = held.failure.clone();
            KeyError::Unavailable(failure.unwrap_or_else(|| "not fetched yet".to_owned()))
        })
    }

    /// The key `kid` names and the algorithms allowed, fetching the key set again when the
    /// key is not held (at most once per refetch interval) or the set is old.
    pub(super) async fn key(&self, kid: Option<&str>) -> Result<(Arc<Key>, Arc<KeySet>), KeyError> {
        let (found, fresh) = {
            let held = self.lock();
            let fresh = held.fetched.is_some_and(|at| at.elapsed() < MAX_KEY_AGE);
            (held.set.find(kid).map(|key| (key, held.set.clone())), fresh)
        };
        match found {
            Some(found) if fresh => return Ok(found),
            _ => self.refresh(kid).await,
        }
        let held = self.lock();
        if let Some(key) = held.set.find(kid) {
            return Ok((key, held.set.clone()));
        }
        match (&held.failure, held.fetched) {
            (Some(failure), None) => Err(KeyError::Unavailable(failure.clone())),
            _ => Err(KeyError::Unknown),
        }
    }

    /// Whether `key`, which `kid` named, is still the one the key set holds under that id, for
    /// an algorithm the issuer still announces, in a key set fetched within the hour: what a
    /// token verified with it rests on. Never fetches (a token found untrusted is verified
    /// again, which fetches what it needs).
    pub(super) fn trusts(&self, kid: Option<&str>, key: &Arc<Key>, alg: Algorithm) -> bool {
        let held = self.lock();
        let fresh = held.fetched.is_some_and(|at| at.elapsed() < MAX_KEY_AGE);
        fresh
            && held.set.algorithms.contains(&alg)
            && (held.set.find(kid)).is_some_and(|held_key| Arc::ptr_eq(&held_key, key))
    }

    /// Fetches the metadata and key set again, unless another fetch just did (or tried
    /// within the refetch interval), or already brought the key `kid` names.
    async fn refresh(&self, kid: Option<&str>) {
        let _one = self.fetching.lock().await;
        {
            let held = self.lock();
            let wanted_is_held = kid.is_some() && held.set.find(kid).is_some();
            let tried_lately = held
                .tried
                .is_some_and(|at| at.elapsed() < self.refetch_interval);
            if wanted_is_held || tried_lately {
                return;
            }
        }
        self.lock().tried = Some(Instant::now());
        match self.fetch().await {
            Ok((metadata, set)) => {
                tracing::debug!("fetched {} keys of {}", set.keys.len(), self.issuer);
                let mut held = self.lock();
                held.set = Arc::new(set.keeping(&held.set));
                held.metadata = Some(Arc::new(metadata));
                held.fetched = Some(Instant::now());
                held.failure = None;
            }
            Err(failure) => {
                tracing::warn!("{failure} (the keys held so far stay in use)");
                self.lock().failure = Some(failure);
            }
        }
    }

    /// The issuer's metadata and key set, read anew.
    async fn fetch(&self) -> Result<(IssuerMetadata, KeySet), String> {
        let metadata = metadata::discover(&self.client, &self.issuer, self.timeout)
            .await
            .map_err(|error| chain(&error))?;
        let Some(jwks_uri) = &metadata.jwks_uri else {
            return Err(format!(
                "the authorization server {} publishes no `jwks_uri`: its JWT access tokens \
                 cannot be checked",
                self.issuer
            ));
        };
        let document: JwkSetDocument =
            fetch::json(self.client.get(jwks_uri), self.timeout)
                .await
                .map_err(|error| format!("the key set at {jwks_uri}: {}", chain(&error)))?;
        let set = key_set(document, &metadata);
        Ok((metadata, set))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A JWK Set as sent: each key read on its own, so that one this server cannot use (an
/// encryption key, a type the JWT crate does not know) does not spoil the others.
#[derive(Deserialize)]
pub(super) struct JwkSetDocument {
    pub keys: Vec<Value>,
}

/// The signature keys of `document` this server can use, and the algorithms allowed.
pub(super) fn key_set(document: JwkSetDocument, metadata: &IssuerMetadata) -> KeySet {
    let mut set = KeySet {
        algorithms: allowed_algorithms(metadata),
        ..KeySet::default()
    };
    for value in document.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else {
            tracing::debug!("skipped a key the JWT crate cannot read");
            continue;
        };
        let for_encryption = matches!(
            jwk.common.public_key_use,
            Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
        );
        // A symmetric key in a public key set is a mistake: never a verification key.
        if for_encryption || matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            continue;
        }
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else {
            tracing::debug!("skipped a malformed key {:?}", jwk.common.key_id);
            continue;
        };
        let alg = jwk
            .common
            .key_algorithm
            .and_then(|alg| alg.to_string().parse::<Algorithm>().ok());
        let key = Arc::new(Key {
            decoding,
            alg,
            jwk: value,
        });
        match jwk.common.key_id {
            Some(kid) => {
                set.keys.insert(kid, key);
            }
            None => set.unnamed.push(key),
        }
    }
    set
}

/// The asymmetric algorithms `metadata` announces, or all of them when it announces none.
fn allowed_algorithms(metadata: &IssuerMetadata) -> Vec<Algorithm> {
    let Some(announced) = &metadata.id_token_signing_alg_values_supported else {
        return ASYMMETRIC.to_vec();
    };
    announced
        .iter()
        .filter_map(|name| name.parse::<Algorithm>().ok())
        .filter(|alg| ASYMMETRIC.contains(alg))
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use serde_json::json;

    use super::*;

    /// Two P-256 public keys (made for these tests; their private halves were thrown away).
    const POINTS: [(&str, &str); 2] = [
        (
            "gm-Dwap-InL9i_b2f_69R9woBai8HdeLeu_QcNEmUhQ",
            "ZBkg0yqoL2C4nbENqYO6gBAOmVhZwO3bYgNpAuDV4Do",
        ),
        (
            "VaF_YcyTHoMbg1-UOa8AV_uZ2JNvBub_9n7zrMgHsK0",
            "O5yXmlzD87I5Q_GcsoAiqAQYwxQL5qoyAnansyHlNcI",
        ),
    ];

    /// A JWK of the `n`th test key, named `kid`.
    fn jwk(kid: &str, n: usize) -> Value {
        let (x, y) = POINTS[n];
        json!({ "kty": "EC", "crv": "P-256", "x": x, "y": y, "use": "sig", "kid": kid })
    }

    fn metadata() -> IssuerMetadata {
        IssuerMetadata {
            issuer: "http://127.0.0.1:1".to_owned(),
            jwks_uri: None,
            introspection_endpoint: None,
            id_token_signing_alg_values_supported: Some(vec!["ES256".to_owned()]),
        }
    }

    /// A key set of the first test key under each of `kids`.
    pub(in crate::mcp::server::auth) fn key_set(kids: &[&str]) -> KeySet {
        let keys = kids.iter().map(|kid| jwk(kid, 0)).collect();
        super::key_set(JwkSetDocument { keys }, &metadata())
    }

    #[test]
    fn a_key_published_again_unchanged_is_kept_and_a_replaced_one_is_not() {
        let first = key_set(&["k1", "k2"]);
        let (k1, k2) = (first.find(Some("k1")), first.find(Some("k2")));
        let (k1, k2) = (k1.expect("k1"), k2.expect("k2"));
        // k1 published again as it was, k2 under a new key, k3 new.
        let document = JwkSetDocument {
            keys: vec![jwk("k1", 0), jwk("k2", 1), jwk("k3", 1)],
        };
        let next = super::key_set(document, &metadata()).keeping(&first);
        assert!(Arc::ptr_eq(&next.find(Some("k1")).expect("k1"), &k1));
        assert!(!Arc::ptr_eq(&next.find(Some("k2")).expect("k2"), &k2));
        assert!(next.find(Some("k3")).is_some());
    }
}

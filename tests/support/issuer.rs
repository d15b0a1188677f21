//! An OAuth issuer a test controls: RFC 8414 metadata and a JWK Set of EC P-256 keys the
//! test makes, on a real HTTP server on 127.0.0.1, whose key set can be made to fail; and
//! access tokens signed with those keys, good or forged.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

use crate::server::{Reply, ReplyBody, TestServer};

/// The resource the test servers are configured as (the audience of good tokens).
pub const RESOURCE: &str = "http://127.0.0.1:1/mcp";

/// An EC P-256 signing key, with its key id and public JWK.
pub struct SigningKey {
    kid: String,
    pkcs8: Vec<u8>,
    /// The public key, as the issuer publishes it.
    pub jwk: Value,
}

impl SigningKey {
    /// A new key, named `kid`.
    pub fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("the key just made");
        let point = pair.public_key().as_ref();
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Self {
            kid: kid.to_owned(),
            pkcs8: pkcs8.as_ref().to_vec(),
            jwk,
        }
    }

    /// The private key, PKCS#8 DER.
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// A token of `claims`, signed ES256 with this key, typed `at+jwt`.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("at+jwt".to_owned());
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8))
            .expect("signed")
    }
}

/// How the test issuer's key set answers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// The keys published.
    Served,
    /// 503.
    Down,
    /// The keys, after two minutes.
    Slow,
    /// Not JSON.
    Garbage,
}

/// An issuer this test controls: RFC 8414 metadata and a JWK Set of the keys it publishes.
pub struct TestIssuer {
    server: TestServer,
    published: Arc<Mutex<Vec<Value>>>,
    keys: Arc<Mutex<Keys>>,
}

impl TestIssuer {
    /// Starts it on a free port of 127.0.0.1, publishing `published`.
    pub async fn start(published: &[&SigningKey]) -> Self {
        let url: Arc<OnceLock<String>> = Arc::default();
        let published = Arc::new(Mutex::new(
            published
                .iter()
                .map(|key| key.jwk.clone())
                .collect::<Vec<_>>(),
        ));
        let keys = Arc::new(Mutex::new(Keys::Served));
        let server = TestServer::start({
            let (url, published, keys) = (url.clone(), published.clone(), keys.clone());
            move |request| {
                let issuer = url.get().cloned().unwrap_or_default();
                match request.path.as_str() {
                    "/.well-known/oauth-authorization-server" => Reply::json(
                        200,
                        &json!({
                            "issuer": issuer,
                            "jwks_uri": format!("{issuer}/jwks"),
                            "id_token_signing_alg_values_supported": ["ES256", "HS256"],
                        }),
                    ),
                    "/jwks" => key_set(
                        *keys.lock().unwrap_or_else(|e| e.into_inner()),
                        &published.lock().unwrap_or_else(|e| e.into_inner()),
                    ),
                    _ => Reply::text(404, "not found"),
                }
            }
        })
        .await;
        url.set(server.url()).expect("set once");
        Self {
            server,
            published,
            keys,
        }
    }

    /// `http://127.0.0.1:PORT`, its issuer identifier.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// How the key set answers from now on.
    pub fn set_keys(&self, keys: Keys) {
        *self.keys.lock().unwrap_or_else(|e| e.into_inner()) = keys;
    }

    /// Publishes `key` too.
    pub fn publish(&self, key: &SigningKey) {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(key.jwk.clone());
    }

    /// Stops publishing `key` (a rotation's last step).
    pub fn retire(&self, key: &SigningKey) {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|published| *published != key.jwk);
    }

    /// How many times the key set was asked for.
    pub fn key_set_fetches(&self) -> usize {
        (self.server.requests().iter())
            .filter(|request| request.path == "/jwks")
            .count()
    }

    /// The claims of a good token from this issuer, changed by `change`.
    pub fn claims(&self, change: impl FnOnce(&mut Value)) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_secs();
        let mut claims = json!({
            "iss": self.url(), "aud": RESOURCE, "sub": "alice", "client_id": "app",
            "scope": "mcp:tools", "iat": now, "nbf": now, "exp": now + 600,
            "jti": "1", "groups": ["staff"],
        });
        change(&mut claims);
        claims
    }
}

fn key_set(keys: Keys, published: &[Value]) -> Reply {
    let document = json!({ "keys": published }).to_string().into_bytes();
    match keys {
        Keys::Served => Reply::json(200, &json!({ "keys": published })),
        Keys::Down => Reply::text(503, "down"),
        Keys::Garbage => Reply::text(200, "<html>not a key set</html>"),
        // Far slower than the server's 5-second limit on a fetch.
        Keys::Slow => Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: ReplyBody::Chunks {
                chunks: vec![b" ".to_vec(), document],
                pause: Duration::from_secs(120),
                cut: false,
            },
        },
    }
}

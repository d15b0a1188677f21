//! Bad access tokens, forged with keys this test makes and serves from an issuer it controls
//! (metadata and a JWK Set on a real HTTP server on 127.0.0.1): each is answered with the
//! right status and `WWW-Authenticate`, the server stays up, and a good token still works.
//! Then the issuer's key set goes down, slow and garbage: tokens whose key is held keep
//! working, the others are refused after a bounded wait, and a new key is picked up without a
//! restart.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::issuer::{Keys, RESOURCE, SigningKey, TestIssuer};
use toolhost_tests::mcp::{HttpClient, HttpServer, TRACE_BUT_THE_COMPILER};

/// `host mcp --http` over the calculator, taking the tokens of `issuer` for [`RESOURCE`],
/// fetching its keys again at most every `refetch`.
async fn resource_server(issuer: &TestIssuer, refetch: &str) -> (HttpServer, ManifestFile) {
    let manifest = ManifestFile::calculator(&format!(
        "[mcp.auth]\nissuer = {:?}\nresource = {RESOURCE:?}\nscopes = [\"mcp:tools\"]\n\
         keys_refetch_interval = {refetch:?}\n",
        issuer.url()
    ));
    let server =
        HttpServer::start(&[manifest.arg()], &[("RUST_LOG", TRACE_BUT_THE_COMPILER)]).await;
    server.loaded().await;
    (server, manifest)
}

/// The status and `WWW-Authenticate` of an `initialize` sent with `token` (none: no
/// `Authorization` header).
pub async fn attempt(url: &str, token: Option<&str>) -> (u16, String) {
    let mut client = HttpClient::new(url);
    if let Some(token) = token {
        client
            .headers
            .push(("authorization".into(), format!("Bearer {token}")));
    }
    let (_, initialize) = client.initialize_message();
    let response = client.post(&initialize).send().await.expect("POST works");
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response.status().as_u16(), challenge)
}

/// A call of `add` with `token`, which must work.
pub async fn call_works(url: &str, token: &str) {
    let mut client = HttpClient::new(url);
    client
        .headers
        .push(("authorization".into(), format!("Bearer {token}")));
    client.initialize().await;
    let answer = client.call("add", json!({ "a": 20, "b": 22 })).await;
    assert_eq!(crate::text(&answer), r#"{"result":42.0}"#, "{answer}");
}

/// `token` in its three parts, the payload replaced by `claims`.
fn with_payload(token: &str, claims: &Value) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{}.{payload}.{}", parts[0], parts[2])
}

/// `token` with one character of its signature changed.
fn with_signature_changed(token: &str) -> String {
    let at = token.rfind('.').expect("three parts") + 5;
    let changed = if &token[at..=at] == "A" { "B" } else { "A" };
    format!("{}{changed}{}", &token[..at], &token[at + 1..])
}

#[tokio::test]
async fn forged_and_malformed_tokens_are_refused_with_a_challenge() {
    let key = SigningKey::new("k1");
    let issuer = TestIssuer::start(&[&key]).await;
    let (server, _manifest) = resource_server(&issuer, "1h").await;
    let good = key.sign(&issuer.claims(|_| {}));
    call_works(&server.url, &good).await;

    let stranger = SigningKey::new("k-unknown");
    let header_json = |header: Value| URL_SAFE_NO_PAD.encode(header.to_string());
    let payload = URL_SAFE_NO_PAD.encode(issuer.claims(|_| {}).to_string());
    let none = format!(
        "{}.{payload}.",
        header_json(json!({ "alg": "none", "typ": "at+jwt", "kid": "k1" }))
    );
    // Algorithm confusion: HS256 keyed with the public key everyone can fetch.
    let mut hs_header = Header::new(Algorithm::HS256);
    hs_header.typ = Some("at+jwt".to_owned());
    hs_header.kid = Some("k1".to_owned());
    let public_key = key.jwk.to_string();
    let confused = jsonwebtoken::encode(
        &hs_header,
        &issuer.claims(|_| {}),
        &EncodingKey::from_secret(public_key.as_bytes()),
    )
    .unwrap();
    let mut untyped_header = Header::new(Algorithm::ES256);
    untyped_header.kid = Some("k1".to_owned());
    let untyped = jsonwebtoken::encode(
        &untyped_header,
        &issuer.claims(|_| {}),
        &EncodingKey::from_ec_der(key.pkcs8()),
    )
    .unwrap();
    let cases: Vec<(&str, String)> = vec![
        (
            "expired",
            key.sign(&issuer.claims(|c| c["exp"] = json!(1_000_000))),
        ),
        (
            "not yet valid",
            key.sign(&issuer.claims(|c| c["nbf"] = json!(c["exp"].as_u64().unwrap() + 3600))),
        ),
        (
            "wrong issuer",
            key.sign(&issuer.claims(|c| c["iss"] = json!("http://127.0.0.1:2"))),
        ),
        (
            "another resource",
            key.sign(&issuer.claims(|c| c["aud"] = json!("http://127.0.0.1:1/other"))),
        ),
        ("alg none", none),
        ("HS256 keyed with the public key", confused),
        ("not typed at+jwt", untyped),
        ("unknown kid", stranger.sign(&issuer.claims(|_| {}))),
        // `good` was verified above, and is kept as verified: a token changed in any byte
        // is not it.
        (
            "tampered payload",
            with_payload(&good, &issuer.claims(|c| c["sub"] = json!("admin"))),
        ),
        ("tampered signature", with_signature_changed(&good)),
        ("bad base64", "e30!!.e30$$.c2ln~~".to_owned()),
        ("one part", "eyJhbGciOiJFUzI1NiJ9".to_owned()),
        ("two parts", good.rsplit_once('.').unwrap().0.to_owned()),
    ];
    for (case, token) in &cases {
        let (status, challenge) = attempt(&server.url, Some(token)).await;
        assert_eq!(status, 401, "{case}: {challenge}");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\""),
            "{case}: {challenge}"
        );
        assert!(
            challenge.contains(
                "resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp\""
            ),
            "{case}: {challenge}"
        );
    }
    let (status, challenge) = attempt(&server.url, Some(&"a".repeat(9000))).await;
    assert_eq!(status, 400, "{challenge}");
    assert!(
        challenge.starts_with("Bearer error=\"invalid_request\""),
        "{challenge}"
    );
    let (status, challenge) = attempt(&server.url, None).await;
    assert_eq!(status, 401);
    assert!(
        !challenge.contains("error="),
        "no token, no error code: {challenge}"
    );
    assert!(challenge.contains("scope=\"mcp:tools\""), "{challenge}");

    // A scope missing: 403, naming the scope to step up to.
    let narrow = key.sign(&issuer.claims(|c| c["scope"] = json!("mcp:read")));
    let (status, challenge) = attempt(&server.url, Some(&narrow)).await;
    assert_eq!(status, 403, "{challenge}");
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"mcp:tools\""), "{challenge}");

    // Still serving; the key set was fetched once, at the first call: the unknown key id
    // came within keys_refetch_interval (1h here) of that fetch, so it fetched nothing.
    call_works(&server.url, &good).await;
    assert_eq!(issuer.key_set_fetches(), 1);
    let log = server.stderr.text();
    for (case, token) in cases
        .iter()
        .chain([("narrow", narrow), ("good", good)].iter())
    {
        let signature = token.rsplit('.').next().unwrap();
        if signature.len() > 8 {
            assert!(!log.contains(signature), "{case}: the log holds the token");
        }
    }
}

#[tokio::test]
async fn a_key_set_down_slow_or_garbage_costs_only_the_tokens_it_would_bring() {
    let (old, new) = (SigningKey::new("old"), SigningKey::new("new"));
    let issuer = TestIssuer::start(&[&old]).await;
    issuer.set_keys(Keys::Down);
    let (server, _manifest) = resource_server(&issuer, "0s").await;
    let (old_token, new_token) = (
        old.sign(&issuer.claims(|_| {})),
        new.sign(&issuer.claims(|_| {})),
    );

    // No key ever fetched: the server cannot tell, and says so (503), rather than blame the
    // token.
    let (status, _) = attempt(&server.url, Some(&old_token)).await;
    assert_eq!(status, 503);
    issuer.set_keys(Keys::Served);
    call_works(&server.url, &old_token).await;

    for keys in [Keys::Down, Keys::Garbage] {
        issuer.set_keys(keys);
        let (status, challenge) = attempt(&server.url, Some(&new_token)).await;
        assert_eq!(status, 401, "{challenge}");
        call_works(&server.url, &old_token).await;
    }

    // A slow key set holds up only the token that needs it: the one whose key is held is
    // answered first.
    issuer.set_keys(Keys::Slow);
    let waiting = tokio::spawn({
        let (url, token) = (server.url.clone(), new_token.clone());
        async move { attempt(&url, Some(&token)).await }
    });
    call_works(&server.url, &old_token).await;
    assert!(
        !waiting.is_finished(),
        "the token with the held key waited for the key set"
    );
    let (status, _) = waiting.await.unwrap();
    assert_eq!(status, 401, "the wait for the key set is bounded");

    // The issuer rotates to the new key: picked up without a restart.
    issuer.publish(&new);
    issuer.set_keys(Keys::Served);
    call_works(&server.url, &new_token).await;
    call_works(&server.url, &old_token).await;

    // The old key retired. Its token, verified and kept since, is refused as soon as the
    // server holds the key set without it (fetched for a token of a key it did not hold):
    // a verified token lasts no longer than its key.
    let newest = SigningKey::new("newest");
    issuer.retire(&old);
    issuer.publish(&newest);
    call_works(&server.url, &newest.sign(&issuer.claims(|_| {}))).await;
    let (status, challenge) = attempt(&server.url, Some(&old_token)).await;
    assert_eq!(status, 401, "{challenge}");
    assert!(challenge.contains("invalid_token"), "{challenge}");
    call_works(&server.url, &new_token).await;
}

/// The static token is for one user, access tokens for many: given both, `host mcp` does not
/// pick one silently, it refuses to start and says to use one.
#[tokio::test]
async fn a_static_token_and_an_authorization_server_together_are_refused() {
    let manifest = ManifestFile::calculator(&format!(
        "[mcp.auth]\nissuer = \"http://127.0.0.1:2\"\nresource = {RESOURCE:?}\n"
    ));
    let output = HostCommand::new("mcp")
        .args([
            manifest.arg(),
            "--http",
            "127.0.0.1:0",
            "--token-env",
            "STATIC_TOKEN",
        ])
        .env("STATIC_TOKEN", "s3cret-static-token")
        .run()
        .await;
    assert_eq!(output.code(), Some(2), "{}", output.stderr);
    let stderr = &output.stderr;
    assert!(
        stderr.contains("--token-env") && stderr.contains("[mcp.auth]"),
        "{stderr}"
    );
    assert!(stderr.contains("use one"), "{stderr}");
    assert!(!stderr.contains("s3cret-static-token"), "{stderr}");
}

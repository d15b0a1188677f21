//! Replicas as OAuth resource servers: each checks access tokens on its own, with nothing
//! shared but the issuer's published keys (docs/deploy.md, "Access tokens across replicas").
//! A real authorization server (oidc-provider) issues the tokens; HAProxy spreads the calls.

use std::collections::BTreeSet;

use serde_json::json;
use toolhost_tests::authorization::AuthorizationServer;
use toolhost_tests::load::tool_text;
use toolhost_tests::mcp::{HttpClient, HttpServer, messages};

use crate::haproxy::Haproxy;
use crate::{REPLICAS, warm_cache};

/// The resource the replicas are: the balancer's URL, as clients know it. (HAProxy's port is
/// chosen after the replicas start, so the test names it once, the same on all of them.)
const RESOURCE: &str = "http://127.0.0.1:1/mcp";

/// A `tools/call` of `add` through `url` with `token` (none: no `Authorization`): the status,
/// the replica that answered, the `WWW-Authenticate` and the body.
async fn call(url: &str, token: Option<&str>) -> (u16, String, String, String) {
    // A client of its own, so that HAProxy balances each call.
    let mut client = HttpClient::new(url);
    if let Some(token) = token {
        client
            .headers
            .push(("authorization".into(), format!("Bearer {token}")));
    }
    let (_, message) = client.message(
        "tools/call",
        json!({ "name": "add", "arguments": { "a": 1.5, "b": 2.25 } }),
    );
    let response = client.post(&message).send().await.unwrap();
    let header = |name: &str| {
        (response.headers().get(name))
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (replica, challenge) = (header("x-replica"), header("www-authenticate"));
    let status = response.status().as_u16();
    (status, replica, challenge, response.text().await.unwrap())
}

#[tokio::test]
async fn every_replica_checks_tokens_with_only_the_issuers_keys_shared() {
    let issuer = AuthorizationServer::start().await;
    let shared = warm_cache().await;
    let manifest = shared.dir.path().join("protected.toml");
    let calculator = std::fs::read_to_string(shared.manifest()).unwrap();
    std::fs::write(
        &manifest,
        format!(
            "{calculator}\n[mcp.auth]\nissuer = {:?}\nresource = {RESOURCE:?}\n\
             scopes = [\"mcp:tools\"]\nkeys_refetch_interval = \"0s\"\n",
            issuer.issuer
        ),
    )
    .unwrap();
    let cache = shared.cache();
    let mut servers: Vec<HttpServer> = Vec::new();
    for _ in 0..REPLICAS {
        let args = [manifest.to_str().unwrap(), "--stateless"];
        let env = [("TOOLHOST_COMPONENT_CACHE", cache.to_str().unwrap())];
        servers.push(HttpServer::start(&args, &env).await);
    }
    let authorities: Vec<String> = servers.iter().map(|s| s.authority.clone()).collect();
    let haproxy = Haproxy::start(&authorities, false).await;

    // One token, good on every replica; none, refused by every one the same way.
    let token = issuer.token("svc", "mcp:tools", RESOURCE).await;
    let mut answered = BTreeSet::new();
    for _ in 0..REPLICAS * 3 {
        let (status, replica, _, body) = call(&haproxy.url, Some(&token)).await;
        assert_eq!(status, 200, "{body}");
        let answer = messages(&body).pop().unwrap();
        let result: serde_json::Value = serde_json::from_str(tool_text(&answer).unwrap()).unwrap();
        assert_eq!(result, json!({ "result": 3.75 }), "{body}");
        answered.insert(replica);
    }
    assert_eq!(
        answered.len(),
        REPLICAS,
        "every replica answered: {answered:?}"
    );
    let mut challenges = BTreeSet::new();
    for _ in 0..REPLICAS {
        let (status, _, challenge, _) = call(&haproxy.url, None).await;
        assert_eq!(status, 401);
        challenges.insert(challenge);
    }
    assert_eq!(challenges.len(), 1, "{challenges:?}");

    // A key rotation reaches every replica without a restart.
    issuer.rotate().await;
    let rotated = issuer.token("svc", "mcp:tools", RESOURCE).await;
    let mut answered = BTreeSet::new();
    for _ in 0..REPLICAS * 3 {
        let (status, replica, _, body) = call(&haproxy.url, Some(&rotated)).await;
        assert_eq!(status, 200, "{body}");
        answered.insert(replica);
    }
    assert_eq!(answered.len(), REPLICAS, "{answered:?}");
}

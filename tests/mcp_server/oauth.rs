//! `host mcp --http` as an OAuth 2.1 resource server in front of a real authorization server,
//! `oidc-provider` (tests/mcp-peers/authorization_server.mjs): its resource metadata, its
//! challenges, JWT access tokens (and a key rotation), opaque ones by introspection, and real
//! clients logging in: curl-like raw requests, toolhost's own MCP client (client
//! credentials) and the Python MCP SDK's OAuth client (dynamic registration, the
//! authorization code with PKCE). No token ever reaches the log, even at `RUST_LOG=trace`.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt as _, BufReader};

use serde_json::{Value, json};
use toolhost_tests::authorization::{AuthorizationServer, kid};
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::mcp::{HttpServer, TRACE_BUT_THE_COMPILER};

use crate::oauth_tokens::{attempt, call_works};

/// A protected `host mcp --http` over the calculator, and the resource URI it is.
struct Protected {
    server: HttpServer,
    resource: String,
    _manifest: ManifestFile,
}

impl Protected {
    /// Serves the calculator on a free port, taking `issuer`'s tokens with `mcp:tools`;
    /// opaque tokens are introspected as the client `rs`.
    async fn start(issuer: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let manifest = ManifestFile::calculator(&format!(
            r#"[mcp.auth]
issuer = "{issuer}"
resource = "{resource}"
scopes = ["mcp:tools"]
keys_refetch_interval = "0s"
introspection = {{ client_id = "rs", client_secret_env = "RS_SECRET" }}
"#
        ));
        let server = HttpServer::start_on(
            &format!("127.0.0.1:{port}"),
            &[manifest.arg()],
            &[
                ("RUST_LOG", TRACE_BUT_THE_COMPILER),
                ("RS_SECRET", "rs-secret"),
            ],
        )
        .await;
        server.loaded().await;
        Self {
            server,
            resource,
            _manifest: manifest,
        }
    }

    /// Fails the test when the server's log holds any of `tokens` (or their signatures).
    fn assert_log_lacks(&self, tokens: &[&str]) {
        let log = self.server.stderr.text();
        assert!(log.contains("TRACE"), "the server logged at trace level");
        for token in tokens {
            let signature = token.rsplit('.').next().unwrap();
            assert!(!log.contains(token), "the log holds a token");
            assert!(
                !log.contains(signature),
                "the log holds a token's signature"
            );
        }
    }
}

#[tokio::test]
async fn tokens_from_oidc_provider_reach_the_tools_and_no_further() {
    let issuer = AuthorizationServer::start().await;
    let protected = Protected::start(&issuer.issuer).await;
    let (url, resource) = (&protected.server.url, &protected.resource);

    // The resource metadata, at the path-suffixed and the bare well-known URL.
    let expected = json!({
        "resource": resource,
        "authorization_servers": [issuer.issuer],
        "scopes_supported": ["mcp:tools"],
        "bearer_methods_supported": ["header"],
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let answer = protected.server.get(path).await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        let document: Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
        assert_eq!(document, expected, "{path}");
    }
    let (status, challenge) = attempt(url, None).await;
    assert_eq!(status, 401);
    let metadata_url = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp:tools\"")
    );

    // A JWT access token (client credentials) calls tools; one without the scope is told
    // which to step up to; one for another resource is refused.
    let jwt = issuer.token("svc", "mcp:tools", resource).await;
    call_works(url, &jwt).await;
    let narrow = issuer.token("svc-narrow", "mcp:read", resource).await;
    let (status, challenge) = attempt(url, Some(&narrow)).await;
    assert_eq!(status, 403, "{challenge}");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"mcp:tools\""), "{challenge}");
    let elsewhere = issuer
        .token("svc", "mcp:tools", "http://127.0.0.1:1/other")
        .await;
    let (status, challenge) = attempt(url, Some(&elsewhere)).await;
    assert_eq!(status, 401, "{challenge}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");

    // Opaque tokens, by introspection: an active one works, a revoked one is refused.
    let opaque = issuer.token("svc-opaque", "mcp:tools", resource).await;
    assert!(!opaque.contains('.'), "an opaque token");
    call_works(url, &opaque).await;
    let revoked = issuer.token("svc-opaque", "mcp:tools", resource).await;
    issuer.revoke("svc-opaque", &revoked).await;
    let (status, challenge) = attempt(url, Some(&revoked)).await;
    assert_eq!(status, 401, "{challenge}");
    assert!(challenge.contains("the token is not active"), "{challenge}");

    // The issuer rotates its key: a token signed with the new one works at once, without a
    // restart, and one signed with the old one still does.
    let new_kid = issuer.rotate().await;
    let rotated = issuer.token("svc", "mcp:tools", resource).await;
    assert_eq!(kid(&rotated), new_kid);
    assert_ne!(kid(&jwt), new_kid);
    call_works(url, &rotated).await;
    call_works(url, &jwt).await;

    protected.assert_log_lacks(&[&jwt, &narrow, &elsewhere, &opaque, &revoked, &rotated]);
}

#[tokio::test]
async fn toolhost_own_client_calls_a_protected_server_with_client_credentials() {
    let issuer = AuthorizationServer::start().await;
    let protected = Protected::start(&issuer.issuer).await;
    let client = ManifestFile::new(&format!(
        r#"[mcp_servers.protected]
url = "{}"
auth = {{ grant = "client_credentials", client_id = "svc", client_secret = "${{SVC_SECRET}}", scopes = ["mcp:tools"] }}
"#,
        protected.resource
    ));
    let out = HostCommand::new("call")
        .arg(client.arg())
        .args(["add", r#"{"a": 40, "b": 2}"#])
        .env("SVC_SECRET", "svc-secret")
        .run()
        .await;
    out.assert_success();
    assert!(out.stdout.contains("42"), "{}", out.stdout);
    let log = protected.server.stderr.text();
    assert!(!log.contains("svc-secret"));
}

#[tokio::test]
async fn host_auth_login_with_pkce_then_calls_the_protected_server() {
    let issuer = AuthorizationServer::start().await;
    let protected = Protected::start(&issuer.issuer).await;
    let cache = tempfile::tempdir().unwrap();
    let client = ManifestFile::new(&format!(
        "[mcp_servers.protected]\nurl = \"{}\"\nauth = {{ client_id = \"app\" }}\n",
        protected.resource
    ));
    let mut login = tokio::process::Command::from(toolhost_tests::cli::host_command());
    login
        .args(["auth", "login", "protected", "-m", client.arg()])
        .env("TOOLHOST_CACHE", cache.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut login = login.spawn().unwrap();
    let mut stderr = BufReader::new(login.stderr.take().unwrap()).lines();
    let url = loop {
        let line = stderr
            .next_line()
            .await
            .unwrap()
            .expect("host auth login shows the URL");
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    issuer.approve(&url, "alice").await;
    let status = login.wait().await.unwrap();
    let mut rest = String::new();
    while let Ok(Some(line)) = stderr.next_line().await {
        rest.push_str(&line);
        rest.push('\n');
    }
    assert!(status.success(), "{rest}");
    assert!(rest.contains("logged in to `protected`"), "{rest}");

    let out = HostCommand::new("call")
        .arg(client.arg())
        .args(["add", r#"{"a": 40, "b": 2}"#])
        .env("TOOLHOST_CACHE", cache.path())
        .run()
        .await;
    out.assert_success();
    assert!(out.stdout.contains("42"), "{}", out.stdout);
}

#[tokio::test]
async fn the_python_sdk_registers_logs_in_with_pkce_and_calls() {
    let peers = toolhost_tests::peers::peers();
    let issuer = AuthorizationServer::start().await;
    let protected = Protected::start(&issuer.issuer).await;
    let script = toolhost_tests::repo_root().join("tests/mcp-peers/oauth_client.py");
    let out = tokio::process::Command::new(peers.python())
        .arg(&script)
        .arg(&protected.resource)
        .args(["--call", "add", "--args", r#"{"a": 2, "b": 40}"#])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let answer: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], r#"{"result":42.0}"#,
        "{answer}"
    );
    assert!(
        answer["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "add"),
        "{answer}"
    );
}

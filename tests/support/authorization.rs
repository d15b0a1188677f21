//! A real OAuth authorization server for the resource-server tests: `oidc-provider` (npm,
//! OpenID Certified), started by `tests/mcp-peers/authorization_server.mjs` on a free port of
//! 127.0.0.1 (installed by `scripts/setup-mcp-peers.sh`); and access tokens from it.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `oidc-provider`; stopped when dropped.
pub struct AuthorizationServer {
    _child: Child,
    _dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT`.
    pub issuer: String,
    http: reqwest::Client,
}

impl AuthorizationServer {
    /// Starts it (Node 20 is enough), and returns once it listens.
    pub async fn start() -> Self {
        let modules = crate::peers::peers_dir().join("node_modules");
        assert!(
            modules.join("oidc-provider").exists(),
            "this test needs oidc-provider, and {} is missing: run scripts/setup-mcp-peers.sh \
             (`just test` does)",
            modules.join("oidc-provider").display()
        );
        // ES modules resolve packages from the script's directory: put it beside them.
        let dir = tempfile::tempdir().expect("a temporary directory");
        let script = dir.path().join("authorization_server.mjs");
        let source = crate::repo_root().join("tests/mcp-peers/authorization_server.mjs");
        std::fs::copy(&source, &script).expect("the script is copied");
        std::os::unix::fs::symlink(&modules, dir.path().join("node_modules"))
            .expect("node_modules is linked");
        let mut child = Command::new("node")
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts oidc-provider");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("oidc-provider says where it listens")
            .expect("its stdout can be read")
            .expect("a line");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let started: Value = serde_json::from_str(&line).expect("a JSON line");
        Self {
            _child: child,
            _dir: dir,
            issuer: started["issuer"].as_str().expect("the issuer").to_owned(),
            http: crate::http_client().no_proxy().build().expect("a client"),
        }
    }

    /// An access token for `resource` from the client credentials grant of `client` (its
    /// secret is `svc-secret`), granting `scope`.
    pub async fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let answer = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(client, Some("svc-secret"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ])
            .send()
            .await
            .expect("the token endpoint answers");
        let status = answer.status();
        let body: Value =
            serde_json::from_str(&answer.text().await.expect("an answer")).expect("a JSON answer");
        assert!(status.is_success(), "no token: {status} {body}");
        body["access_token"].as_str().expect("a token").to_owned()
    }

    /// Revokes `token` (RFC 7009), as its client `client`.
    pub async fn revoke(&self, client: &str, token: &str) {
        let answer = self
            .http
            .post(format!("{}/token/revocation", self.issuer))
            .basic_auth(client, Some("svc-secret"))
            .form(&[("token", token)])
            .send()
            .await
            .expect("the revocation endpoint answers");
        assert!(answer.status().is_success(), "{}", answer.status());
    }

    /// A new signing key takes over (the old one stays published); returns its key id.
    pub async fn rotate(&self) -> String {
        let answer = (self
            .http
            .post(format!("{}/rotate", self.issuer))
            .send()
            .await)
            .expect("the rotation answers");
        let answer: Value =
            serde_json::from_str(&answer.text().await.expect("an answer")).expect("JSON");
        answer["kid"].as_str().expect("a kid").to_owned()
    }
}

impl AuthorizationServer {
    /// Plays a person in a browser at the authorization URL `url`: logs in as `login` (any
    /// password) on the dev login page, consents, and follows the redirects to the client's
    /// redirect URI, which it opens (a client's loopback listener gets the code there).
    pub async fn approve(&self, url: &str, login: &str) {
        let browser = crate::http_client()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client");
        let mut cookies = std::collections::BTreeMap::new();
        let mut next = url.to_owned();
        for _ in 0..20 {
            if !next.starts_with(&self.issuer) {
                // Back at the client's redirect URI.
                let answer = browser
                    .get(&next)
                    .send()
                    .await
                    .expect("the redirect URI answers");
                assert!(answer.status().is_success(), "{}", answer.status());
                return;
            }
            let cookie = (cookies.iter())
                .map(|(name, value)| format!("{name}={value}"))
                .collect::<Vec<_>>()
                .join("; ");
            let page = browser
                .get(&next)
                .header("cookie", &cookie)
                .send()
                .await
                .expect("a page");
            let (status, redirect) = (page.status(), location(&page, &self.issuer));
            keep_cookies(&page, &mut cookies);
            if status.is_redirection() {
                next = redirect.expect("a redirect has a Location");
                continue;
            }
            let text = page.text().await.expect("a page");
            let mut form = vec![("prompt", "consent")];
            if text.contains("name=\"login\"") {
                form = vec![("prompt", "login"), ("login", login), ("password", "x")];
            }
            let cookie = (cookies.iter())
                .map(|(name, value)| format!("{name}={value}"))
                .collect::<Vec<_>>()
                .join("; ");
            let posted = (browser
                .post(&next)
                .header("cookie", &cookie)
                .form(&form)
                .send()
                .await)
                .expect("the form is posted");
            keep_cookies(&posted, &mut cookies);
            next = location(&posted, &self.issuer).expect("the form redirects");
        }
        panic!("the login never reached the redirect URI");
    }
}

/// The absolute URL a response's `Location` names, if any.
fn location(response: &reqwest::Response, issuer: &str) -> Option<String> {
    let location = response.headers().get("location")?.to_str().ok()?;
    Some(if location.starts_with('/') {
        format!("{issuer}{location}")
    } else {
        location.to_owned()
    })
}

/// The cookies `response` sets, kept in `cookies` by name.
fn keep_cookies(
    response: &reqwest::Response,
    cookies: &mut std::collections::BTreeMap<String, String>,
) {
    for set in response.headers().get_all("set-cookie") {
        let Ok(set) = set.to_str() else { continue };
        let pair = set.split(';').next().unwrap_or_default();
        if let Some((name, value)) = pair.split_once('=') {
            cookies.insert(name.trim().to_owned(), value.trim().to_owned());
        }
    }
}

/// The key id in a JWT's header.
pub fn kid(token: &str) -> String {
    use base64::Engine as _;
    let header = token.split('.').next().expect("a header");
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .expect("base64url");
    let header: Value = serde_json::from_slice(&header).expect("JSON");
    header["kid"].as_str().expect("a kid").to_owned()
}

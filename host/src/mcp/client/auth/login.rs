//! A login by the authorization code flow: the authorization URL opened by a [`Browser`],
//! the redirect received on a loopback listener (127.0.0.1, a port of its own, the `state`
//! checked), the code exchanged for tokens that the server's store keeps.

use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, AuthorizationSession, WWWAuthenticateParams,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::browser::Browser;
use super::server::{ServerAuth, manager_for};
use crate::manifest::mcp_auth::ClientIdentity;

/// The largest request head the loopback listener reads from a browser.
const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// Logs in to `server` through `browser`, waiting up to `timeout` for the redirect; on
/// success the tokens are in the server's store and the manager that holds them is
/// returned. `challenge` is the `WWW-Authenticate` of the server's 401 or 403, when there
/// was one; its scopes, those of the manifest and `extra_scopes` are asked for.
pub(crate) async fn authorize(
    server: &ServerAuth,
    challenge: Option<&str>,
    browser: &dyn Browser,
    extra_scopes: &[String],
    timeout: Duration,
) -> anyhow::Result<AuthorizationManager> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on 127.0.0.1 for the login's redirect")?;
    let port = listener.local_addr()?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let manager = manager_for(server, true).await?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .context("discovering its authorization server failed")?;
    let mut manager = manager;
    manager.set_metadata(resolution.metadata);
    let request = request(server, challenge, extra_scopes, &redirect_uri)?;
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, error)| error)
        .context("starting the login failed")?;
    let url = session.get_authorization_url().to_owned();
    let state = url::Url::parse(&url)
        .ok()
        .and_then(|url| {
            url.query_pairs()
                .find(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
        })
        .ok_or_else(|| anyhow!("the authorization URL has no `state`"))?;
    let wait = tokio::time::timeout(timeout, redirect(&listener, &state));
    tokio::pin!(wait);
    let redirected = tokio::select! {
        redirected = &mut wait => redirected,
        opened = browser.open(&url) => match opened {
            Ok(()) => wait.await,
            Err(problem) => bail!("{problem}"),
        },
    };
    let callback = redirected.map_err(|_| {
        anyhow!(
            "no redirect came back within {}; open the URL again (host auth login)",
            humantime::format_duration(timeout)
        )
    })??;
    if let Err(error) = session
        .handle_callback_with_issuer(&callback.code, &state, callback.issuer.as_deref())
        .await
    {
        // rmcp keeps only oauth2's "Request failed" of a token request whose answer never
        // came or was too large to read; say what that means.
        let unread = error.to_string().ends_with("Request failed");
        let error = anyhow::Error::new(error);
        return Err(if unread {
            error.context(
                "the token endpoint's answer could not be read: none came, or it was over 1 MiB",
            )
        } else {
            error
        })
        .context("exchanging the authorization code for tokens failed");
    }
    Ok(session.auth_manager)
}

/// The authorization request for `server`: its client identity and scopes.
fn request(
    server: &ServerAuth,
    challenge: Option<&str>,
    extra_scopes: &[String],
    redirect_uri: &str,
) -> anyhow::Result<AuthorizationRequest> {
    let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("toolhost");
    match &server.entry.client {
        ClientIdentity::Dynamic => {}
        ClientIdentity::MetadataDocument { url } => {
            request = request.with_client_metadata_url(url);
        }
        ClientIdentity::Preregistered {
            client_id,
            client_secret,
        } => {
            request = request.with_preregistered_client(client_id);
            if let Some(secret) = client_secret {
                request = request.with_client_secret(server.secret(secret)?);
            }
        }
        ClientIdentity::ClientCredentials { .. } => {
            bail!("it takes its tokens by client credentials (`auth.grant`): it needs no login")
        }
    }
    let mut scopes = server.entry.scopes.clone();
    if !scopes.is_empty() || !extra_scopes.is_empty() {
        // Scopes named: those of a step-up challenge join them, as the spec asks.
        if let Some(challenge) = challenge
            && let Ok(base) = url::Url::parse(&server.url)
            && let Some(asked) = WWWAuthenticateParams::parse(challenge, &base).scope
        {
            scopes.extend(asked.split_whitespace().map(str::to_owned));
        }
        scopes.extend(extra_scopes.iter().cloned());
        let mut seen = std::collections::HashSet::new();
        scopes.retain(|scope| seen.insert(scope.clone()));
        request = request.with_scopes(scopes);
    }
    Ok(request)
}

/// What came back on the redirect URI.
struct Callback {
    code: String,
    issuer: Option<String>,
}

/// Waits for the browser's request to the redirect URI and answers it. A redirect with
/// another `state` than the login's, or with an `error`, ends the login with an error (and
/// nothing is stored); other paths (a browser's `/favicon.ico`) get a 404.
async fn redirect(listener: &TcpListener, state: &str) -> anyhow::Result<Callback> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let Ok(target) = request_target(&mut stream).await else {
            continue;
        };
        let Ok(url) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
            respond(
                &mut stream,
                400,
                "That is not a redirect toolhost can read.",
            )
            .await;
            continue;
        };
        if url.path() != "/callback" {
            respond(&mut stream, 404, "Not found.").await;
            continue;
        }
        let param = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        if param("state").as_deref() != Some(state) {
            respond(
                &mut stream,
                400,
                "This redirect is not for the login toolhost started; nothing was stored.",
            )
            .await;
            bail!(
                "the redirect's `state` is not the login's: it was not sent for this login \
                 (nothing was stored); run `host auth login` again"
            );
        }
        if let Some(error) = param("error") {
            respond(
                &mut stream,
                400,
                "The authorization server refused the login.",
            )
            .await;
            let description = param("error_description")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            bail!("the authorization server refused the login: {error}{description}");
        }
        let Some(code) = param("code") else {
            respond(&mut stream, 400, "The redirect has no authorization code.").await;
            bail!("the redirect has no authorization code");
        };
        respond(
            &mut stream,
            200,
            "Logged in. You can close this tab and go back to toolhost.",
        )
        .await;
        return Ok(Callback {
            code,
            issuer: param("iss"),
        });
    }
}

/// The target of the request on `stream` (`/callback?code=...`), from its request line.
async fn request_target(stream: &mut TcpStream) -> anyhow::Result<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read =
            tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await??;
        if read == 0 || head.len() + read > MAX_REQUEST_HEAD {
            bail!("not an HTTP request");
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = std::str::from_utf8(line)?.trim_end();
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Ok(target.to_owned()),
        _ => bail!("not a GET"),
    }
}

async fn respond(stream: &mut TcpStream, status: u16, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!("<!doctype html><title>toolhost</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

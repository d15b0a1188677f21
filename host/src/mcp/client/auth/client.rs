//! The HTTP client of a server at a URL, with OAuth: rmcp's `AuthClient` (the stored token on
//! every request, refreshed when it expires), and a new token when the server turns the old
//! one down and one can be had without a person (client credentials, or a test's scripted
//! browser).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::Context;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::auth::{
    AuthClient, AuthorizationManager, ClientCredentialsConfig, OAuthClientConfig,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

use super::browser::Browser;
use super::explained::Untrusted;
use super::login;
use super::server::{ServerAuth, manager_for};
use crate::manifest::mcp_auth::ClientIdentity;

/// How many times in a row a server may turn a fresh token down before its error stands
/// (a server that always asks for more scope must not loop).
const MAX_RENEWALS: u32 = 3;

type HttpError = StreamableHttpError<reqwest::Error>;

/// How a token the server turned down is replaced during a run.
#[derive(Clone)]
enum Renewal {
    /// The client's credentials buy a new one.
    ClientCredentials,
    /// A browser (a test harness's script) logs in again.
    Browser(Arc<dyn Browser>),
}

/// rmcp's authorizing client for one server.
#[derive(Clone)]
pub(crate) struct Authorized {
    inner: AuthClient<reqwest::Client>,
    server: Arc<ServerAuth>,
    renewal: Option<Renewal>,
    /// Renewals since the last request that went through.
    renewals: Arc<AtomicU32>,
    /// Whether the server can send this client a request of its own: set once the session's
    /// standalone stream (the `GET`) is open or refused, or the server opened no session.
    listening: Arc<tokio::sync::watch::Sender<bool>>,
}

/// The client for `server`: with its stored login (metadata discovered again to check the
/// authorization server is the one that issued it), or client credentials exchanged now.
pub(crate) async fn http_client(server: ServerAuth) -> anyhow::Result<Authorized> {
    let http = crate::tls::client_builder()?.build()?;
    let server = Arc::new(server);
    let (manager, renewal) = if server.has_static_authorization() {
        (manager_for(&server, false).await?, None)
    } else if let ClientIdentity::ClientCredentials { .. } = &server.entry.client {
        let manager = client_credentials(&server, None)
            .await
            .context("getting a token with its client credentials failed")?;
        (manager, Some(Renewal::ClientCredentials))
    } else {
        let mut manager = manager_for(&server, true).await?;
        if server.browser.is_none() && server.store.read().map_err(anyhow::Error::msg)?.is_some() {
            manager
                .initialize_from_store()
                .await
                .context("its stored login cannot be used")?;
            if let ClientIdentity::Preregistered {
                client_id,
                client_secret: Some(secret),
            } = &server.entry.client
            {
                // A confidential client refreshes with its secret.
                let config = OAuthClientConfig::new(client_id, "http://127.0.0.1/callback")
                    .with_client_secret(server.secret(secret)?);
                manager.configure_client(config)?;
            }
        }
        (manager, server.browser.clone().map(Renewal::Browser))
    };
    Ok(Authorized {
        inner: AuthClient::new(http, manager),
        server,
        renewal,
        renewals: Arc::new(AtomicU32::new(0)),
        listening: Arc::new(tokio::sync::watch::channel(false).0),
    })
}

/// A manager holding a token bought with `server`'s client credentials (in memory).
async fn client_credentials(
    server: &ServerAuth,
    challenge: Option<&str>,
) -> anyhow::Result<AuthorizationManager> {
    let ClientIdentity::ClientCredentials {
        client_id,
        client_secret,
    } = &server.entry.client
    else {
        anyhow::bail!("`{}` does not use client credentials", server.name);
    };
    let mut manager = manager_for(server, false).await?;
    let resolution = manager.resolve_metadata_from_challenge(challenge).await?;
    manager.set_metadata(resolution.metadata);
    let config = ClientCredentialsConfig::ClientSecret {
        client_id: client_id.clone(),
        client_secret: server.secret(client_secret)?,
        scopes: server.entry.scopes.clone(),
        resource: Some(server.url.clone()),
    };
    manager.validate_client_credentials_metadata(&config)?;
    manager.configure_client_credentials(&config)?;
    manager.exchange_client_credentials(&config).await?;
    Ok(manager)
}

/// The `WWW-Authenticate` challenge `server` answers a request without a token with, if it
/// asks for authorization.
pub(super) async fn challenge(server: &ServerAuth) -> anyhow::Result<Option<String>> {
    let client = crate::tls::client_builder()?
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut request = client
        .post(&server.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(
            serde_json::json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "toolhost", "version": env!("CARGO_PKG_VERSION")}
                }
            })
            .to_string(),
        );
    for (name, value) in &server.headers {
        let value = crate::mcp::client::config::expand_env(value, |n| std::env::var(n).ok())
            .map_err(|problem| anyhow::anyhow!("header `{name}`: {problem}"))?;
        request = request.header(name.as_str(), value);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("{} cannot be reached", server.url))?;
    let status = response.status().as_u16();
    Ok(match status {
        401 | 403 => response
            .headers()
            .get("www-authenticate")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        _ => None,
    })
}

impl Authorized {
    /// Runs `call` with the current token; when the server turns it down (401, or 403 for
    /// more scope) and a new one can be had without a person, gets it and runs `call` again.
    async fn retrying<T, F, Fut>(&self, call: F) -> Result<T, HttpError>
    where
        F: Fn(AuthClient<reqwest::Client>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        loop {
            let result = call(self.inner.clone())
                .await
                .map_err(|e| self.explained(e));
            let (challenge, more_scope) = match &result {
                Ok(_) => {
                    self.renewals.store(0, Ordering::Relaxed);
                    return result;
                }
                Err(error) => match error.auth_challenge() {
                    Some(challenge) => (
                        challenge.to_owned(),
                        matches!(error, StreamableHttpError::InsufficientScope(_)),
                    ),
                    None => return result,
                },
            };
            let Some(renewal) = &self.renewal else {
                return result;
            };
            if self.renewals.fetch_add(1, Ordering::Relaxed) >= MAX_RENEWALS {
                tracing::warn!(
                    server = %self.server.name,
                    "the server turned down {MAX_RENEWALS} new tokens in a row; giving up"
                );
                return result;
            }
            let manager = match renewal {
                Renewal::ClientCredentials => {
                    client_credentials(&self.server, Some(&challenge)).await
                }
                Renewal::Browser(browser) => {
                    // Asked for more scope: the scopes granted so far are asked for again,
                    // beside the new one (SEP-2350).
                    let granted = if more_scope {
                        self.inner
                            .auth_manager
                            .lock()
                            .await
                            .get_current_scopes()
                            .await
                    } else {
                        Vec::new()
                    };
                    login::authorize(
                        &self.server,
                        Some(&challenge),
                        browser.as_ref(),
                        &granted,
                        Duration::from_secs(60),
                    )
                    .await
                }
            };
            match manager {
                Ok(manager) => *self.inner.auth_manager.lock().await = manager,
                Err(error) => {
                    tracing::warn!(server = %self.server.name, "a new token could not be had: {error:#}");
                    return result;
                }
            }
        }
    }
}

impl Authorized {
    /// Told `true` once the server can reach this client with a request that is not about
    /// one of the client's (on 2025-11-25, the session's standalone `GET` stream): a server
    /// that sends one before drops it (the TypeScript SDK does, as the specification lets
    /// it), so a caller waits for this before its first request.
    pub(crate) fn listening(&self) -> tokio::sync::watch::Receiver<bool> {
        self.listening.subscribe()
    }

    /// Marks the server as able to reach the client when `answer`, to `message`, is the
    /// answer to `initialize` that opens no session (no stream will follow).
    fn heard(
        &self,
        message: &ClientJsonRpcMessage,
        answer: &Result<StreamableHttpPostResponse, HttpError>,
    ) {
        let initialize = matches!(
            message,
            JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::InitializeRequest(_))
        );
        let no_session = matches!(
            answer,
            Ok(StreamableHttpPostResponse::Json(_, None)
                | StreamableHttpPostResponse::Sse(_, None))
        );
        if initialize && no_session {
            self.listening.send_replace(true);
        }
    }

    /// `error`, with a refused certificate told as such (see [`Untrusted`]).
    fn explained(&self, error: HttpError) -> HttpError {
        match error {
            StreamableHttpError::Client(source)
                if crate::tls::is_untrusted_certificate(&source) =>
            {
                StreamableHttpError::Io(std::io::Error::other(Untrusted {
                    server: self.server.name.clone(),
                    source,
                }))
            }
            error => error,
        }
    }
}

impl StreamableHttpClient for Authorized {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let answer = self
            .retrying(|client| {
                let (uri, message, session, auth, headers) = (
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                );
                async move {
                    client
                        .post_message(uri, message, session, auth, headers)
                        .await
                }
            })
            .await;
        self.heard(&message, &answer);
        answer
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let answer = self
            .retrying(|client| {
                let (uri, message, session, auth, headers) = (
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                );
                async move {
                    client
                        .post_message_with_max_sse_event_size(
                            uri,
                            message,
                            session,
                            auth,
                            headers,
                            max_sse_event_size,
                        )
                        .await
                }
            })
            .await;
        self.heard(&message, &answer);
        answer
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let answer = self
            .retrying(|client| {
                let (uri, message, session, auth, headers) = (
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth_header.clone(),
                    custom_headers.clone(),
                );
                async move {
                    client
                        .post_message_with_response_limits(
                            uri, message, session, auth, headers, limits,
                        )
                        .await
                }
            })
            .await;
        self.heard(&message, &answer);
        answer
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>, HttpError> {
        let standalone = last_event_id.is_none();
        let stream = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        // Open (the server keeps it) or refused (405: it will send nothing of its own).
        if standalone {
            self.listening.send_replace(true);
        }
        stream
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>, HttpError> {
        let standalone = last_event_id.is_none();
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        if standalone {
            self.listening.send_replace(true);
        }
        stream
    }
}

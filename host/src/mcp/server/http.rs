//! MCP over Streamable HTTP: rmcp's service at `/mcp`, behind toolhost's own front:
//! `GET /health`, a bearer token, a body limit, JSON-RPC errors for bodies that are not
//! JSON, cancel-on-disconnect for session-mode calls, and a graceful shutdown.

use std::convert::Infallible;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use anyhow::bail;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body::Body;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::McpServer;
use super::disconnect::WatchedBody;

/// How the HTTP server runs.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `Host` header values accepted besides the loopback ones (`localhost`, `127.0.0.1`,
    /// `::1`) and the bound address: `example.com` (any port) or `example.com:8080`. Any other
    /// `Host` is refused with 403, against DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// `Origin` header values accepted besides the loopback ones (`http://localhost:*`, ...):
    /// `https://app.example.com:443`, `http://example.com:*`. A request with another `Origin`
    /// is refused with 403; one without an `Origin` (not from a browser) passes.
    pub allowed_origins: Vec<String>,
    /// The bearer token every request to `/mcp` must carry (`Authorization: Bearer ...`);
    /// required to listen on an address other than loopback.
    pub token: Option<String>,
    /// Serve without sessions: every POST stands alone, there is no standalone SSE stream.
    pub stateless: bool,
    /// The largest request body, in bytes (larger ones get 413).
    pub max_body: usize,
    /// How long a shutdown waits for calls in flight before cancelling them.
    pub shutdown_grace: Duration,
}

impl Default for HttpOptions {
    /// Loopback hosts and origins only, no token, sessions, 4 MiB bodies, 10 s of grace.
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            token: None,
            stateless: false,
            max_body: 4 << 20,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

pub(super) type ResponseBody = BoxBody<Bytes, Infallible>;

/// rmcp's Streamable HTTP service, with sessions or without.
#[derive(Clone)]
pub(super) enum Mcp {
    Sessions(StreamableHttpService<McpServer, LocalSessionManager>),
    Stateless(StreamableHttpService<McpServer, NeverSessionManager>),
}

impl Mcp {
    pub(super) async fn handle<B>(&self, request: Request<B>) -> Response<ResponseBody>
    where
        B: Body + Send + 'static,
        B::Error: Display,
    {
        match self {
            Self::Sessions(service) => service.handle(request).await,
            Self::Stateless(service) => service.handle(request).await,
        }
    }
}

/// Serves `server` over Streamable HTTP at `/mcp` on `listener` (and `GET /health`), until
/// `shutdown` completes. Then it stops accepting connections, lets the calls in flight run up
/// to [`HttpOptions::shutdown_grace`], cancels the rest and closes every stream.
///
/// Refuses to listen on an address other than loopback without a token.
pub async fn serve_http(
    server: McpServer,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() && options.token.is_none() {
        bail!(
            "{local} is reachable from other machines: serving it needs a bearer token (put one \
             in an environment variable and name it with --token-env), or listen on 127.0.0.1"
        );
    }
    let mut allowed_hosts: Vec<String> = LOOPBACK_HOSTS.map(String::from).to_vec();
    if !local.ip().is_unspecified() {
        allowed_hosts.push(local.ip().to_string());
    }
    allowed_hosts.extend(options.allowed_hosts.iter().cloned());
    let origins = LOOPBACK_ORIGINS
        .iter()
        .map(|origin| (*origin).to_owned())
        .chain(options.allowed_origins.iter().cloned());
    // Cancelled only after the calls in flight had their grace: it ends every session and
    // stream at once, and cancels what still runs.
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(options.max_body)
        .with_legacy_session_mode(!options.stateless)
        .with_cancellation_token(stop.clone());
    let factory = {
        let server = server.clone();
        move || Ok(server.session())
    };
    let mcp = if options.stateless {
        Mcp::Stateless(StreamableHttpService::new(
            factory,
            Arc::new(NeverSessionManager::default()),
            config,
        ))
    } else {
        Mcp::Sessions(StreamableHttpService::new(
            factory,
            Arc::new(LocalSessionManager::default()),
            config,
        ))
    };
    let router = Arc::new(Router {
        mcp,
        server: server.clone(),
        token: options.token.clone(),
        max_body: options.max_body,
        cancel_on_disconnect: !options.stateless,
        answers: TaskTracker::new(),
    });

    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, router.clone(), closing.clone()));
                }
                Err(error) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::warn!("cannot accept a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    tracing::info!("stopped accepting connections");
    let deadline = Instant::now() + options.shutdown_grace;
    if server.drain(options.shutdown_grace).await {
        // The calls are over; their answers may still be on their way out.
        router.answers.close();
        let _ =
            tokio::time::timeout_at(deadline + Duration::from_secs(1), router.answers.wait()).await;
    } else {
        tracing::warn!(
            "calls still running after {:?} are cancelled",
            options.shutdown_grace
        );
    }
    stop.cancel();
    closing.cancel();
    connections.close();
    if tokio::time::timeout(Duration::from_secs(2), connections.wait())
        .await
        .is_err()
    {
        tracing::debug!("some connections did not close in time");
    }
    Ok(())
}

/// One connection, until it closes, or until the server closes.
async fn connection(stream: TcpStream, router: Arc<Router>, closing: CancellationToken) {
    // An answer goes out in pieces (headers, then SSE events): without this, Nagle's
    // algorithm holds the last piece until the client's delayed ACK, 40 ms later.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {error}");
    }
    let service = hyper::service::service_fn(move |request| {
        let router = router.clone();
        async move { Ok::<_, Infallible>(router.route(request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = closing.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        tracing::debug!("connection ended: {error}");
    }
}

struct Router {
    mcp: Mcp,
    server: McpServer,
    token: Option<String>,
    max_body: usize,
    cancel_on_disconnect: bool,
    /// The answers to JSON-RPC requests being sent, for a shutdown to wait for.
    answers: TaskTracker,
}

impl Router {
    async fn route(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        match request.uri().path() {
            "/mcp" => {}
            "/health" => return self.health(request.method()),
            _ => {
                return text(
                    StatusCode::NOT_FOUND,
                    "not found: the MCP endpoint is /mcp (and GET /health)",
                );
            }
        }
        if let Some(token) = &self.token
            && !authorized(request.headers(), token)
        {
            let mut response = text(
                StatusCode::UNAUTHORIZED,
                "unauthorized: send the server's token as `Authorization: Bearer <token>`",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        if request.method() != Method::POST {
            return self.mcp.handle(request).await;
        }
        let (parts, body) = request.into_parts();
        let bytes = match Limited::new(body, self.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<LengthLimitError>() => {
                let mut response = jsonrpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    -32600,
                    format!("the request body is larger than {} bytes", self.max_body),
                );
                // The rest of the body is not read, so this connection cannot carry another
                // request: say so, or a client may send its next one into the closing socket.
                response
                    .headers_mut()
                    .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
                return response;
            }
            Err(error) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the request body: {error}"),
                );
            }
        };
        let message: Value = match serde_json::from_slice(&bytes) {
            Ok(message) => message,
            Err(error) => {
                return jsonrpc_error(
                    StatusCode::BAD_REQUEST,
                    -32700,
                    format!("Parse error: {error}"),
                );
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let request_id = message.get("id").filter(|_| method.is_some()).cloned();
        if request_id.is_some() && self.server.is_draining() {
            return jsonrpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32603,
                "the server is shutting down and takes no new requests".to_owned(),
            );
        }
        let guard = (self.cancel_on_disconnect
            && method == Some("tools/call")
            && parts.headers.contains_key("mcp-session-id"))
        .then(|| parts.headers.clone());
        let sending = request_id.as_ref().map(|_| self.answers.token());
        let response = self
            .mcp
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await;
        let Some(sending) = sending else {
            return response;
        };
        let (parts, body) = response.into_parts();
        let mut body = WatchedBody::new(body, sending);
        if let (Some(headers), Some(id)) = (guard, request_id)
            && parts.status == StatusCode::OK
        {
            body = body.cancel_on_drop(self.mcp.clone(), id, headers);
        }
        Response::from_parts(parts, body.boxed())
    }

    /// `GET /health`: 200 with the number of tools while serving, 503 while shutting down.
    fn health(&self, method: &Method) -> Response<ResponseBody> {
        if method != Method::GET && method != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "use GET /health");
        }
        let (status, body) = if self.server.is_draining() {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "status": "shutting_down" }),
            )
        } else {
            (
                StatusCode::OK,
                json!({ "status": "ok", "tools": self.server.tool_count() }),
            )
        };
        json_response(status, &body)
    }
}

/// Whether the request carries `Authorization: Bearer <token>`. The comparison takes the
/// same time wherever the first difference is.
fn authorized(headers: &http::HeaderMap, token: &str) -> bool {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some((scheme, given)) = value.split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return false;
    }
    let (given, token) = (given.trim().as_bytes(), token.as_bytes());
    given.len() == token.len()
        && given
            .iter()
            .zip(token)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

fn text(status: StatusCode, body: &str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON-RPC error answer to a request whose id cannot be known.
fn jsonrpc_error(status: StatusCode, code: i32, message: String) -> Response<ResponseBody> {
    json_response(
        status,
        &json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_authorized() {
        let with = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                header::AUTHORIZATION,
                http::HeaderValue::from_str(value).expect("a valid header"),
            );
            headers
        };
        assert!(authorized(&with("Bearer s3cret"), "s3cret"));
        assert!(authorized(&with("bearer s3cret"), "s3cret"));
        assert!(!authorized(&with("Bearer s3cre"), "s3cret"));
        assert!(!authorized(&with("Bearer s3cretx"), "s3cret"));
        assert!(!authorized(&with("Basic s3cret"), "s3cret"));
        assert!(!authorized(&http::HeaderMap::new(), "s3cret"));
    }
}

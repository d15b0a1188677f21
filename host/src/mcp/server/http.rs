//! MCP over Streamable HTTP: rmcp's service at `/mcp`, behind toolhost's own front:
//! `GET /health`, a bearer token or OAuth access tokens ([`auth`](super::auth)), a body limit, JSON-RPC errors for bodies that are not
//! JSON-RPC, cancel-on-disconnect for session-mode calls, and a graceful shutdown. Everything
//! a peer can make the server hold is bounded ([`HttpServerOptions`]): connections, the time to send
//! headers and body, the body's size, sessions and their idle time.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::McpServer;
use super::auth::ResourceServer;
use super::options::HttpServerOptions;
use super::router::Router;
use super::service::Mcp;

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Serves `server` over Streamable HTTP at `/mcp` on `listener` (and `GET /health`), until
/// `shutdown` completes. Then it stops accepting connections, lets the calls in flight run up
/// to [`HttpServerOptions::shutdown_grace`], cancels the rest and closes every stream.
///
/// Refuses to listen on an address other than loopback without a token.
pub async fn serve_http(
    server: McpServer,
    listener: TcpListener,
    options: HttpServerOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let local = listener.local_addr()?;
    if options.token.is_some() && options.auth.is_some() {
        bail!(
            "both a static bearer token (--token-env) and an authorization server ([mcp.auth] \
             or --auth-issuer) are given: use one (the static token is for a single user)"
        );
    }
    if !local.ip().is_loopback() && options.token.is_none() && options.auth.is_none() {
        bail!(
            "{local} is reachable from other machines: serving it needs a bearer token (put one \
             in an environment variable and name it with --token-env) or an authorization \
             server ([mcp.auth]), or listen on 127.0.0.1"
        );
    }
    let resource_server = options.auth.clone().map(ResourceServer::new).transpose()?;
    // Cancelled only after the calls in flight had their grace: it ends every session and
    // stream at once, and cancels what still runs.
    let stop = CancellationToken::new();
    let mcp = mcp_service(&server, local, &options, stop.clone());
    let router =
        Arc::new(Router::new(mcp, server.clone(), &options).with_resource_server(resource_server));
    let closing = CancellationToken::new();
    let connections = accept(listener, &router, &options, &closing, shutdown).await;
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

/// rmcp's service for `server`, listening at `local`: the hosts and origins it accepts, the
/// body limit, sessions or not; `stop` ends every session and stream.
pub(super) fn mcp_service(
    server: &McpServer,
    local: SocketAddr,
    options: &HttpServerOptions,
    stop: CancellationToken,
) -> Mcp {
    let mut allowed_hosts: Vec<String> = LOOPBACK_HOSTS.map(String::from).to_vec();
    if !local.ip().is_unspecified() {
        allowed_hosts.push(local.ip().to_string());
    }
    allowed_hosts.extend(options.allowed_hosts.iter().cloned());
    let origins = LOOPBACK_ORIGINS
        .iter()
        .map(|origin| (*origin).to_owned())
        .chain(options.allowed_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(options.max_body)
        .with_legacy_session_mode(!options.stateless)
        .with_cancellation_token(stop);
    let factory = {
        let server = server.clone();
        move || Ok(server.session())
    };
    if options.stateless {
        Mcp::Stateless(StreamableHttpService::new(
            factory,
            Arc::new(NeverSessionManager::default()),
            config,
        ))
    } else {
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(options.session_idle_timeout);
        let sessions = Arc::new(sessions);
        Mcp::Sessions(
            StreamableHttpService::new(factory, sessions.clone(), config),
            sessions,
        )
    }
}

/// Accepts connections on `listener` and serves each with `router` until `shutdown`
/// completes; returns the connections still open, which close when `closing` is cancelled.
/// Past [`HttpServerOptions::max_connections`], a connection is only told the server is busy (or
/// answered `/health`); past [`BUSY_CONNECTIONS`] more, it is closed at once.
async fn accept(
    listener: TcpListener,
    router: &Arc<Router>,
    options: &HttpServerOptions,
    closing: &CancellationToken,
    shutdown: impl Future<Output = ()>,
) -> TaskTracker {
    let connections = TaskTracker::new();
    let served = Arc::new(Semaphore::new(options.max_connections));
    let refused = Arc::new(Semaphore::new(BUSY_CONNECTIONS));
    let timeout = options.read_timeout;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if let Ok(permit) = served.clone().try_acquire_owned() {
                        let connection =
                            connection(stream, router.clone(), timeout, closing.clone(), permit);
                        connections.spawn(connection);
                    } else if let Ok(permit) = refused.clone().try_acquire_owned() {
                        connections.spawn(busy(stream, router.clone(), timeout, permit));
                    } else {
                        tracing::debug!("too many connections: one closed unanswered");
                    }
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
    connections
}

/// One connection, until it closes, or until the server closes; it holds `_permit`.
async fn connection(
    stream: TcpStream,
    router: Arc<Router>,
    read_timeout: Duration,
    closing: CancellationToken,
    _permit: OwnedSemaphorePermit,
) {
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
        .header_read_timeout(read_timeout)
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

/// A connection past the cap: one request, answered 503 (but `/health` as usual), then
/// closed.
async fn busy(
    stream: TcpStream,
    router: Arc<Router>,
    read_timeout: Duration,
    _permit: OwnedSemaphorePermit,
) {
    let service = hyper::service::service_fn(move |request| {
        let router = router.clone();
        async move { Ok::<_, Infallible>(router.busy(&request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(read_timeout.min(BUSY_READ_TIMEOUT))
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    if let Err(error) = connection.await {
        tracing::debug!("connection past the cap ended: {error}");
    }
}

/// How many connections past the cap are answered (503, or `/health`) at once: few, so that
/// the cap and these stay well under the common limit of 1,024 open files.
const BUSY_CONNECTIONS: usize = 64;

/// How long a connection past the cap may take to send its headers.
const BUSY_READ_TIMEOUT: Duration = Duration::from_secs(2);

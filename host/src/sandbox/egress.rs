//! Network egress: outgoing HTTP through `wasi:http` and raw sockets, only to granted hosts;
//! an HTTP request to a granted name goes only to an address [`resolve`] checked.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http_body_util::BodyExt;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

use super::grants::HostPattern;
use super::resolve::{self, Refusal};
use crate::telemetry::context;

/// A capability a call tried to use and was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    /// What it tried, such as `HTTP access to example.com:443`.
    pub(crate) what: String,
    /// The grant that would allow it, such as `grants.http = ["example.com"]` (manifest) or
    /// `--allow-http example.com` (`host call`).
    pub(crate) grant: String,
}

/// The capabilities a call tried to use and was refused, in the order it tried them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Denials(Arc<Mutex<Vec<Denial>>>);

impl Denials {
    pub(crate) fn record(&self, what: String, grant: String) {
        tracing::debug!(denied = %what, "capability denied");
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Denial { what, grant });
    }

    /// The first refusal, if there was one.
    pub(crate) fn first(&self) -> Option<Denial> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first()
            .cloned()
    }
}

/// The manifest key and the command-line flag of the HTTP grant, and of the socket grant.
const HTTP_GRANT: (&str, &str) = ("http", "allow-http");
const SOCKET_GRANT: (&str, &str) = ("sockets", "socket");

/// How to grant `host:port` (just `host` when `port` is the scheme's default) in a manifest
/// (`grants.KIND`) and on the command line (`--FLAG`).
fn grant_hint(
    (kind, flag): (&str, &str),
    host: &str,
    port: u16,
    default_port: Option<u16>,
) -> String {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let pattern = match default_port {
        Some(default) if default == port => host,
        _ => format!("{host}:{port}"),
    };
    format!("grants.{kind} = [\"{pattern}\"] in the manifest, or --{flag} {pattern}")
}

/// The `wasi:http` hooks of one call: requests go out only to the granted hosts.
pub(crate) struct HttpEgress {
    allowed: Arc<[HostPattern]>,
    denials: Denials,
}

impl HttpEgress {
    pub(crate) fn new(allowed: Arc<[HostPattern]>, denials: Denials) -> Self {
        Self { allowed, denials }
    }
}

type ResponseFuture = Box<
    dyn Future<
            Output = wasmtime_wasi_http::Result<(
                http::Response<WasiBody>,
                Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
            )>,
        > + Send,
>;

impl WasiHttpHooks for HttpEgress {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> ResponseFuture {
        let uri = request.uri();
        let Some(host) = uri.host() else {
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestUriInvalid) });
        };
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if !self.allowed.iter().any(|p| p.matches(host, port)) {
            let default_port = if https { 443 } else { 80 };
            self.denials.record(
                format!("HTTP access to {host}:{port}"),
                grant_hint(HTTP_GRANT, host, port, Some(default_port)),
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        let host = host.to_owned();
        // The call's trace context, for a server that traces its own (a tool that sends its
        // own keeps it).
        let headers = request.headers_mut();
        for (key, value) in context::current() {
            if let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(key.as_bytes()),
                http::HeaderValue::from_str(&value),
            ) && !headers.contains_key(&name)
            {
                headers.insert(name, value);
            }
        }
        let allowed = self.allowed.clone();
        let denials = self.denials.clone();
        Box::new(async move {
            let addrs = match resolve::addresses(&allowed, &host, port).await {
                Ok(addrs) => addrs,
                Err(Refusal::Unresolved(name)) => {
                    tracing::debug!(%name, "the granted host has no address");
                    return Err(wasmtime_wasi_http::Error::DnsError {
                        rcode: Some("address not available".to_owned()),
                        info_code: Some(0),
                    });
                }
                Err(Refusal::Internal(ip, kind)) => {
                    denials.record(
                        format!(
                            "HTTP access to {host}:{port}, which resolves to {ip}, a {kind} \
                             address (a granted name never reaches one)"
                        ),
                        grant_hint(HTTP_GRANT, &ip.to_string(), port, None),
                    );
                    return Err(wasmtime_wasi_http::Error::HttpRequestDenied);
                }
            };
            tracing::debug!(%host, port, ?addrs, "outgoing HTTP request allowed");
            send_to(&addrs, &host, https, request, options).await
        })
    }
}

/// Sends `request` over a connection to the first of `addrs` that answers: addresses that
/// were checked, so that no second name lookup can lead elsewhere. TLS checks the
/// certificate against `host`. (What `wasmtime_wasi_http::default_send_request` does, but
/// for the address it is given.)
async fn send_to(
    addrs: &[SocketAddr],
    host: &str,
    https: bool,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)> {
    use wasmtime_wasi_http::Error;
    const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
    let connect_timeout = options
        .and_then(|o| o.connect_timeout)
        .unwrap_or(DEFAULT_TIMEOUT);
    let first_byte_timeout = options
        .and_then(|o| o.first_byte_timeout)
        .unwrap_or(DEFAULT_TIMEOUT);
    let io = connect_to(addrs, host, https, connect_timeout).await?;
    let (mut sender, connection) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;
    // The request carries the scheme and authority, which go on the wire only to a proxy.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str)
        .to_owned();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    // The connection is driven on its own task while the response is awaited and read.
    let (done, finished) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _ = done.send(connection.await);
    });
    let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
        .await
        .map_err(|_| Error::ConnectionReadTimeout)??;
    let io = async move {
        match finished.await {
            Ok(Err(error)) if error.is_timeout() => Err(Error::HttpResponseTimeout),
            Ok(Err(error)) => Err(Error::from(error)),
            Ok(Ok(())) | Err(_) => Ok(()),
        }
    };
    Ok((
        response.map(|body| body.map_err(Error::from).boxed_unsync()),
        Box::new(io),
    ))
}

/// A connection to the first of `addrs` that answers within `timeout`, over TLS (checking the
/// certificate against `host`) when `https`.
async fn connect_to(
    addrs: &[SocketAddr],
    host: &str,
    https: bool,
    timeout: Duration,
) -> wasmtime_wasi_http::Result<Box<dyn Stream>> {
    use wasmtime_wasi_http::Error;
    let connect = async {
        let mut last = Error::ConnectionRefused;
        for addr in addrs {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(stream) => return Ok(stream),
                Err(error) => last = Error::Connect(error),
            }
        }
        Err(last)
    };
    let stream = tokio::time::timeout(timeout, connect)
        .await
        .map_err(|_| Error::ConnectionTimeout)??;
    if !https {
        return Ok(Box::new(stream));
    }
    // The roots are parsed once per process, not at every request.
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        Arc::new(
            rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    });
    let name = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => rustls::pki_types::ServerName::from(ip),
        Err(_) => rustls::pki_types::ServerName::try_from(host.to_owned())?,
    };
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    Ok(Box::new(
        connector.connect(name, stream).await.map_err(Error::Tls)?,
    ))
}

/// A connection's byte stream, plain or TLS.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// The check wasmtime-wasi runs before every socket bind, connect or send: connections only
/// to granted `host:port`s (names resolved when checked), binds only to an ephemeral port on
/// the wildcard address (what connecting needs), never listening or accepting.
pub(crate) fn socket_check(
    allowed: Arc<[HostPattern]>,
    denials: Denials,
) -> impl Fn(SocketAddr, SocketAddrUse) -> Pin<Box<dyn Future<Output = bool> + Send + Sync>>
+ Send
+ Sync
+ 'static {
    move |addr, use_| {
        let allowed = allowed.clone();
        let denials = denials.clone();
        Box::pin(async move {
            let permitted = match use_ {
                SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => {
                    addr.ip().is_unspecified() && addr.port() == 0
                }
                SocketAddrUse::TcpConnect | SocketAddrUse::UdpSend | SocketAddrUse::UdpReceive => {
                    connect_allowed(&allowed, addr).await
                }
                _ => false,
            };
            if !permitted {
                let grant = match use_ {
                    SocketAddrUse::TcpConnect
                    | SocketAddrUse::UdpSend
                    | SocketAddrUse::UdpReceive => {
                        grant_hint(SOCKET_GRANT, &addr.ip().to_string(), addr.port(), None)
                    }
                    _ => "nothing: tools may not listen for connections".to_owned(),
                };
                denials.record(format!("socket {use_:?} to {addr}"), grant);
            }
            permitted
        })
    }
}

async fn connect_allowed(allowed: &[HostPattern], addr: SocketAddr) -> bool {
    for pattern in allowed {
        if pattern.port().is_some_and(|port| port != addr.port()) || pattern.is_wildcard() {
            continue;
        }
        if pattern.matches(&addr.ip().to_string(), addr.port()) {
            return true;
        }
        // A granted name: allowed when it resolves to this address.
        if let Ok(resolved) = tokio::net::lookup_host((pattern.host(), addr.port())).await
            && resolved.into_iter().any(|r| r.ip() == addr.ip())
        {
            return true;
        }
    }
    false
}

//! The HTTP front of `/mcp`: the routes, the bearer token, the limits on bodies (size and
//! time) and sessions (how many), JSON-RPC errors for bodies that are not JSON-RPC, and the
//! answers watched on their way out.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::McpServer;
use super::auth::{Challenge, ResourceServer};
use super::disconnect::WatchedBody;
use super::fair::{Admitted, FairShare};
use super::identity;
use super::jsonrpc::{self, Refused};
use super::metered;
use super::options::HttpServerOptions;
use super::owners::SessionOwners;
use super::service::{Mcp, ResponseBody};
use crate::caller::Caller;
use crate::telemetry::MetricsPage;
use crate::telemetry::metrics::metrics;

mod figures;

pub(super) struct Router {
    mcp: Mcp,
    server: McpServer,
    token: Option<String>,
    /// The access tokens accepted, when the server is a resource server (`[mcp.auth]`).
    resource_server: Option<ResourceServer>,
    max_body: usize,
    read_timeout: Duration,
    max_connections: usize,
    max_sessions: usize,
    /// Held while a session is made, so that no two pass the cap together.
    initializing: tokio::sync::Mutex<()>,
    cancel_on_disconnect: bool,
    /// The answers to JSON-RPC requests being sent, for a shutdown to wait for.
    pub(super) answers: TaskTracker,
    /// Who opened each session.
    owners: SessionOwners,
    /// Each caller's fair share, once the host (whose manifest sets it) is loaded.
    fair: std::sync::OnceLock<FairShare>,
    /// What `/metrics` answers, if the application installed an exporter.
    metrics: Option<MetricsPage>,
}

impl Router {
    pub(super) fn new(mcp: Mcp, server: McpServer, options: &HttpServerOptions) -> Self {
        Self {
            mcp,
            server,
            token: options.token.clone(),
            resource_server: None,
            max_body: options.max_body,
            read_timeout: options.read_timeout,
            max_connections: options.max_connections,
            max_sessions: options.max_sessions,
            initializing: tokio::sync::Mutex::new(()),
            cancel_on_disconnect: !options.stateless,
            answers: TaskTracker::new(),
            owners: SessionOwners::default(),
            fair: std::sync::OnceLock::new(),
            metrics: options.metrics.clone(),
        }
    }

    /// This router, taking the access tokens `resource_server` accepts.
    pub(super) fn with_resource_server(mut self, resource_server: Option<ResourceServer>) -> Self {
        self.resource_server = resource_server;
        self
    }

    pub(super) async fn route(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        match request.uri().path() {
            "/mcp" => {}
            "/health" => return self.health(&request).await,
            "/metrics" => return self.metrics(request).await,
            "/status" => return self.status(request).await,
            path if (self.resource_server.as_ref()).is_some_and(|rs| rs.is_metadata_path(path)) => {
                return self.resource_metadata(&request).await;
            }
            _ => {
                return text(
                    StatusCode::NOT_FOUND,
                    "not found: the MCP endpoint is /mcp (and GET /health, GET /metrics, GET /status)",
                );
            }
        }
        let request = match self.authenticate(request).await {
            Ok(request) => request,
            Err(response) => return response,
        };
        if let Some(declared) = declared_length(request.headers())
            && declared > self.max_body as u64
        {
            return self.too_large();
        }
        // Another caller's session is, for this one, no session.
        if self
            .owners
            .refuses(request.headers(), &caller_key(&request))
        {
            return text(StatusCode::NOT_FOUND, "not found: there is no such session");
        }
        if request.method() == Method::DELETE
            && self.mcp.refuses(request.headers()).await.is_none()
            && self.mcp.knows_session(request.headers()).await == Some(false)
        {
            return text(StatusCode::NOT_FOUND, "not found: there is no such session");
        }
        if request.method() != Method::POST {
            return self.mcp.handle(request).await;
        }
        self.post(request).await
    }

    /// `request` with its credentials checked and taken off, and the caller they stand for
    /// attached (an `Arc<Caller>` extension), or the answer to give instead: 401 or 403.
    async fn authenticate<B>(
        &self,
        mut request: Request<B>,
    ) -> Result<Request<B>, Response<ResponseBody>> {
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
            return Err(response);
        }
        if let Some(resource_server) = &self.resource_server {
            let caller = resource_server
                .authenticate(request.headers())
                .await
                .map_err(|challenge| challenged(&challenge))?;
            request.extensions_mut().insert(caller);
        }
        // What the handlers see of the request (rmcp hands them its parts) holds no token.
        request.headers_mut().remove(header::AUTHORIZATION);
        Ok(request)
    }

    /// `GET /.well-known/oauth-protected-resource[/mcp]`: this server's metadata (RFC 9728),
    /// for an allowed `Host` and `Origin` only (as `/mcp`).
    async fn resource_metadata<B>(&self, request: &Request<B>) -> Response<ResponseBody> {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "use GET");
        }
        if let Some(refused) = self.mcp.refuses(request.headers()).await {
            return refused;
        }
        match &self.resource_server {
            Some(resource_server) => json_response(StatusCode::OK, resource_server.document()),
            None => text(StatusCode::NOT_FOUND, "not found"),
        }
    }

    /// The answer on a connection past the cap: `/health` as usual, 503 to anything else.
    pub(super) async fn busy<B>(&self, request: &Request<B>) -> Response<ResponseBody> {
        if request.uri().path() == "/health" {
            return self.health(request).await;
        }
        tracing::warn!(
            "refused a request: {} connections are open, the most served (--max-connections)",
            self.max_connections
        );
        metrics().refused("connections");
        let mut response = jsonrpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &Refused::internal(format!(
                "the server has {} connections open, the most it serves (--max-connections); \
                 try again shortly",
                self.max_connections
            )),
        );
        let headers = response.headers_mut();
        headers.insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
        headers.insert(header::CONNECTION, http::HeaderValue::from_static("close"));
        response
    }

    /// A POST to `/mcp`: its body read whole (up to the limit and the read timeout), checked
    /// as JSON-RPC, then handed to rmcp, and the answer watched on its way out.
    async fn post(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let bytes = match self.read_body(body).await {
            Ok(bytes) => bytes,
            Err(response) => return response,
        };
        let message: Value = match serde_json::from_slice(&bytes) {
            Ok(message) => message,
            Err(error) => {
                return jsonrpc_error(StatusCode::BAD_REQUEST, &Refused::parse_error(&error));
            }
        };
        // The caller's fair share first: a request past it costs a JSON parse, not the rest.
        let method = (message.get("method").and_then(Value::as_str)).map(str::to_owned);
        let method = method.as_deref();
        let request_id = message.get("id").filter(|_| method.is_some()).cloned();
        let admitted = match self.admit(&parts, method, request_id.as_ref()).await {
            Ok(admitted) => admitted,
            Err(refused) => return *refused,
        };
        let (message, bytes) = self.callers_part(&parts, message, bytes);
        let read = match jsonrpc::read(message.clone()) {
            Ok(Some(read)) => read,
            // A notification rmcp cannot read gets no answer, as on stdio.
            Ok(None) => return accepted(),
            Err(refused) => {
                // Invalid params answer a request that was read, as rmcp's errors do; a
                // method the request's revision does not have is 404, as rmcp answers one it
                // does not know.
                let status = if refused.is_invalid_params() {
                    StatusCode::OK
                } else if refused.is_method_not_found() {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::BAD_REQUEST
                };
                return jsonrpc_error(status, &refused);
            }
        };
        let bytes = jsonrpc::as_rmcp_reads(bytes, &read);
        if request_id.is_some() && self.server.is_draining() {
            let refused = Refused::internal(
                "the server is shutting down and takes no new requests".to_owned(),
            );
            return jsonrpc_error(StatusCode::SERVICE_UNAVAILABLE, &refused);
        }
        let started = Instant::now();
        let timed = request_id.is_some();
        let span = timed
            .then(|| metered::span(&message, &parts.headers))
            .flatten();
        let request = Request::from_parts(parts, Full::new(bytes));
        let handled = async {
            if method == Some("initialize") && !request.headers().contains_key("mcp-session-id") {
                self.initialize(request, request_id).await
            } else {
                self.forward(request, method, request_id).await
            }
        };
        let response = match &span {
            Some(span) => handled.instrument(span.clone()).await,
            None => handled.await,
        };
        let response = admitted.hold(response);
        if !timed {
            return response;
        }
        let attributes = metered::attributes(&self.server, &message);
        metered::timed(response, started, attributes, span)
    }

    /// `message` (whose bytes are `bytes`) as its caller may send it: a
    /// `subscriptions/listen` asks only for the resources the caller may read, the others
    /// taken out as those there are not (the acknowledgment leaves out both alike). rmcp asks
    /// the server which subscriptions it accepts without the request's context, hence here.
    fn callers_part(
        &self,
        parts: &http::request::Parts,
        mut message: Value,
        bytes: Bytes,
    ) -> (Value, Bytes) {
        if message.get("method").and_then(Value::as_str) != Some("subscriptions/listen") {
            return (message, bytes);
        }
        let Some(caller) = parts.extensions.get::<std::sync::Arc<Caller>>() else {
            return (message, bytes);
        };
        let requested = message
            .pointer_mut("/params/notifications/resourceSubscriptions")
            .and_then(Value::as_array_mut);
        let Some(uris) = requested else {
            return (message, bytes);
        };
        let before = uris.len();
        uris.retain(|uri| {
            (uri.as_str()).is_none_or(|uri| self.server.may_read_resource(caller, uri))
        });
        if uris.len() == before {
            return (message, bytes);
        }
        let bytes = Bytes::from(message.to_string());
        (message, bytes)
    }

    /// Lets a request through within its caller's fair share (waiting for its caller's turn),
    /// or answers it 429.
    async fn admit(
        &self,
        parts: &http::request::Parts,
        method: Option<&str>,
        id: Option<&Value>,
    ) -> Result<Admitted, Box<Response<ResponseBody>>> {
        let Some(host) = self.server.host() else {
            return Ok(Admitted::free());
        };
        let fair = (self.fair).get_or_init(|| FairShare::new(&host.mcp_config().per_caller));
        let caller = parts.extensions.get::<std::sync::Arc<Caller>>();
        let key = identity::caller_key(caller.map(|caller| &**caller));
        fair.admit(&key, method == Some("tools/call"), id).await
    }

    /// An `initialize` that makes a session, unless there are as many as allowed.
    async fn initialize(
        &self,
        request: Request<Full<Bytes>>,
        id: Option<Value>,
    ) -> Response<ResponseBody> {
        let _one_at_a_time = self.initializing.lock().await;
        let sessions = self.mcp.sessions().await;
        if sessions >= self.max_sessions && self.mcp.refuses(request.headers()).await.is_none() {
            tracing::warn!("refused a session: {sessions} open, the most kept (--max-sessions)");
            metrics().refused("sessions");
            let mut refused = Refused::internal(format!(
                "the server holds {sessions} sessions, the most it keeps (--max-sessions): end \
                 one (DELETE /mcp) or wait until an idle one ends (--session-idle-timeout)"
            ));
            refused.id = id;
            return jsonrpc_error(StatusCode::SERVICE_UNAVAILABLE, &refused);
        }
        let live = self.mcp.session_ids().await;
        self.owners.forget_ended(|session| live.contains(session));
        let caller = caller_key(&request);
        let answer = self.forward(request, Some("initialize"), id).await;
        self.owners.bind(answer.headers(), caller);
        let sessions = self.mcp.sessions().await;
        metrics().sessions.record(sessions as u64, &[]);
        answer
    }

    /// Hands `request` to rmcp, and watches the answer to a request on its way out.
    async fn forward(
        &self,
        request: Request<Full<Bytes>>,
        method: Option<&str>,
        request_id: Option<Value>,
    ) -> Response<ResponseBody> {
        let guard = (self.cancel_on_disconnect
            && method == Some("tools/call")
            && request.headers().contains_key("mcp-session-id"))
        .then(|| request.headers().clone());
        let sending = request_id.as_ref().map(|_| self.answers.token());
        let caller = request
            .extensions()
            .get::<std::sync::Arc<Caller>>()
            .cloned();
        let response = identity::handled_for(caller, self.mcp.handle(request)).await;
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

    /// The whole body, or the answer to give when it cannot be read: too large, or not sent
    /// within the read timeout.
    async fn read_body(&self, body: Incoming) -> Result<Bytes, Response<ResponseBody>> {
        let read = Limited::new(body, self.max_body).collect();
        let Ok(read) = tokio::time::timeout(self.read_timeout, read).await else {
            metrics().refused("read_timeout");
            let mut response = jsonrpc_error(
                StatusCode::REQUEST_TIMEOUT,
                &Refused::invalid_request_text(format!(
                    "the request body did not arrive within {:?} (--read-timeout)",
                    self.read_timeout
                )),
            );
            closes(&mut response);
            return Err(response);
        };
        match read {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(error) if error.is::<LengthLimitError>() => Err(self.too_large()),
            Err(error) => Err(text(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {error}"),
            )),
        }
    }

    /// 413, for a body larger than the limit (declared or read).
    fn too_large(&self) -> Response<ResponseBody> {
        metrics().refused("too_large");
        let mut response = jsonrpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &Refused::invalid_request_text(format!(
                "the request body is larger than {} bytes (--max-request)",
                self.max_body
            )),
        );
        closes(&mut response);
        response
    }

    /// `GET /health`, for an allowed `Host` and `Origin` only (as `/mcp`): 200 with the
    /// number of tools while serving, 503 while loading them or shutting down.
    async fn health<B>(&self, request: &Request<B>) -> Response<ResponseBody> {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "use GET /health");
        }
        if let Some(refused) = self.mcp.refuses(request.headers()).await {
            return refused;
        }
        let (status, body) = if self.server.is_draining() {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "status": "shutting_down" }),
            )
        } else if !self.server.is_loaded() {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "status": "loading" }),
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

/// The key of the verified caller the request is from (see [`identity::caller_key`]).
fn caller_key<B>(request: &Request<B>) -> String {
    let caller = request.extensions().get::<std::sync::Arc<Caller>>();
    identity::caller_key(caller.map(|caller| &**caller))
}

/// The body length `headers` declare, if any.
fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Says the connection closes after `response`: the rest of the body is not read, so it cannot
/// carry another request, and a client could send its next one into the closing socket.
fn closes(response: &mut Response<ResponseBody>) {
    response
        .headers_mut()
        .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
}

/// The answer `challenge` stands for: its status, `WWW-Authenticate` and JSON body.
fn challenged(challenge: &Challenge) -> Response<ResponseBody> {
    let mut response = json_response(challenge.status, &challenge.body());
    if let Some(value) = &challenge.www_authenticate
        && let Ok(value) = http::HeaderValue::from_str(value)
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    if challenge.status == StatusCode::SERVICE_UNAVAILABLE {
        let retry = http::HeaderValue::from_static("5");
        response.headers_mut().insert(header::RETRY_AFTER, retry);
    }
    response
}

/// Whether the request carries `Authorization: Bearer <token>`, compared in constant time
/// (`subtle`): the time taken does not tell where the first difference is.
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
    bool::from(subtle::ConstantTimeEq::ct_eq(given, token))
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

/// 202 with no body: a notification was taken.
fn accepted() -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// A JSON-RPC error answer, with the request's id when it could be read, else `null`.
fn jsonrpc_error(status: StatusCode, refused: &Refused) -> Response<ResponseBody> {
    json_response(status, &refused.message())
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

//! The answer to an MCP request over HTTP, timed (and, for every transport, the attributes and
//! the span of a request): `mcp.server.operation.duration` is recorded
//! when its body has gone out whole or was dropped (a stream of a `tools/call` ends with the
//! call's result, so the time is the call's, not that of the first byte). A request other
//! than `tools/call` (which has a span of its own, `calls.rs`) is a span that ends then too.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::Response;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use opentelemetry::KeyValue;
use serde_json::{Map, Value};

use super::McpServer;
use super::service::ResponseBody;
use crate::telemetry::context;
use crate::telemetry::metrics::{UNKNOWN, key, metrics};

/// The MCP methods a request may name, the values `mcp.method.name` takes (any other is
/// [`UNKNOWN`]).
const METHODS: [&str; 17] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

/// The value `mcp.method.name` takes for `method`: itself when MCP defines it, else
/// [`UNKNOWN`] (a caller cannot make up series).
pub(super) fn method_name(method: Option<&str>) -> &'static str {
    METHODS
        .into_iter()
        .find(|known| Some(*known) == method)
        .unwrap_or(UNKNOWN)
}

/// The attributes of request `message` (its method and, for `tools/call`, the tool when the
/// server has it), for `mcp.server.operation.duration` (over HTTP here; on stdio in
/// `observed.rs` and, for a `tools/call`, `direct.rs`).
pub(super) fn attributes(server: &McpServer, message: &Value) -> Vec<KeyValue> {
    let method = method_name(message.get("method").and_then(Value::as_str));
    let name = message.pointer("/params/name").and_then(Value::as_str);
    attributes_of(server, method, name)
}

/// The attributes of a request of `method` (for `tools/call`, of tool `name`, counted under
/// its name only when the server has it).
pub(super) fn attributes_of(
    server: &McpServer,
    method: &'static str,
    name: Option<&str>,
) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new(key::MCP_METHOD, method)];
    if method == "tools/call" {
        let known = name.filter(|name| {
            server
                .host()
                .is_some_and(|host| host.toolbox().catalog().get(name).is_some())
        });
        let tool = known.map_or_else(|| UNKNOWN.to_owned(), str::to_owned);
        attributes.push(KeyValue::new(key::TOOL, tool));
    }
    attributes
}

/// Records a `tools/call` of `name` served on stdio since `started`, which `failed` or not.
pub(super) fn stdio_call(server: &McpServer, name: &str, failed: bool, started: Instant) {
    let mut attributes = attributes_of(server, "tools/call", Some(name));
    if failed {
        attributes.push(KeyValue::new(key::ERROR_TYPE, "error"));
    }
    let took = started.elapsed().as_secs_f64();
    metrics().mcp_operation.record(took, &attributes);
}

/// The span of request `message` (any but `tools/call`), its parent the trace context the
/// client sent (`_meta`, else `headers`).
pub(super) fn span(message: &Value, headers: &http::HeaderMap) -> Option<tracing::Span> {
    let method = message.get("method").and_then(Value::as_str)?;
    if method == "tools/call" {
        return None;
    }
    let meta = message.pointer("/params/_meta").and_then(Value::as_object);
    let session = headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok());
    let id = message.get("id").map(Value::to_string);
    Some(request_span(
        method_name(Some(method)),
        meta,
        Some(headers),
        id,
        session,
    ))
}

/// The span of a request of `method` with JSON-RPC `id` (in `session`, when there are
/// sessions), its parent the trace context in `meta`, else in `headers`.
pub(super) fn request_span(
    method: &'static str,
    meta: Option<&Map<String, Value>>,
    headers: Option<&http::HeaderMap>,
    id: Option<String>,
    session: Option<&str>,
) -> tracing::Span {
    let parent = context::extract(meta, headers);
    let _parent = parent.attach();
    tracing::info_span!(
        "mcp_request",
        otel.name = method,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = method,
        jsonrpc.request.id = id,
        mcp.session.id = session,
        error.type = tracing::field::Empty,
    )
}

/// `response`, recording its duration from `started` under `attributes` when its body ends,
/// and then ending `span`.
pub(super) fn timed(
    response: Response<ResponseBody>,
    started: Instant,
    mut attributes: Vec<KeyValue>,
    span: Option<tracing::Span>,
) -> Response<ResponseBody> {
    let (parts, inner) = response.into_parts();
    if !parts.status.is_success() {
        let status = parts.status.as_u16().to_string();
        if let Some(span) = &span {
            span.record("error.type", status.as_str());
            span.record("otel.status_code", "ERROR");
        }
        attributes.push(KeyValue::new(key::ERROR_TYPE, status));
    }
    let body = MeteredBody {
        inner,
        started,
        attributes,
        _span: span,
    };
    Response::from_parts(parts, body.boxed())
}

struct MeteredBody {
    inner: ResponseBody,
    started: Instant,
    attributes: Vec<KeyValue>,
    /// Ends when the answer has gone out.
    _span: Option<tracing::Span>,
}

impl Body for MeteredBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for MeteredBody {
    fn drop(&mut self) {
        let took = self.started.elapsed().as_secs_f64();
        metrics().mcp_operation.record(took, &self.attributes);
    }
}

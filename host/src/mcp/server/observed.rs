//! rmcp's service on stdio, watched: every request rmcp hands the server (all but the
//! `tools/call`s that `direct.rs` serves and times itself) is timed in
//! `mcp.server.operation.duration` and, but for a `tools/call` (a span of its own in
//! `calls.rs`), is a span of the MCP conventions whose parent is the trace context in the
//! request's `_meta`, as `metered.rs` makes them over HTTP. rmcp calls a [`Service`] for each
//! request, so a service around [`McpServer`]'s is where each one can be seen, whatever its
//! method.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use opentelemetry::KeyValue;
use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorData, ProtocolVersion, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, Service, ServiceRole};
use tracing::Instrument as _;

use super::McpServer;
use super::metered;
use crate::telemetry::metrics::{key, metrics};

/// [`McpServer`] as rmcp's service on stdio, each request timed and traced.
pub(super) struct Observed(pub(super) McpServer);

impl Service<RoleServer> for Observed {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let method = metered::method_name(Some(request.method()));
        let tool = match &request {
            ClientRequest::CallToolRequest(call) => Some(call.params.name.to_string()),
            _ => None,
        };
        let mut attributes = metered::attributes_of(&self.0, method, tool.as_deref());
        let span = (method != "tools/call").then(|| {
            let id = Some(context.id.to_string());
            metered::request_span(method, Some(&context.meta.0.0), None, id, None)
        });
        let started = Instant::now();
        // Boxed: rmcp's handler future inside this one is too deep a type for the compiler's
        // layout of a whole session's future.
        let handled: Pin<Box<dyn Future<Output = _> + Send + '_>> =
            Box::pin(Service::handle_request(&self.0, request, context));
        let answer = match &span {
            Some(span) => handled.instrument(span.clone()).await,
            None => handled.await,
        };
        if let Err(error) = &answer {
            let code = error.code.0.to_string();
            if let Some(span) = &span {
                span.record("error.type", code.as_str());
                span.record("otel.status_code", "ERROR");
            }
            attributes.push(KeyValue::new(key::ERROR_TYPE, code));
        }
        let took = started.elapsed().as_secs_f64();
        metrics().mcp_operation.record(took, &attributes);
        answer
    }

    async fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Service::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        Service::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::supported_protocol_versions(&self.0)
    }
}

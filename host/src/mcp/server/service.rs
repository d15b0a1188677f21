//! rmcp's Streamable HTTP service, with sessions or without: what the HTTP front hands MCP
//! requests to, and what a dropped answer stream feeds its cancellation into.

use std::convert::Infallible;
use std::fmt::Display;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::Full;
use http_body_util::combinators::BoxBody;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;

use super::McpServer;

pub(super) type ResponseBody = BoxBody<Bytes, Infallible>;

/// rmcp's Streamable HTTP service, with sessions (and their manager) or without.
#[derive(Clone)]
pub(super) enum Mcp {
    Sessions(
        StreamableHttpService<McpServer, LocalSessionManager>,
        Arc<LocalSessionManager>,
    ),
    Stateless(StreamableHttpService<McpServer, NeverSessionManager>),
}

impl Mcp {
    pub(super) async fn handle<B>(&self, request: Request<B>) -> Response<ResponseBody>
    where
        B: Body + Send + 'static,
        B::Error: Display,
    {
        match self {
            Self::Sessions(service, _) => service.handle(request).await,
            Self::Stateless(service) => service.handle(request).await,
        }
    }

    /// rmcp's refusal (403) of a request with these headers, by the `Host` and `Origin`
    /// checks `/mcp` makes, or `None` when they pass. rmcp checks them first, before the
    /// method: asked with a method it serves for nothing (OPTIONS), it answers 403 or 405.
    pub(super) async fn refuses(
        &self,
        headers: &http::HeaderMap,
    ) -> Option<Response<ResponseBody>> {
        let mut probe = Request::new(Full::new(Bytes::new()));
        *probe.method_mut() = http::Method::OPTIONS;
        *probe.uri_mut() = http::Uri::from_static("/mcp");
        *probe.headers_mut() = headers.clone();
        probe.headers_mut().remove(http::header::CONTENT_LENGTH);
        let response = self.handle(probe).await;
        (response.status() == http::StatusCode::FORBIDDEN).then_some(response)
    }

    /// How many sessions there are (none without sessions).
    pub(super) async fn sessions(&self) -> usize {
        match self {
            Self::Sessions(_, manager) => manager.sessions.read().await.len(),
            Self::Stateless(_) => 0,
        }
    }

    /// The ids of the sessions there are (none without sessions).
    pub(super) async fn session_ids(&self) -> std::collections::HashSet<SessionId> {
        match self {
            Self::Sessions(_, manager) => manager.sessions.read().await.keys().cloned().collect(),
            Self::Stateless(_) => Default::default(),
        }
    }

    /// Whether the session named in `headers` is known; `None` without sessions, or when
    /// the headers name none.
    pub(super) async fn knows_session(&self, headers: &http::HeaderMap) -> Option<bool> {
        let Self::Sessions(_, manager) = self else {
            return None;
        };
        let id = headers.get("mcp-session-id")?.to_str().ok()?;
        let id: SessionId = id.to_owned().into();
        Some(manager.sessions.read().await.contains_key(&id))
    }
}

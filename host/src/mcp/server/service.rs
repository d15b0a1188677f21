//! rmcp's Streamable HTTP service, with sessions or without: what the HTTP front hands MCP
//! requests to, and what a dropped answer stream feeds its cancellation into.

use std::convert::Infallible;
use std::fmt::Display;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::combinators::BoxBody;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;

use super::McpServer;

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

//! A Streamable HTTP MCP server: rmcp's transport, with the headers resolved from the
//! environment, the result limit applied to what it reads, and OAuth ([`super::auth`]).

use std::collections::HashMap;

use http::{HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};

use super::auth::client::http_client;
use super::auth::explained::Explained;
use super::auth::server::ServerAuth;
use super::auth::store::default_token_dir;
use super::config::{McpServerConfig, expand_env};

/// The transport to the server `config` names at a URL, sending its headers (values with
/// `${NAME}` taken from the environment) and its OAuth token (the login kept for it, or
/// client credentials), and reading no answer over `max_answer` bytes; and what turns `true`
/// once the server can send the client requests of its own
/// ([`Authorized::listening`](super::auth::client::Authorized::listening)). The error says
/// which header or variable is wrong.
pub(super) async fn transport(
    config: &McpServerConfig,
    max_answer: usize,
) -> Result<
    (
        impl Transport<RoleClient, Error = impl std::error::Error + Send + Sync + 'static + use<>>
        + use<>,
        tokio::sync::watch::Receiver<bool>,
    ),
    String,
> {
    let dir = default_token_dir().unwrap_or_default();
    let server = ServerAuth::new(config, &dir).map_err(|e| format!("{e:#}"))?;
    let (url, headers) = (server.url.clone(), server.headers.clone());
    let mut map = HashMap::new();
    for (name, value) in &headers {
        let value = expand_env(value, |name| std::env::var(name).ok())
            .map_err(|problem| format!("header `{name}`: {problem}"))?;
        let header = HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let mut value = HeaderValue::try_from(value)
            .map_err(|_| format!("header `{name}`: its value is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        map.insert(header, value);
    }

    let client = http_client(server).await.map_err(|e| format!("{e:#}"))?;
    let listening = client.listening();
    let transport_config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(map)
        .max_json_response_size(max_answer)
        .max_sse_event_size(max_answer);
    let transport = Explained {
        inner: StreamableHttpClientTransport::with_client(client, transport_config),
        server: config.name.clone(),
    };
    Ok((transport, listening))
}

//! A Streamable HTTP MCP server: rmcp's transport, with the headers resolved from the
//! environment, the result limit applied to what it reads, and OAuth ([`super::auth`]).

use std::collections::HashMap;
use std::sync::Once;

use http::{HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};

use super::auth::{self, Explained, ServerAuth};
use super::config::{McpServerConfig, expand_env};

/// rmcp's HTTP client (reqwest 0.13, built without a TLS provider of its own) uses the
/// process's default rustls provider, and panics without one: make it ring, which the host's
/// other HTTP client already builds. An application that installed another provider keeps it.
pub(super) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The transport to the server `config` names at a URL, sending its headers (values with
/// `${NAME}` taken from the environment) and its OAuth token (the login kept for it, or
/// client credentials), and reading no answer over `max_answer` bytes. The error says which
/// header or variable is wrong.
pub(super) async fn transport(
    config: &McpServerConfig,
    max_answer: usize,
) -> Result<
    impl Transport<RoleClient, Error = impl std::error::Error + Send + Sync + 'static + use<>> + use<>,
    String,
> {
    install_crypto_provider();
    let dir = auth::default_token_dir().unwrap_or_default();
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
    let client = auth::http_client(server)
        .await
        .map_err(|e| format!("{e:#}"))?;
    let transport_config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(map)
        .max_json_response_size(max_answer)
        .max_sse_event_size(max_answer);
    Ok(Explained {
        inner: StreamableHttpClientTransport::with_client(client, transport_config),
        server: config.name.clone(),
    })
}

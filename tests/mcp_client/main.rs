//! The MCP client: tools taken from MCP servers, next to components in one loop. Real MCP
//! servers from the registries (server-everything over stdio and Streamable HTTP,
//! mcp-server-time over stdio, toolhost's own `host mcp`), a deliberately bad fake server for
//! what a host must survive, the `host` commands with MCP servers in the manifest, and
//! native functions of an embedding application beside them.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod auth;
mod bad;
mod cli;
mod conformance;
mod everything;
mod host_mcp;
mod lifecycle;
mod local;
mod mixed;
mod reconnect;
mod relay;
mod time;
mod tls;

use std::sync::Arc;
use std::time::Duration;

use toolhost::mcp::client::{McpClient, McpServerConfig};
use toolhost::{SourceOptions, Toolbox};
use toolhost_tests::error::chain;
use toolhost_tests::runtime;

/// Generous bounds for waiting on servers (guards against hanging, not measurements).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// `config` with the patient timeouts the tests use unless they test a timeout.
pub fn patient(mut config: McpServerConfig) -> McpServerConfig {
    config.timeout = PATIENCE;
    config.startup_timeout = PATIENCE;
    config
}

/// A toolbox of the MCP servers `configs` (started by the toolbox, as a manifest's are).
pub async fn toolbox(configs: Vec<McpServerConfig>) -> Toolbox {
    match Toolbox::builder(&runtime())
        .mcp_servers(configs)
        .build()
        .await
    {
        Ok(toolbox) => toolbox,
        Err(error) => panic!("{}", chain(&error)),
    }
}

/// A connected server, as a source of its own (for tests that look at the server itself).
pub async fn server(config: McpServerConfig) -> (Arc<McpClient>, Toolbox) {
    let server = Arc::new(
        McpClient::connect(config)
            .await
            .unwrap_or_else(|e| panic!("{}", chain(&e))),
    );
    let toolbox = Toolbox::builder(&runtime())
        .source(server.clone(), SourceOptions::default())
        .build()
        .await
        .unwrap();
    (server, toolbox)
}

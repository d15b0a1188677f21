//! The Model Context Protocol, both ways: toolhost as a client of MCP servers, taking their
//! tools ([`client`], the `mcp-client` feature), and toolhost's tools served to MCP clients
//! ([`server`], the `mcp-server` feature).

#[cfg(feature = "mcp-client")]
pub mod client;
#[cfg(feature = "mcp-server")]
pub mod server;

//! The Model Context Protocol: toolhost's tools served to MCP clients ([`server`]).

pub mod server;

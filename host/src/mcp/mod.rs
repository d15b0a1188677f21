//! The Model Context Protocol: toolhost as a client of MCP servers, taking their tools.

pub mod client;

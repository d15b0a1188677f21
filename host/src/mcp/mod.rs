//! The Model Context Protocol, both ways: toolhost as a client of MCP servers, taking their
//! tools ([`client`]), and toolhost's tools served to MCP clients ([`server`]).

pub mod client;
pub mod server;

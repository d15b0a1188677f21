//! The MCP server, `host mcp`, driven by real clients: raw JSON-RPC over stdio and HTTP
//! (every answer is checked as a client would read it), the official MCP conformance suite,
//! and the Python MCP SDK. The peers come from `scripts/setup-mcp-peers.sh`; a test that
//! needs them and finds them missing fails and says to run it.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod abuse;
mod bounds;
mod callers;
mod cancel;
mod changes;
mod code_mode;
mod http;
mod metrics;
mod oauth;
mod oauth_tokens;
mod peers;
mod relay;
mod served;
mod session;
mod status;
mod stdio;
mod task_store;
mod tasks;
mod traces;

use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::{CALCULATOR, CLOCK, MISBEHAVE};
use toolhost_tests::require_guests;

/// A manifest with the calculator, the clock and the misbehaving tools, annotations for
/// `square_root`, and `tenant` and `count` passed from `_meta`.
pub fn test_manifest() -> ManifestFile {
    require_guests();
    ManifestFile::new(&format!(
        r#"
[components.calculator]
path = {CALCULATOR:?}

[components.clock]
path = {CLOCK:?}

[components.misbehave]
path = {MISBEHAVE:?}
limits = {{ cpu_time = "120s", timeout = "120s" }}

[tools.square_root]
annotations = {{ title = "Root (from the manifest)", destructive = false }}

[mcp]
pass_meta = ["tenant", "count"]
"#
    ))
}

/// The names of the tools in a `tools/list` answer, in order.
pub fn tool_names(answer: &serde_json::Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tools/list answer: {answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The text of the first content block of a `tools/call` answer.
pub fn text(answer: &serde_json::Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
}

/// Whether a `tools/call` answer is an error result.
pub fn is_error(answer: &serde_json::Value) -> bool {
    answer["result"]["isError"] == serde_json::json!(true)
}

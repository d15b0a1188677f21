//! What the client makes of a server's output, reachable from the fuzz targets (`fuzz/`)
//! without a server process. Not part of the API.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{JsonRpcMessage, ServerResult};
use tokio::sync::mpsc;

use super::stdio::{Tail, read_messages};

/// What the client made of a server's output.
#[derive(Debug, Default)]
pub struct Received {
    /// How many messages reached rmcp (answers, notifications, requests, and the error
    /// answers made for lines that were malformed or too long).
    pub messages: usize,
    /// How many `tools/call` results became a tool's output or a tool error.
    pub call_results: usize,
    /// How many tools of `tools/list` results were accepted.
    pub tools: usize,
}

/// Reads `bytes` as a stdio server's stdout, lines over `max_line` bytes included, as the
/// client does; each `tools/call` result goes through what turns it into a tool's output
/// (limited to `max_result` bytes), and each `tools/list` result's tools through what turns
/// them into specs.
pub async fn receive(bytes: &[u8], max_line: usize, max_result: usize) -> Received {
    let (tx, mut rx) = mpsc::channel(16);
    let reading = read_messages(
        "fuzz".to_owned(),
        bytes,
        max_line,
        tx,
        Arc::new(|_| {}),
        Tail::default(),
    );
    let mut received = Received::default();
    let handling = async {
        while let Some(message) = rx.recv().await {
            received.messages += 1;
            let JsonRpcMessage::Response(response) = message else {
                continue;
            };
            match response.result {
                ServerResult::CallToolResult(result) => {
                    let _ = super::result::output("fuzz", result, max_result, Duration::ZERO);
                    received.call_results += 1;
                }
                ServerResult::ListToolsResult(list) => {
                    received.tools += list
                        .tools
                        .iter()
                        .filter(|tool| super::result::spec(tool).is_ok())
                        .count();
                }
                _ => {}
            }
        }
    };
    tokio::join!(reading, handling);
    received
}

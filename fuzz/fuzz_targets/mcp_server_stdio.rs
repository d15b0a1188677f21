//! What an MCP client writes to `host mcp` on stdio: after `initialize`, any lines. Every
//! line the server writes back must be one JSON-RPC message.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use tokio::io::AsyncReadExt as _;
use toolhost::mcp::server::{McpServer, StdioOptions, serve_lines};
use toolhost_fuzz::{block_on, host};

/// The start of every session: what a client sends before anything else.
const START: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
"#;

fuzz_target!(|bytes: &[u8]| {
    let input = Cursor::new([START, bytes].concat());
    let (output, mut answers) = tokio::io::duplex(64 * 1024);
    let options = StdioOptions {
        max_message: 1024,
        ..StdioOptions::default()
    };
    let server = McpServer::new(host());
    let written = block_on(async move {
        // What the server writes is read as it comes. The session ends when the input does;
        // its writer may outlive it (the server gives a client that closed its input a few
        // seconds to read what is owed), so the reading stops when the session has ended
        // and nothing more is ready.
        let written = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = written.clone();
        let mut reading = tokio::spawn(async move {
            let mut chunk = [0u8; 8192];
            while let Ok(read @ 1..) = answers.read(&mut chunk).await {
                sink.lock().unwrap().extend_from_slice(&chunk[..read]);
            }
        });
        let served = serve_lines(server, input, output, options, std::future::pending()).await;
        served.expect("the session ends when the input does");
        let wait = std::time::Duration::from_millis(20);
        if tokio::time::timeout(wait, &mut reading).await.is_err() {
            reading.abort();
        }
        std::mem::take(&mut *written.lock().unwrap())
    });
    for line in written
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
    {
        if let Err(error) = serde_json::from_slice::<serde_json::Value>(line) {
            panic!(
                "the server wrote a line that is not JSON ({error}): {}",
                String::from_utf8_lossy(line)
            );
        }
    }
});

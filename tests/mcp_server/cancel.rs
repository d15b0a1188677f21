//! Cancellation frees the instance: with a pool of one instance slot, a call that runs after
//! a cancelled spinning call can only get one if the spinning one gave it back. In-process
//! (the library's server over a pipe, and over HTTP on 127.0.0.1), so the test can see the
//! server's own count of calls in flight.

use std::future::pending;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolhost::mcp::server::{HttpServerOptions, McpServer, StdioOptions, serve_http, serve_lines};
use toolhost::sandbox::LimitsConfig;
use toolhost::units::HumanDuration;
use toolhost::{ComponentConfig, Host, Runtime, RuntimeConfig};
use toolhost_tests::components::MISBEHAVE;
use toolhost_tests::mcp::{HANG, HttpClient};
use toolhost_tests::{require_guests, target_dir};

/// A server of the misbehaving tools on a runtime with a single instance slot.
async fn one_slot_server() -> McpServer {
    require_guests();
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(target_dir().join("test-compile-cache")),
        max_concurrent_calls: 1,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let minute = Some(HumanDuration(Duration::from_secs(60)));
    let host = Host::builder()
        .runtime(runtime)
        .component(ComponentConfig::new(MISBEHAVE))
        .limits(LimitsConfig {
            cpu_time: minute,
            timeout: minute,
            ..LimitsConfig::default()
        })
        .build()
        .await
        .unwrap();
    McpServer::new(Arc::new(host))
}

/// Waits until the server counts `n` calls in flight; returns how long that took.
async fn until_in_flight(server: &McpServer, n: usize) -> Duration {
    let started = Instant::now();
    tokio::time::timeout(HANG, async {
        while server.calls_in_flight() != n {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the server never had {n} call(s) in flight"));
    started.elapsed()
}

#[tokio::test]
async fn a_cancelled_spin_gives_its_only_slot_to_the_next_call() {
    let server = one_slot_server().await;
    let (client, served) = tokio::io::duplex(1 << 20);
    let (input, output) = tokio::io::split(served);
    tokio::spawn(serve_lines(
        server.clone(),
        input,
        output,
        StdioOptions::default(),
        pending(),
    ));
    let (from_server, mut to_server) = tokio::io::split(client);
    let mut lines = BufReader::new(from_server).lines();
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        to_server.write_all(line.as_bytes()).await.unwrap();
    };
    send(
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "t", "version": "0" } } }),
    )
    .await;
    lines.next_line().await.unwrap().unwrap();
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;

    for round in 1..=3 {
        let spin = round * 10;
        send(
            json!({ "jsonrpc": "2.0", "id": spin, "method": "tools/call",
                     "params": { "name": "spin", "arguments": {} } }),
        )
        .await;
        until_in_flight(&server, 1).await;
        // Let the guest get going, then cancel it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        send(
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": { "requestId": spin } }),
        )
        .await;
        let took = until_in_flight(&server, 0).await;
        eprintln!(
            "round {round}: the spinning call ended {took:?} after the cancellation was sent"
        );

        send(
            json!({ "jsonrpc": "2.0", "id": spin + 1, "method": "tools/call",
                     "params": { "name": "count", "arguments": {} } }),
        )
        .await;
        let line = tokio::time::timeout(HANG, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        // The cancelled call was never answered: this is the next call's answer.
        assert_eq!(answer["id"], spin + 1, "{answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"], r#"{"result":1}"#,
            "{answer}"
        );
    }
}

#[tokio::test]
async fn a_dropped_http_stream_gives_the_only_slot_to_the_next_call() {
    let server = one_slot_server().await;
    for stateless in [false, true] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let options = HttpServerOptions {
            stateless,
            ..HttpServerOptions::default()
        };
        let serving = tokio::spawn(serve_http(server.session(), listener, options, pending()));
        let mut client = HttpClient::new(&url);
        client.initialize().await;
        let (_, spin) = client.message("tools/call", json!({ "name": "spin", "arguments": {} }));
        let response = client.post(&spin).send().await.unwrap();
        until_in_flight(&server, 1).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(response);
        let took = until_in_flight(&server, 0).await;
        eprintln!(
            "stateless={stateless}: the spinning call ended {took:?} after the stream closed"
        );
        let answer = client
            .request("tools/call", json!({ "name": "count", "arguments": {} }))
            .await;
        assert_eq!(
            answer["result"]["content"][0]["text"], r#"{"result":1}"#,
            "{answer}"
        );
        serving.abort();
    }
}

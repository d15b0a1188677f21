//! Tool-list changes of an MCP server the manifest uses reach `host mcp`'s clients: a
//! session's client (revision 2025-11-25, raw JSON-RPC on stdio, and over HTTP) and a
//! `subscriptions/listen` stream (revision 2026-07-28, over HTTP) are told `notifications/tools/list_changed`, then
//! list the new tool and call it; a tool that went is an unknown tool. The upstream server is
//! the Python SDK's (tests/mcp-peers/changing_server.py).

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::mcp::{HANG, HttpServer, StdioServer, messages};

use crate::{text, tool_names};

/// A manifest with the server whose tools change, spoken to at 2026-07-28 (it tells of the
/// changes on the `subscriptions/listen` stream the host's client holds open).
pub(super) fn changing_manifest_entry() -> String {
    let command = toolhost_tests::peers::peers().changing_server();
    format!("[mcp_servers.changing]\ncommand = {command:?}\n")
}

/// Reads the session's messages until `notifications/tools/list_changed` (the notifications
/// already read with an answer count).
async fn told(server: &mut StdioServer) {
    let is_change = |m: &Value| m["method"] == "notifications/tools/list_changed";
    if let Some(at) = server.notifications.iter().position(is_change) {
        server.notifications.remove(at);
        return;
    }
    loop {
        let message = server.next_message().await.expect("the session goes on");
        if is_change(&message) {
            return;
        }
        assert!(
            message.get("id").is_none(),
            "an answer nobody asked for: {message}"
        );
    }
}

/// What a client does when told: lists the tools again, until the list is `wanted` (the
/// first notification may be the one that said the tools were loaded).
async fn listed_when_told(server: &mut StdioServer, wanted: impl Fn(&[String]) -> bool) {
    for _ in 0..2 {
        told(server).await;
        let listed = server.request("tools/list", json!({})).await;
        if wanted(&tool_names(&listed)) {
            return;
        }
    }
    panic!(
        "told twice, and the tools are not what they should be; stderr:\n{}",
        server.stderr.text()
    );
}

#[tokio::test]
async fn a_session_is_told_when_an_upstream_server_changes_its_tools_and_calls_the_new_list() {
    let manifest = ManifestFile::new(&changing_manifest_entry());
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    // A call waits for the tools to load.
    let unknown = server.call("added_1", json!({ "text": "early" })).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let listed = server.request("tools/list", json!({})).await;
    assert_eq!(
        tool_names(&listed),
        ["test_trigger_tool_change", "remove_tool"]
    );

    let added = server.call("test_trigger_tool_change", json!({})).await;
    assert!(text(&added).contains("added added_1"), "{added}");
    listed_when_told(&mut server, |names| {
        names == ["test_trigger_tool_change", "remove_tool", "added_1"]
    })
    .await;
    let answer = server.call("added_1", json!({ "text": "hello" })).await;
    assert!(text(&answer).contains("added_1: hello"), "{answer}");

    // A tool that goes: told again, and a call of it is a call of an unknown tool.
    let removed = server
        .call("remove_tool", json!({ "name": "added_1" }))
        .await;
    assert!(text(&removed).contains("removed added_1"), "{removed}");
    listed_when_told(&mut server, |names| !names.contains(&"added_1".to_owned())).await;
    let gone = server.call("added_1", json!({ "text": "late" })).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap()
            .contains("added_1"),
        "{gone}"
    );
}

/// A stateless (2026-07-28) request's `_meta`.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// Posts a stateless request and returns its response, not yet read.
async fn post_stateless(
    server: &HttpServer,
    id: i64,
    method: &str,
    mut params: Value,
) -> reqwest::Response {
    params["_meta"] = stateless_meta();
    let mut request = toolhost_tests::http_client()
        .no_proxy()
        .build()
        .unwrap()
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.header("mcp-name", name);
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let response = request.body(body.to_string()).send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{method}: {}",
        response.status()
    );
    response
}

/// A stateless request's answer.
async fn stateless(server: &HttpServer, id: i64, method: &str, params: Value) -> Value {
    let body = post_stateless(server, id, method, params)
        .await
        .text()
        .await
        .unwrap();
    messages(&body)
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {method} in {body}"))
}

/// The next message on an event stream (`buffer` holds what was read of the next ones).
async fn next_event(
    stream: &mut reqwest::Response,
    buffer: &mut String,
    within: Duration,
) -> Value {
    let read = async {
        loop {
            if let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                if let Some(message) = messages(&event).into_iter().next() {
                    return message;
                }
                continue;
            }
            let chunk = stream
                .chunk()
                .await
                .unwrap()
                .expect("the stream stays open");
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    };
    tokio::time::timeout(within, read)
        .await
        .unwrap_or_else(|_| panic!("nothing on the listen stream within {within:?}: {buffer}"))
}

#[tokio::test]
async fn a_listen_stream_and_an_http_session_are_told_when_an_upstream_server_changes_its_tools() {
    let manifest = ManifestFile::new(&changing_manifest_entry());
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    // It serves while the tools load (and then says so): listen once they are loaded.
    let deadline = tokio::time::Instant::now() + HANG;
    while tool_names(&stateless(&server, 0, "tools/list", json!({})).await).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tools never loaded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let filter = json!({ "notifications": { "toolsListChanged": true } });
    let mut stream = post_stateless(&server, 1, "subscriptions/listen", filter).await;
    let mut buffer = String::new();
    let ack = next_event(&mut stream, &mut buffer, HANG).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    // A session (2025-11-25) on the same endpoint, with its stream for what the server says
    // on its own.
    let session = server.client().await;
    let mut session_stream = session
        .http
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session.session.as_deref().unwrap())
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(
        session_stream.status().is_success(),
        "{}",
        session_stream.status()
    );
    let mut session_buffer = String::new();

    let call = json!({ "name": "test_trigger_tool_change", "arguments": {} });
    let added = stateless(&server, 2, "tools/call", call).await;
    assert!(text(&added).contains("added added_1"), "{added}");
    // The conformance suite waits 1.5 s for it; a second is plenty here.
    let told = next_event(&mut stream, &mut buffer, Duration::from_secs(1)).await;
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    assert_eq!(
        told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1,
        "{told}"
    );
    let within = Duration::from_secs(1);
    let told = next_event(&mut session_stream, &mut session_buffer, within).await;
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");

    let listed = stateless(&server, 3, "tools/list", json!({})).await;
    assert!(
        tool_names(&listed).contains(&"added_1".to_owned()),
        "{listed}"
    );
    let call = json!({ "name": "added_1", "arguments": { "text": "hello" } });
    let answer = stateless(&server, 4, "tools/call", call).await;
    assert!(text(&answer).contains("added_1: hello"), "{answer}");

    // A second change reaches the same stream.
    let call = json!({ "name": "remove_tool", "arguments": { "name": "added_1" } });
    stateless(&server, 5, "tools/call", call).await;
    let told = next_event(&mut stream, &mut buffer, Duration::from_secs(1)).await;
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
}

//! `host mcp` on stdio, spoken to with raw JSON-RPC lines.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::mcp::StdioServer;

use crate::{is_error, test_manifest, text, tool_names};

#[tokio::test]
async fn initialize_says_toolhost_with_tools_logging_and_tasks_only() {
    let mut server = StdioServer::spawn(&[CALCULATOR]);
    let result = server.initialize().await;
    assert_eq!(result["serverInfo"]["name"], "toolhost");
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(
        result["capabilities"],
        // Tools that load after `initialize` (a first start) are announced; calls may run
        // as tasks (the MCP tasks extension).
        json!({
            "logging": {},
            "tools": { "listChanged": true },
            "extensions": { "io.modelcontextprotocol/tasks": {} },
        })
    );
    let pong = server.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
}

#[tokio::test]
async fn what_goes_wrong_in_a_call_is_an_error_result_with_the_models_text() {
    let mut server = StdioServer::start(&[CALCULATOR]).await;
    let answer = server.call("square_root", json!({ "x": "four" })).await;
    assert!(is_error(&answer), "{answer}");
    assert!(text(&answer).starts_with("invalid arguments: "), "{answer}");
    assert!(
        text(&answer).ends_with("call the tool again with fixed arguments"),
        "{answer}"
    );
    // The tool's own refusal reads the same.
    let answer = server.call("square_root", json!({ "x": -1 })).await;
    assert!(is_error(&answer), "{answer}");
    assert_eq!(
        text(&answer),
        "invalid arguments: x is -1; the square root of a negative number is not a real \
         number: send a number of 0 or more, such as {\"x\": 1} for the square root of its \
         size; call the tool again with fixed arguments"
    );

    // Absent `arguments` count as `{}`: here they miss `x`.
    let answer = server
        .request("tools/call", json!({ "name": "square_root" }))
        .await;
    assert!(is_error(&answer), "{answer}");
    assert!(
        text(&answer).contains("\"x\" is a required property"),
        "{answer}"
    );

    // An unknown tool is a JSON-RPC error, -32602, naming the tools there are.
    let answer = server.call("cube_root", json!({})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "there is no tool `cube_root`; the tools are: add, multiply, square_root"
    );
}

/// What the direct path logs (at debug level, `-vv`) for the call with `id`.
fn served_directly(id: &Value) -> String {
    format!("tools/call served directly id={id}")
}

/// Calls until one is served directly: the direct path is set up once rmcp has the session
/// going, and a call read before that goes through rmcp. The server runs with `-vv`; the
/// calls name no tool it has, so they run nothing.
async fn until_served_directly(server: &mut StdioServer) {
    for _ in 0..100 {
        let warm = server
            .request("tools/call", json!({ "name": "cube_root" }))
            .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        if server.stderr.text().contains(&served_directly(&warm["id"])) {
            return;
        }
    }
    panic!("no call was served directly");
}

/// A `tools/call` without `_meta` is served on a path of its own, one with `_meta` by rmcp's
/// handler: a client must not be able to tell them apart.
#[tokio::test]
async fn a_call_answers_the_same_with_and_without_meta() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg(), "-vv"]).await;
    until_served_directly(&mut server).await;
    let mut through_rmcp = Vec::new();
    let calls = [
        json!({ "name": "square_root", "arguments": { "x": 475695037565u64 } }),
        json!({ "name": "add", "arguments": { "a": 1, "b": "two" } }),
        json!({ "name": "square_root" }),
        json!({ "name": "fail", "arguments": {} }),
        json!({ "name": "chatter", "arguments": { "bytes": 20 } }),
        json!({ "name": "cube_root", "arguments": {} }),
    ];
    for params in calls {
        let mut answers = Vec::new();
        for meta in [None, Some(json!({}))] {
            let mut params = params.clone();
            if let Some(meta) = meta {
                params["_meta"] = meta;
            }
            let meta = params.get("_meta").is_some();
            server.notifications.clear();
            let mut answer = server.request("tools/call", params).await;
            let id = answer.as_object_mut().unwrap().remove("id").unwrap();
            if meta {
                through_rmcp.push(id);
            } else {
                server.stderr.wait_for(&served_directly(&id)).await;
            }
            answers.push((answer, server.notifications.clone()));
        }
        assert_eq!(answers[0], answers[1], "{params}");
    }
    // Lines are logged in order: once the last call's line is there, so would the others'.
    let last = server
        .request("tools/call", json!({ "name": "cube_root" }))
        .await;
    server.stderr.wait_for(&served_directly(&last["id"])).await;
    let log = server.stderr.text();
    for id in through_rmcp {
        assert!(
            !log.contains(&served_directly(&id)),
            "the call {id} with `_meta` went the direct way"
        );
    }
}

#[tokio::test]
async fn traps_failures_and_denials_are_error_results_and_the_server_goes_on() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    let answer = server.call("fail", json!({})).await;
    assert!(is_error(&answer), "{answer}");
    assert_eq!(text(&answer), "the tool failed: it went wrong on purpose");

    let answer = server.call("crash", json!({})).await;
    assert!(is_error(&answer), "{answer}");
    assert!(
        text(&answer).starts_with("the tool crashed:")
            && text(&answer).contains("crashed on purpose"),
        "{answer}"
    );

    let answer = server
        .call("fetch", json!({ "address": "http://127.0.0.1:9/" }))
        .await;
    assert!(is_error(&answer), "{answer}");
    assert!(
        text(&answer).starts_with("the tool is not allowed HTTP access to 127.0.0.1:9"),
        "{answer}"
    );
    assert!(!text(&answer).contains("grants"), "{answer}");

    let answer = server.call("count", json!({})).await;
    assert_eq!(text(&answer), r#"{"result":1}"#);
}

#[tokio::test]
async fn meta_keys_the_manifest_names_reach_the_tool_and_no_others() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    let id = server
        .start_request(
            "tools/call",
            json!({
                "name": "context",
                "arguments": {},
                "_meta": { "tenant": "acme", "count": 3, "secret": "s3cret", "progressToken": 7 },
            }),
        )
        .await;
    let answer = server.answer(&json!(id)).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"],
        json!({ "call_id": id.to_string(), "values": { "count": "3", "tenant": "acme" } })
    );

    // `--pass-meta` adds one; with a single component there is no manifest to name any.
    let mut server =
        StdioServer::start(&[toolhost_tests::components::MISBEHAVE, "--pass-meta", "user"]).await;
    let answer = server
        .request(
            "tools/call",
            json!({ "name": "context", "arguments": {}, "_meta": { "user": "ann", "tenant": "acme" } }),
        )
        .await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"]["values"],
        json!({ "user": "ann" })
    );
}

#[tokio::test]
async fn bad_input_gets_an_error_and_the_server_keeps_serving() {
    let mut server = StdioServer::start(&[CALCULATOR, "--max-request", "64KiB"]).await;

    // Not JSON: a parse error (there is no id to answer to).
    server
        .write_line(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")
        .await;
    let answer = server.next_message().await.unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");

    // JSON, but not a JSON-RPC message: invalid request, with its id.
    server.send(&json!({ "id": 41, "hello": "world" })).await;
    let answer = server.answer(&json!(41)).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");

    // A method that is not served.
    let answer = server.request("resources/list", json!({})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let answer = server.request("no/such/method", json!({})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");

    // A message over the limit is answered (with its id, found as it is skipped) and
    // skipped, not kept.
    let huge = json!({
        "jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": { "name": "add", "arguments": { "a": 1, "b": 2, "pad": "x".repeat(1 << 20) } },
    });
    server.send(&huge).await;
    let answer = server.next_message().await.unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], 42, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the limit is 65536"),
        "{answer}"
    );

    // And it still serves.
    let answer = server.call("add", json!({ "a": 1, "b": 2 })).await;
    assert_eq!(text(&answer), r#"{"result":3.0}"#);
    // Nothing but JSON-RPC ever reached stdout (every line above parsed), and it stays up.
    assert!(server.child.try_wait().unwrap().is_none());
}

#[tokio::test]
async fn notifications_cancelled_stops_a_spinning_tool() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg(), "-v"]).await;
    let spin = server
        .start_request("tools/call", json!({ "name": "spin", "arguments": {} }))
        .await;
    // Let it start spinning (if the cancellation came first, it would never start: the
    // outcome is the same).
    tokio::time::sleep(Duration::from_millis(200)).await;
    server
        .notify(
            "notifications/cancelled",
            json!({ "requestId": spin, "reason": "test" }),
        )
        .await;
    let line = server.stderr.wait_for(r#"outcome="cancelled""#).await;
    assert!(line.contains("tool=\"spin\""), "{line}");
    // The cancelled request gets no answer; the next request does.
    let answer = server.call("count", json!({})).await;
    assert_eq!(text(&answer), r#"{"result":1}"#);
}

#[tokio::test]
async fn a_client_that_goes_away_mid_call_ends_the_server() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    server
        .start_request("tools/call", json!({ "name": "spin", "arguments": {} }))
        .await;
    server.close_stdin();
    // rmcp lets calls in flight answer for a few seconds, then cancels them; the process
    // ends either way, with the spinning instance.
    assert_eq!(server.exit_code().await, Some(0));
}

/// When the client goes away, rmcp lets its calls answer for 5 s; the calls served directly
/// get the same 5 s, from the same moment. With a call spinning on each path the server ends
/// after one grace, not one after the other (10 s).
#[tokio::test]
async fn a_client_gone_mid_calls_on_both_paths_ends_the_server_after_one_grace() {
    const GRACE: Duration = Duration::from_secs(5);
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg(), "-vv"]).await;
    until_served_directly(&mut server).await;
    let direct = server
        .start_request("tools/call", json!({ "name": "spin", "arguments": {} }))
        .await;
    server
        .stderr
        .wait_for(&served_directly(&json!(direct)))
        .await;
    // `_meta` sends a call through rmcp.
    server
        .start_request(
            "tools/call",
            json!({ "name": "spin", "arguments": {}, "_meta": {} }),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let closed = std::time::Instant::now();
    server.close_stdin();
    assert_eq!(server.exit_code().await, Some(0));
    let took = closed.elapsed();
    server
        .stderr
        .wait_for("calls served directly still running are cancelled")
        .await;
    assert!(
        took < GRACE * 3 / 2,
        "the server took {took:?} to end: the two paths' graces ran one after the other"
    );
}

#[tokio::test]
async fn sigterm_lets_a_call_in_flight_finish_and_takes_no_new_one() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg(), "-v"]).await;
    let sleep = server
        .start_request(
            "tools/call",
            json!({ "name": "sleep", "arguments": { "ms": 1500 } }),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.terminate();
    server.stderr.wait_for("waiting up to").await;
    let refused = server.call("add", json!({ "a": 1, "b": 2 })).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{refused}"
    );
    let answer = server.answer(&json!(sleep)).await;
    assert_eq!(text(&answer), "awake");
    assert_eq!(server.exit_code().await, Some(0));
}

#[tokio::test]
async fn sigterm_cancels_what_outlives_the_shutdown_timeout() {
    let manifest = test_manifest();
    let mut server =
        StdioServer::start(&[manifest.arg(), "-v", "--shutdown-timeout", "300ms"]).await;
    server
        .start_request("tools/call", json!({ "name": "spin", "arguments": {} }))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.terminate();
    server.stderr.wait_for(r#"outcome="cancelled""#).await;
    assert_eq!(server.exit_code().await, Some(0));
}

#[tokio::test]
async fn the_readme_client_configuration_starts_a_working_server() {
    let root = toolhost_tests::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("```json\n{\n  \"mcpServers\"")
        .expect("the README shows an mcpServers configuration");
    let snippet = &readme[start + "```json\n".len()..];
    let snippet = &snippet[..snippet.find("```").unwrap()];
    let config: Value = serde_json::from_str(snippet).unwrap();
    let entry = &config["mcpServers"]["toolhost"];
    // The README points clients at the release binary `just install` puts in ~/.cargo/bin;
    // the test starts the one just built, with the arguments the README gives.
    assert_eq!(entry["command"], "/home/you/.cargo/bin/host");
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| {
            arg.as_str()
                .unwrap()
                .replace("/path/to/toolhost", root.to_str().unwrap())
        })
        .collect();
    assert_eq!(args[0], "mcp");
    assert!(
        root.join("example-tools/dist/calculator.wasm").exists(),
        "build the example tools with `just tools`"
    );
    let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let mut server = StdioServer::start(&args).await;
    let listed = server.list_tools_once_loaded().await;
    assert_eq!(tool_names(&listed).len(), 21, "{listed}");
}

//! `host mcp --http`: Streamable HTTP, spoken to with raw JSON-RPC over a plain HTTP client.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::cli::HostCommand;
use toolhost_tests::components::{CALCULATOR, MCP_CONFORMANCE};
use toolhost_tests::mcp::{HttpClient, HttpServer, messages};

use crate::{test_manifest, text};

#[tokio::test]
async fn it_serves_at_the_address_it_printed_with_health() {
    let server = HttpServer::start(&[CALCULATOR], &[]).await;
    let mut client = HttpClient::new(&server.url);
    let initialized = client.initialize().await;
    assert_eq!(initialized["result"]["serverInfo"]["name"], "toolhost");
    assert!(client.session.is_some(), "session mode by default");
    let answer = client.call("add", json!({ "a": 1, "b": 2 })).await;
    assert_eq!(text(&answer), r#"{"result":3.0}"#);

    let health = server.get("/health").await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        serde_json::from_str::<Value>(&health.text().await.unwrap()).unwrap(),
        json!({ "status": "ok", "tools": 3 })
    );
    let elsewhere = server.get("/").await.unwrap();
    assert_eq!(elsewhere.status(), 404);
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused_with_403() {
    let server = HttpServer::start(&[CALCULATOR, "--allowed-host", "tools.internal"], &[]).await;
    let mut client = HttpClient::new(&server.url);
    let (_, initialize) = client.initialize_message();
    let port = server.authority.rsplit(':').next().unwrap().to_owned();
    let status = |request: reqwest::RequestBuilder| async move {
        request.send().await.unwrap().status().as_u16()
    };
    // DNS rebinding: a page on evil.example resolving to 127.0.0.1.
    let evil_host = client
        .post(&initialize)
        .header("host", format!("evil.example:{port}"));
    assert_eq!(status(evil_host).await, 403);
    let evil_origin = client
        .post(&initialize)
        .header("origin", "http://evil.example");
    assert_eq!(status(evil_origin).await, 403);
    // What is allowed passes: a loopback origin, an added host.
    let local_origin = client
        .post(&initialize)
        .header("origin", format!("http://localhost:{port}"));
    assert_eq!(status(local_origin).await, 200);
    let added_host = client
        .post(&initialize)
        .header("host", format!("tools.internal:{port}"));
    assert_eq!(status(added_host).await, 200);
}

#[tokio::test]
async fn with_a_token_every_request_must_carry_it() {
    let server = HttpServer::start(
        &[CALCULATOR, "--token-env", "MCP_TEST_TOKEN"],
        &[("MCP_TEST_TOKEN", "s3cret-token")],
    )
    .await;
    let mut client = HttpClient::new(&server.url);
    let (_, initialize) = client.initialize_message();
    let response = client.post(&initialize).send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    let wrong = client
        .post(&initialize)
        .bearer_auth("s3cret-tokeN")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    client
        .headers
        .push(("authorization".into(), "Bearer s3cret-token".into()));
    client.initialize().await;
    let answer = client.call("add", json!({ "a": 2, "b": 2 })).await;
    assert_eq!(text(&answer), r#"{"result":4.0}"#);
    // Health needs no token.
    let health = server.get("/health").await.unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn listening_beyond_loopback_without_a_token_is_refused() {
    let output = HostCommand::new("mcp")
        .args([CALCULATOR, "--http", "0.0.0.0:0"])
        .run()
        .await;
    assert_eq!(output.code(), Some(2));
    let stderr = &output.stderr;
    assert!(stderr.contains("--token-env"), "{stderr}");
    assert!(stderr.contains("0.0.0.0"), "{stderr}");

    let output = HostCommand::new("mcp")
        .args([CALCULATOR, "--http", "127.0.0.1:0"])
        .args(["--token-env", "NO_SUCH_VAR_HERE"])
        .run()
        .await;
    assert_eq!(output.code(), Some(2));
    let stderr = &output.stderr;
    assert!(stderr.contains("NO_SUCH_VAR_HERE"), "{stderr}");
}

#[tokio::test]
async fn bad_requests_get_errors_and_the_server_keeps_serving() {
    let server = HttpServer::start(&[CALCULATOR, "--max-request", "64KiB"], &[]).await;
    let mut client = server.client().await;

    let raw = |body: String| {
        let mut request = client
            .http
            .post(&client.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body);
        if let Some(session) = &client.session {
            request = request.header("mcp-session-id", session);
        }
        request
    };
    let response = raw("{\"jsonrpc\": \"2.0\", \"id\": 1,".to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");

    let huge = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "add", "arguments": { "a": 1, "b": 2, "pad": "x".repeat(1 << 20) } },
    });
    let response = raw(huge.to_string()).send().await.unwrap();
    assert_eq!(response.status(), 413);

    let answer = client.request("prompts/list", json!({})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let answer = client.call("nope", json!({})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");

    let answer = client.call("add", json!({ "a": 1, "b": 2 })).await;
    assert_eq!(text(&answer), r#"{"result":3.0}"#);
}

/// Starts `spin` over HTTP, waits until the response has begun, then drops it.
async fn start_and_abandon_spin(client: &mut HttpClient) {
    let (_, message) = client.message("tools/call", json!({ "name": "spin", "arguments": {} }));
    let response = client.post(&message).send().await.unwrap();
    assert_eq!(response.status(), 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(response);
}

#[tokio::test]
async fn a_client_closing_its_stream_cancels_the_call_with_sessions() {
    let manifest = test_manifest();
    let server = HttpServer::start(&[manifest.arg(), "-v"], &[]).await;
    let mut client = server.client().await;
    start_and_abandon_spin(&mut client).await;
    let line = server.stderr.wait_for(r#"outcome="cancelled""#).await;
    assert!(line.contains("tool=\"spin\""), "{line}");
    let answer = client.call("count", json!({})).await;
    assert_eq!(text(&answer), r#"{"result":1}"#);
}

#[tokio::test]
async fn a_client_closing_its_stream_cancels_the_call_without_sessions() {
    let manifest = test_manifest();
    let server = HttpServer::start(&[manifest.arg(), "-v", "--stateless"], &[]).await;
    let mut client = server.client().await;
    assert_eq!(client.session, None);
    start_and_abandon_spin(&mut client).await;
    server.stderr.wait_for(r#"outcome="cancelled""#).await;
    let answer = client.call("count", json!({})).await;
    assert_eq!(text(&answer), r#"{"result":1}"#);
}

#[tokio::test]
async fn notifications_cancelled_over_http_stops_a_spinning_tool() {
    let manifest = test_manifest();
    let server = HttpServer::start(&[manifest.arg(), "-v"], &[]).await;
    let mut client = server.client().await;
    let (id, message) = client.message("tools/call", json!({ "name": "spin", "arguments": {} }));
    let spinning = client.post(&message).send().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": { "requestId": id } });
    let response = client.post(&cancel).send().await.unwrap();
    assert_eq!(response.status(), 202);
    server.stderr.wait_for(r#"outcome="cancelled""#).await;
    drop(spinning);
}

#[tokio::test]
async fn sigterm_lets_calls_in_flight_finish_then_stops() {
    let manifest = test_manifest();
    let mut server = HttpServer::start(&[manifest.arg(), "-v"], &[]).await;
    let mut client = server.client().await;
    let (id, message) = client.message(
        "tools/call",
        json!({ "name": "sleep", "arguments": { "ms": 1500 } }),
    );
    let sleeping = client.post(&message).send().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.terminate();
    server
        .stderr
        .wait_for("stopped accepting connections")
        .await;
    let health = server.get("/health").await;
    assert!(health.is_err(), "no new connections: {health:?}");
    let body = sleeping.text().await.unwrap();
    let answer = messages(&body)
        .into_iter()
        .find(|m| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no answer in {body}"));
    assert_eq!(text(&answer), "awake");
    assert_eq!(server.exit_code().await, Some(0));
}

#[tokio::test]
async fn the_python_sdk_lists_and_calls_over_http() {
    let peers = toolhost_tests::mcp::peers();
    let server = HttpServer::start(&[MCP_CONFORMANCE], &[]).await;
    let output = tokio::process::Command::new(&peers.python)
        .arg(&peers.python_client)
        .args([
            "--mode",
            "legacy",
            "--call",
            "test_simple_text",
            &server.url,
        ])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["server"]["name"], "toolhost");
    assert_eq!(
        printed["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
}

/// A request of revision 2026-07-28, as a stateless client sends it: the version in a header
/// and in `_meta`, the method (and tool) in headers too.
async fn stateless(
    server: &HttpServer,
    id: i64,
    method: &str,
    mut params: Value,
    meta: Value,
) -> (u16, Vec<Value>) {
    let mut all_meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (key, value) in meta.as_object().into_iter().flatten() {
        all_meta[key] = value.clone();
    }
    params["_meta"] = all_meta;
    let mut request = toolhost_tests::http_client()
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
    let status = response.status().as_u16();
    (status, messages(&response.text().await.unwrap()))
}

#[tokio::test]
async fn the_stateless_revision_has_no_initialize_and_logs_only_on_request() {
    let server = HttpServer::start(&[MCP_CONFORMANCE], &[]).await;
    for method in ["initialize", "logging/setLevel"] {
        let (status, answer) = stateless(&server, 500, method, json!({}), json!({})).await;
        assert_eq!(status, 404, "{method}: {answer:?}");
        assert_eq!(answer[0]["error"]["code"], -32601, "{method}: {answer:?}");
        assert_eq!(answer[0]["id"], 500);
    }
    let call = json!({ "name": "test_logging_tool", "arguments": {} });
    let logs = |messages: &[Value]| {
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count()
    };
    // No log level in `_meta`: no logs.
    let (status, quiet) = stateless(&server, 1, "tools/call", call.clone(), json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(logs(&quiet), 0, "{quiet:?}");
    assert_eq!(
        quiet
            .last()
            .map(|m| m["result"]["content"][0]["text"].clone()),
        Some(json!("Logging tool completed"))
    );
    // With one: the tool's log lines, before its answer.
    let level = json!({ "io.modelcontextprotocol/logLevel": "info" });
    let (_, told) = stateless(&server, 2, "tools/call", call, level).await;
    assert_eq!(logs(&told), 3, "{told:?}");
    assert_eq!(told[0]["params"]["data"], "Logging started");
    assert_eq!(told[3]["id"], 2);
}

/// A tool that asks for input over the stateless revision: the client gets the requests and a
/// sealed state; the state comes back unchanged, or the call is refused.
#[tokio::test]
async fn a_tools_request_for_input_round_trips_only_its_own_sealed_state() {
    let server = HttpServer::start(&[MCP_CONFORMANCE], &[]).await;
    let can_elicit = json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
    let tool = "test_input_required_result_request_state";
    let first = json!({ "name": tool, "arguments": {} });
    let (_, asked) = stateless(&server, 1, "tools/call", first, can_elicit.clone()).await;
    let asked = &asked.last().unwrap()["result"];
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = asked["requestState"].as_str().unwrap().to_owned();
    assert!(
        !state.contains("confirm-pending"),
        "the tool's state is sealed, not shown"
    );

    let again = |state: String, name: &str| {
        json!({
            "name": name,
            "arguments": {},
            "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } },
            "requestState": state,
        })
    };
    for (state, name, why) in [
        (format!("{state}x"), tool, "changed"),
        (
            state.clone(),
            "test_input_required_result_tampered_state",
            "another tool",
        ),
    ] {
        let (_, refused) = stateless(
            &server,
            2,
            "tools/call",
            again(state, name),
            can_elicit.clone(),
        )
        .await;
        let error = &refused.last().unwrap()["error"];
        assert_state_refused(error, why);
    }
    let (_, finished) = stateless(&server, 3, "tools/call", again(state, tool), can_elicit).await;
    assert_eq!(
        finished.last().unwrap()["result"]["content"][0]["text"],
        "state-ok: confirmed"
    );
    // A client that cannot answer is told which capability the tool needs.
    let (status, refused) = stateless(
        &server,
        4,
        "tools/call",
        json!({ "name": "test_missing_capability", "arguments": {} }),
        json!({}),
    )
    .await;
    assert_eq!(status, 400);
    let error = &refused.last().unwrap()["error"];
    assert_eq!(error["code"], -32021);
    assert!(
        error["data"]["requiredCapabilities"]
            .get("sampling")
            .is_some()
    );
}

/// Replicas sharing `--state-key` continue each other's calls; a replica with a key of its own
/// refuses a state it did not seal.
#[tokio::test]
async fn replicas_with_one_state_key_continue_each_others_calls() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("state.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    let key = key.to_str().unwrap();
    let first = HttpServer::start(&[MCP_CONFORMANCE, "--state-key", key], &[]).await;
    let second = HttpServer::start(&[MCP_CONFORMANCE, "--state-key", key], &[]).await;
    let alone = HttpServer::start(&[MCP_CONFORMANCE], &[]).await;
    let can_elicit = json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
    let tool = "test_input_required_result_request_state";
    let call = json!({ "name": tool, "arguments": {} });
    let (_, asked) = stateless(&first, 1, "tools/call", call, can_elicit.clone()).await;
    let state = asked.last().unwrap()["result"]["requestState"].clone();
    let again = json!({
        "name": tool,
        "arguments": {},
        "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } },
        "requestState": state,
    });
    let (_, finished) =
        stateless(&second, 2, "tools/call", again.clone(), can_elicit.clone()).await;
    assert_eq!(
        finished.last().unwrap()["result"]["content"][0]["text"],
        "state-ok: confirmed"
    );
    let (_, refused) = stateless(&alone, 3, "tools/call", again, can_elicit).await;
    let error = &refused.last().unwrap()["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("another server"),
        "{error}"
    );
}

/// A prompt that asks for input over the stateless revision, as a tool does: the client gets
/// the request and a sealed state; a state changed, or made for a tool of the same name or
/// for other arguments, is refused; the state as sealed fills the prompt in.
#[tokio::test]
async fn a_prompts_request_for_input_round_trips_only_its_own_sealed_state() {
    let server = HttpServer::start(&[MCP_CONFORMANCE], &[]).await;
    let can_elicit = json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
    let prompt = "test_input_required_result_prompt";
    let first = json!({ "name": prompt });
    let (_, asked) = stateless(&server, 1, "prompts/get", first, can_elicit.clone()).await;
    let asked = &asked.last().unwrap()["result"];
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let request = &asked["inputRequests"]["user_context"];
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(
        request["params"]["message"],
        "What context should the prompt use?"
    );
    let state = asked["requestState"].as_str().unwrap().to_owned();
    assert!(
        !state.contains("asked for the context"),
        "the prompt's state is sealed, not shown"
    );
    let again = |state: &str, arguments: Value| {
        json!({
            "name": prompt,
            "arguments": arguments,
            "inputResponses": {
                "user_context": { "action": "accept", "content": { "context": "a test" } },
            },
            "requestState": state,
        })
    };
    let changed = format!("{state}x");
    for (params, why) in [
        (again(&changed, json!({})), "changed"),
        (again(&state, json!({ "extra": "1" })), "other arguments"),
    ] {
        let (_, refused) = stateless(&server, 2, "prompts/get", params, can_elicit.clone()).await;
        let error = &refused.last().unwrap()["error"];
        assert_state_refused(error, why);
    }
    // A tool's state is never a prompt's: the tool that asks under that same guest.
    let tool = json!({ "name": "test_input_required_result_request_state", "arguments": {} });
    let (_, tool_asked) = stateless(&server, 3, "tools/call", tool, can_elicit.clone()).await;
    let tool_state = tool_asked.last().unwrap()["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, refused) = stateless(
        &server,
        4,
        "prompts/get",
        again(&tool_state, json!({})),
        can_elicit.clone(),
    )
    .await;
    let error = &refused.last().unwrap()["error"];
    assert_state_refused(error, "a tool's state given to a prompt");
    let (_, filled) = stateless(
        &server,
        5,
        "prompts/get",
        again(&state, json!({})),
        can_elicit,
    )
    .await;
    let filled = &filled.last().unwrap()["result"];
    assert_eq!(
        filled["messages"][0]["content"]["text"], "Use this context: a test",
        "{filled}"
    );
    // A client that cannot answer is told which capability the prompt needs.
    let (status, refused) = stateless(
        &server,
        6,
        "prompts/get",
        json!({ "name": prompt }),
        json!({}),
    )
    .await;
    assert_eq!(status, 400, "{refused:?}");
    let error = &refused.last().unwrap()["error"];
    assert_eq!(error["code"], -32021);
    assert!(
        error["data"]["requiredCapabilities"]
            .get("elicitation")
            .is_some()
    );
}

/// `error` is the one refusal of a sealed `requestState` (rmcp's codec says the same for every
/// binding that fails, as it should: no hint of which), for the case `why`.
fn assert_state_refused(error: &Value, why: &str) {
    assert_eq!(error["code"], -32602, "{why}: {error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("requestState is refused"),
        "{why}: {error}"
    );
}

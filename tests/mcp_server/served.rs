//! What a client sees of the tools over `host mcp` (on stdio, with raw JSON-RPC lines): the
//! list with annotations, results with structured content, and what a tool writes and
//! reports while it runs, as notifications.

use serde_json::{Value, json};
use toolhost_tests::mcp::StdioServer;

use crate::{is_error, test_manifest, text, tool_names};

#[tokio::test]
async fn tools_are_listed_in_manifest_order_with_annotations_every_time() {
    let manifest = test_manifest();
    let mut first = StdioServer::start(&[manifest.arg()]).await;
    let listed = first.request("tools/list", json!({})).await;
    assert_eq!(
        tool_names(&listed),
        [
            "add",
            "multiply",
            "square_root",  // calculator, in its own order
            "current_time", // clock
            "spin",
            "hog",
            "flood",
            "chatter",
            "sleep",
            "crash",
            "exit",
            "fail",
            "env",
            "context",
            "connect",
            "fetch",
            "count",
            "remember",
            "nothing",
            "report", // misbehave
        ]
    );
    let tools = listed["result"]["tools"].as_array().unwrap();
    let square_root = &tools[2];
    // The manifest overrides what the tool says, field by field.
    assert_eq!(square_root["title"], "Root (from the manifest)");
    assert_eq!(
        square_root["annotations"],
        json!({
            "title": "Root (from the manifest)",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        })
    );
    // `add` has no annotations in the manifest: it is served with what the tool itself says.
    assert_eq!(
        tools[0]["annotations"],
        json!({
            "title": "Add",
            "readOnlyHint": true,
            "idempotentHint": true,
            "openWorldHint": false,
        })
    );
    assert!(tools[3].get("annotations").is_none(), "{}", tools[3]);
    for tool in tools {
        assert!(!tool["description"].as_str().unwrap().is_empty(), "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    // Another server, another run: the same answer, byte for byte.
    let mut second = StdioServer::start(&[manifest.arg()]).await;
    let again = second.request("tools/list", json!({})).await;
    assert_eq!(listed["result"], again["result"]);
}

#[tokio::test]
async fn an_output_schema_brings_structured_content_and_the_same_json_as_text() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    let listed = server.request("tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let schema_of = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap()
            .get("outputSchema")
            .cloned()
    };

    // A number is not an object: served under `result`.
    assert_eq!(
        schema_of("square_root"),
        Some(json!({
            "type": "object",
            "properties": { "result": { "type": "number", "format": "double" } },
            "required": ["result"],
        }))
    );
    let answer = server
        .call("square_root", json!({ "x": 475695037565u64 }))
        .await;
    assert!(!is_error(&answer), "{answer}");
    assert_eq!(text(&answer), r#"{"result":689706.4865324959}"#);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({ "result": 689706.4865324959 })
    );

    // An object is served as it is, and the text is that same JSON.
    assert_eq!(schema_of("current_time").unwrap()["type"], "object");
    let answer = server
        .call("current_time", json!({ "time_zone": "Asia/Tokyo" }))
        .await;
    assert!(!is_error(&answer), "{answer}");
    let structured = &answer["result"]["structuredContent"];
    assert_eq!(structured["time_zone"], "Asia/Tokyo");
    assert_eq!(
        &serde_json::from_str::<Value>(text(&answer)).unwrap(),
        structured
    );

    // A string result is plain text: no output schema, no structured content.
    assert_eq!(schema_of("sleep"), None);
    let answer = server.call("sleep", json!({ "ms": 1 })).await;
    assert_eq!(text(&answer), "awake");
    assert!(
        answer["result"].get("structuredContent").is_none(),
        "{answer}"
    );
}

#[tokio::test]
async fn the_tools_output_reaches_the_client_as_logging_notifications() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    let answer = server.call("chatter", json!({ "bytes": 20 })).await;
    assert_eq!(text(&answer), "done");
    let logs: Vec<(&str, &str, &str)> = server
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| {
            let params = &n["params"];
            (
                params["level"].as_str().unwrap(),
                params["logger"].as_str().unwrap(),
                params["data"].as_str().unwrap(),
            )
        })
        .collect();
    // 64 lines on stdout (1088 bytes: it writes whole blocks of 64), then one on stderr.
    assert_eq!(logs.len(), 65, "{logs:?}");
    assert!(
        logs[..64]
            .iter()
            .all(|log| *log == ("info", "chatter", "0123456789abcdef"))
    );
    assert_eq!(logs[64], ("info", "chatter", "chatter done"));

    // A client that wants warnings and worse gets none of it.
    server.notifications.clear();
    let set = server
        .request("logging/setLevel", json!({ "level": "warning" }))
        .await;
    assert_eq!(set["result"], json!({}));
    server.call("chatter", json!({ "bytes": 20 })).await;
    assert_eq!(server.notifications, Vec::<Value>::new());
    // The operator sees it on stderr, marked as the tool's.
    server.stderr.wait_for("chatter done").await;
}

/// A tool's progress reports and log lines reach the client as notifications before its
/// answer; a tool that reports 100,000 times costs the client a few dozen.
#[tokio::test]
async fn a_tools_reports_are_notifications_bounded_in_number() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    server.initialize().await;
    let id = server
        .start_request(
            "tools/call",
            json!({
                "name": "report",
                "arguments": {"times": 100_000},
                "_meta": {"progressToken": "p-1"},
            }),
        )
        .await;
    let answer = server.answer(&json!(id)).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "reported 100000 times",
        "{answer}"
    );
    let of = |method: &str| -> Vec<&Value> {
        server
            .notifications
            .iter()
            .filter(|n| n["method"] == method)
            .map(|n| &n["params"])
            .collect()
    };
    let progress = of("notifications/progress");
    let logs = of("notifications/message");
    assert!(
        (3..=60).contains(&progress.len()),
        "{} progress notifications",
        progress.len()
    );
    assert!((3..=60).contains(&logs.len()), "{} log lines", logs.len());
    assert!(progress.iter().all(|p| p["progressToken"] == "p-1"));
    assert!(
        progress
            .windows(2)
            .all(|w| w[0]["progress"].as_f64() < w[1]["progress"].as_f64()),
        "progress only grows"
    );
    // The last report is never lost to the bound: the client sees the call complete.
    let last = progress
        .last()
        .map(|p| (p["progress"].clone(), p["total"].clone()));
    assert_eq!(last, Some((json!(100000.0), json!(100000.0))));
    assert_eq!(logs[0]["logger"], "report");
    assert_eq!(logs[0]["data"], "line 1");
}

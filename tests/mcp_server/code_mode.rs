//! `host mcp` in code mode: one more tool, `run_code`, whose description lists the served
//! tools as typed signatures; a client's program calls them, each call told to the client as
//! progress of the program's call and written to the audit log with the program's call as its
//! parent; a tool the program may not reach is an error it can catch.

use serde_json::{Value, json};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::{CALCULATOR, RUNNER_JS, RUNNER_PY};
use toolhost_tests::mcp::StdioServer;
use toolhost_tests::scripted;

use crate::{is_error, text, tool_names};

#[tokio::test]
async fn a_client_runs_one_program_that_calls_the_served_tools() {
    let runner = scripted(RUNNER_JS);
    let manifest = ManifestFile::in_dir(|dir| {
        format!(
            "[components.calculator]\npath = {CALCULATOR:?}\n\n\
             [audit]\npath = {:?}\n",
            dir.join("audit.jsonl")
        )
    });
    let mut server =
        StdioServer::start(&[manifest.arg(), "--code-mode", "--code-runner", runner]).await;
    let listed = server.request("tools/list", json!({})).await;
    assert_eq!(
        tool_names(&listed),
        ["add", "multiply", "square_root", "run_code"]
    );
    let description = listed["result"]["tools"][3]["description"]
        .as_str()
        .unwrap();
    assert!(
        description.contains("add(args: { a: number"),
        "{description}"
    );

    let program = r#"
        const [a, b] = await Promise.all([tools.square_root({x: 9}), tools.square_root({x: 16})]);
        let missing;
        try { await tools.divide({a, b}); } catch (error) { missing = error.kind; }
        return { sum: await tools.add({a, b}), missing };
    "#;
    let answer = server
        .request(
            "tools/call",
            json!({
                "name": "run_code",
                "arguments": { "code": program },
                "_meta": { "progressToken": "program-1" },
            }),
        )
        .await;
    assert!(!is_error(&answer), "{answer}");
    let report: Value = serde_json::from_str(text(&answer)).unwrap();
    assert_eq!(
        report["result"],
        json!({"sum": 7, "missing": "not-offered"})
    );
    let calls: Vec<&str> = report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["tool"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["square_root", "square_root", "divide", "add"]);

    // Each call, as it ended, was progress of the program's call.
    let progress: Vec<&Value> = server
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| &n["params"])
        .collect();
    assert_eq!(progress.len(), 4, "{progress:?}");
    assert!(progress.iter().all(|p| p["progressToken"] == "program-1"));
    let done: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(done, [1.0, 2.0, 3.0, 4.0], "progress only grows");
    assert_eq!(progress[3]["message"], "add: ok");
    assert!(
        progress
            .iter()
            .any(|p| p["message"] == "divide: not_offered"),
        "{progress:?}"
    );

    // The audit log has every call, the program's calls under it.
    let log = std::fs::read_to_string(manifest.dir().join("audit.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(&str, &str, Option<&str>)> = lines
        .iter()
        .map(|l| {
            (
                l["tool"].as_str().unwrap(),
                l["outcome"].as_str().unwrap(),
                l["parent"].as_str(),
            )
        })
        .collect();
    let parent = lines.last().unwrap()["call_id"].as_str().unwrap();
    assert_eq!(
        summary,
        [
            ("square_root", "ok", Some(parent)),
            ("square_root", "ok", Some(parent)),
            ("divide", "not_offered", Some(parent)),
            ("add", "ok", Some(parent)),
            ("run_code", "ok", None),
        ]
    );
}

/// With the Python runner, the client's model is told to write Python, and its program runs
/// the same way: its calls progress of the program's call.
#[tokio::test]
async fn a_client_runs_a_python_program_with_the_python_runner() {
    let manifest = ManifestFile::calculator("");
    let runner = scripted(RUNNER_PY);
    let mut server =
        StdioServer::start(&[manifest.arg(), "--code-mode", "--code-runner", runner]).await;
    let listed = server.request("tools/list", json!({})).await;
    let description = listed["result"]["tools"][3]["description"]
        .as_str()
        .unwrap();
    assert!(
        description.starts_with("Runs a Python program"),
        "{description}"
    );
    assert!(description.contains("async def add(*,"), "{description}");

    let program = r#"
a, b = await asyncio.gather(tools.square_root(x=9), tools.square_root(x=16))
try:
    await tools.divide(a=a, b=b)
except ToolError as error:
    missing = error.kind
return {"sum": await tools.add(a=a, b=b), "missing": missing}
"#;
    let answer = server
        .request(
            "tools/call",
            json!({
                "name": "run_code",
                "arguments": { "code": program },
                "_meta": { "progressToken": "program-py" },
            }),
        )
        .await;
    assert!(!is_error(&answer), "{answer}");
    let report: Value = serde_json::from_str(text(&answer)).unwrap();
    assert_eq!(
        report["result"],
        json!({"sum": 7.0, "missing": "not-offered"})
    );
    let progress = server
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .filter(|n| n["params"]["progressToken"] == "program-py")
        .count();
    assert_eq!(progress, 4, "one progress report per call");
}

#[tokio::test]
async fn a_program_that_fails_is_an_error_result_and_the_server_goes_on() {
    let runner = scripted(RUNNER_JS);
    let manifest = ManifestFile::calculator(&format!(
        "[code_mode]\nenabled = true\nrunner = {runner:?}\nmax_calls = 3\n"
    ));
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    let answer = server
        .call(
            "run_code",
            json!({"code": "while (true) { try { await tools.add({a: 1}); } catch {} }"}),
        )
        .await;
    assert!(is_error(&answer), "{answer}");
    let report: Value = serde_json::from_str(text(&answer)).unwrap();
    let error = report["error"].as_str().unwrap();
    assert!(error.contains("more than 3 tool calls"), "{error}");
    assert_eq!(report["calls"].as_array().unwrap().len(), 3);
    // Arguments without a program are the client's to fix.
    let answer = server
        .call("run_code", json!({"program": "return 1"}))
        .await;
    assert!(is_error(&answer), "{answer}");
    assert!(text(&answer).contains("`code` is missing"), "{answer}");
    let answer = server.call("add", json!({"a": 1, "b": 2})).await;
    assert_eq!(
        text(&answer),
        r#"{"result":3.0}"#,
        "the other tools still answer"
    );
}

//! toolhost's own `host mcp` as an MCP server: a toolhost loop calling another toolhost's
//! sandboxed tools.

use std::sync::{Arc, Mutex};

use serde_json::json;
use toolhost::mcp::client::McpServerConfig;
use toolhost::{Asker, CallContext};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::FILES;
use toolhost_tests::host_binary;

use super::relay::Answering;
use super::{patient, server, toolbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolhost_loop_calls_another_toolhosts_sandboxed_tools() {
    let inner = ManifestFile::calculator("");
    let command = vec![
        host_binary().to_str().unwrap().to_owned(),
        "mcp".to_owned(),
        inner.arg().to_owned(),
    ];
    let toolbox = toolbox(vec![patient(McpServerConfig::stdio("inner", command))]).await;
    assert!(
        toolbox.names().contains(&"square_root".to_owned()),
        "{:?}",
        toolbox.names()
    );
    // To this host the inner one is an MCP server (whose tools it runs sandboxed itself).
    assert!(!toolbox.origin("square_root").unwrap().is_sandboxed());
    let output = toolbox
        .call(
            "square_root",
            r#"{"x": 475695037565}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // A number is served as `{"result": ...}` (MCP's structured results are objects), and
    // the text is that same JSON, which this client then shows once.
    assert!(
        output.text.starts_with(r#"{"result":689706.486532"#),
        "{output:?}"
    );
    assert!(
        output.structured.as_ref().unwrap()["result"]
            .as_f64()
            .is_some_and(|root| (root * root - 475695037565.0).abs() < 1e-3),
        "{output:?}"
    );
    toolbox.shutdown().await;
}

/// Another toolhost speaks 2026-07-28 (it answers `server/discover`), so the call of a tool
/// that asks ends with an input-required result: the question reaches this call's asker, and
/// the call is sent again with the answer, which the inner tool acts on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_of_another_toolhosts_tool_reaches_this_calls_asker() {
    let notes = tempfile::tempdir().unwrap();
    let inner = ManifestFile::new(&format!(
        "[components.files]\npath = {FILES:?}\ngrants.dirs = [{{ host = {:?}, guest = \"/notes\", write = true }}]\n",
        notes.path()
    ));
    let command = vec![
        host_binary().to_str().unwrap().to_owned(),
        "mcp".to_owned(),
        inner.arg().to_owned(),
    ];
    let (server, toolbox) = server(patient(McpServerConfig::stdio("inner", command))).await;
    assert_eq!(
        server.identity().unwrap().protocol_version,
        "2026-07-28",
        "the newest revision both speak"
    );
    let note = r#"{"title": "groceries", "text": "eggs"}"#;
    let first = toolbox
        .call("write_note", note, &CallContext::default())
        .await;
    first.unwrap_or_else(|e| panic!("{e}"));

    let asker = Arc::new(Answering {
        answer: json!({ "action": "accept", "content": { "overwrite": true } }),
        asked: Mutex::new(Vec::new()),
    });
    let context = CallContext {
        asker: Some(Asker(asker.clone())),
        ..CallContext::default()
    };
    let again = r#"{"title": "groceries", "text": "milk"}"#;
    toolbox
        .call("write_note", again, &context)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "MCP server `inner` (tool `write_note`)");
    assert_eq!(asked[0].1.method, "elicitation/create");
    assert!(
        asked[0].1.params["message"]
            .as_str()
            .is_some_and(|m| m.contains("exists already")),
        "{:?}",
        asked[0].1
    );
    let written = std::fs::read_to_string(notes.path().join("groceries.md")).unwrap();
    assert!(written.contains("milk"), "{written}");

    // Nobody to ask during the call: it ends with the question, for its caller (a paused
    // run) to answer; the answer and the server's state, sent with the same call again,
    // finish it. The user keeps the note.
    let tea = r#"{"title": "groceries", "text": "tea"}"#;
    let paused = toolbox
        .call("write_note", tea, &CallContext::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let asked = paused.input_required.expect("the question comes back");
    assert_eq!(asked.requests["overwrite"].method, "elicitation/create");
    let state = asked.state.expect("host mcp's sealed state");
    let resumed = CallContext {
        input_responses: [("overwrite".to_owned(), json!({ "action": "decline" }))].into(),
        request_state: Some(state.clone()),
        ..CallContext::default()
    };
    let kept = toolbox
        .call("write_note", tea, &resumed)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(kept.text.contains("Not saved"), "{}", kept.text);
    let note = std::fs::read_to_string(notes.path().join("groceries.md")).unwrap();
    assert!(note.contains("milk"), "{note}");
    // The state is the server's: tampered with, it is refused there.
    let tampered = CallContext {
        request_state: Some(format!("x{state}")),
        ..resumed
    };
    let refused = toolbox.call("write_note", tea, &tampered).await;
    let message = match refused {
        Ok(output) => output.text,
        Err(error) => error.to_string(),
    };
    assert!(message.contains("requestState is refused"), "{message}");
    toolbox.shutdown().await;
}

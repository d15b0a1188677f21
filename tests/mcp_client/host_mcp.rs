//! toolhost's own `host mcp` as an MCP server: a toolhost loop calling another toolhost's
//! sandboxed tools.

use std::sync::{Arc, Mutex};

use serde_json::json;
use toolhost::agent::{Conversation, RunEnd, RunOptions};
use toolhost::llm::{ModelConfig, ProviderKind};
use toolhost::mcp::client::McpServerConfig;
use toolhost::{Asker, CallContext, Host};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::FILES;
use toolhost_tests::host_binary;
use toolhost_tests::mcp::HttpServer;
use toolhost_tests::model::{Format, ScriptedModel, Turn, call, calls, text};

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

/// The manifest of an inner toolhost whose tools run only as tasks (the conformance guest's
/// `slow_compute` and `confirm_delete`), with an audit log.
fn tasks_manifest() -> ManifestFile {
    toolhost_tests::require_guests();
    let guest = toolhost_tests::components::MCP_CONFORMANCE;
    ManifestFile::new(&format!(
        "[components.conformance]\npath = {guest:?}\nresources = []\nprompts = []\n\
         tools = [\"slow_compute\", \"confirm_delete\"]\nlimits.timeout = \"10m\"\n\n\
         [tools.slow_compute]\ntask = \"required\"\n\n[tools.confirm_delete]\ntask = \"required\"\n\n\
         [mcp.tasks]\npoll_interval = \"100ms\"\n\n[audit]\npath = \"audit.jsonl\"\n"
    ))
}

/// Another toolhost runs the calls as tasks (they need one: a client without the tasks
/// extension would be refused): this one follows each to its result, passes what the task
/// asks to the call's asker, and cancels the task upstream when it gives up on the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_another_toolhost_runs_as_tasks_are_followed_answered_and_cancelled() {
    let inner = tasks_manifest();
    let command = vec![
        host_binary().to_str().unwrap().to_owned(),
        "mcp".to_owned(),
        inner.arg().to_owned(),
    ];
    let toolbox = toolbox(vec![patient(McpServerConfig::stdio(
        "inner",
        command.clone(),
    ))])
    .await;
    let output = toolbox
        .call(
            "slow_compute",
            r#"{"seconds": 1, "label": "polled"}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.text, "computed polled in 1 s", "{output:?}");

    // The task asks; this call's asker answers; the task finishes with the answer.
    let asker = Arc::new(Answering {
        answer: json!({ "action": "accept", "content": { "confirm": true } }),
        asked: Mutex::new(Vec::new()),
    });
    let context = CallContext {
        asker: Some(Asker(asker.clone())),
        ..CallContext::default()
    };
    let output = toolbox
        .call("confirm_delete", r#"{"filename": "c.txt"}"#, &context)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.text, "deleted c.txt", "{output:?}");
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].1.method, "elicitation/create");
    // Nobody to ask: the call ends with the task's question and the task's id, for its
    // caller (a paused run) to answer; the answer, sent with the same call again, goes to
    // that task.
    let paused = toolbox
        .call(
            "confirm_delete",
            r#"{"filename": "d.txt"}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let asked = paused
        .input_required
        .expect("the task's question comes back");
    assert_eq!(asked.requests["confirm"].method, "elicitation/create");
    let resumed = CallContext {
        input_responses: [("confirm".to_owned(), json!({ "action": "decline" }))].into(),
        task: Some(asked.task.expect("the task's id")),
        ..CallContext::default()
    };
    let kept = toolbox
        .call("confirm_delete", r#"{"filename": "d.txt"}"#, &resumed)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kept.text, "kept d.txt", "{kept:?}");
    toolbox.shutdown().await;

    // A call that times out here cancels its task there: the inner audit log has it cancelled.
    let mut hasty = McpServerConfig::stdio("inner", command);
    hasty.startup_timeout = super::PATIENCE;
    hasty.timeout = std::time::Duration::from_secs(2);
    let toolbox = super::toolbox(vec![hasty]).await;
    let timed_out = toolbox
        .call(
            "slow_compute",
            r#"{"seconds": 600}"#,
            &CallContext::default(),
        )
        .await;
    assert!(
        matches!(timed_out, Err(toolhost::CallError::Timeout { .. })),
        "{timed_out:?}"
    );
    let audit = inner.dir().join("audit.jsonl");
    let cancelled = tokio::time::timeout(super::PATIENCE, async {
        loop {
            let logged = std::fs::read_to_string(&audit).unwrap_or_default();
            if logged.lines().any(|line| {
                line.contains("\"slow_compute\"") && line.contains("\"outcome\":\"cancelled\"")
            }) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        cancelled.is_ok(),
        "the inner task was not cancelled: {}",
        std::fs::read_to_string(&audit).unwrap_or_default()
    );
    toolbox.shutdown().await;
}

/// A host with the inner toolhost at `url` (over HTTP), whose model takes the `turns`; the
/// model and the host.
async fn deleting_host(url: &str, turns: Vec<Turn>) -> (ScriptedModel, Host) {
    let model = ScriptedModel::start(Format::OpenAi, turns).await;
    let host = Host::builder()
        .runtime(toolhost_tests::runtime())
        .mcp_server(patient(McpServerConfig::http("inner", url)))
        .model(ModelConfig {
            provider: Some(ProviderKind::OpenAi),
            base_url: Some(model.base_url()),
            ..ModelConfig::default()
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("{}", toolhost_tests::error::chain(&e)));
    (model, host)
}

/// A run with nobody to ask pauses when another toolhost's task asks (the task waits there),
/// keeps the task's id with the paused run, and, resumed in another host from the
/// conversation's JSON, sends the answer to that task and polls it to its result: the tool
/// is called once, not again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_run_resumes_polling_the_task_it_left_upstream() {
    let inner = tasks_manifest();
    let server = HttpServer::start(&[inner.arg()], &[]).await;
    server.loaded().await;
    let delete = call("c1", "confirm_delete", r#"{"filename": "e.txt"}"#);
    let (_model, host) = deleting_host(&server.url, vec![calls(vec![delete])]).await;
    let agent = host.agent().await.unwrap();
    let mut conversation = Conversation::new();
    conversation.push_user("Delete e.txt.");
    let paused = agent
        .run(&mut conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(paused.end, RunEnd::Paused, "{paused:?}");
    let asking = &paused.asking[0];
    assert_eq!(asking.tool, "confirm_delete");
    assert_eq!(asking.requests["confirm"].method, "elicitation/create");
    let saved = serde_json::to_string(&conversation).unwrap();
    host.shutdown().await;

    // The task waits upstream, asking; its id is in the saved run.
    let task = serde_json::from_str::<serde_json::Value>(&saved).unwrap();
    let task = find_key(&task, "task").expect("the task's id is kept with the run");
    let mut client = toolhost_tests::mcp::HttpClient::new(&server.url);
    let with_tasks = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        "clientInfo": { "name": "toolhost-tests", "version": "0" },
    });
    client.request("initialize", with_tasks).await;
    let state = client.request("tasks/get", json!({ "taskId": task })).await;
    assert_eq!(state["result"]["status"], "input_required", "{state}");

    // Another host takes the conversation up, answers, and resumes.
    let (model, host) = deleting_host(&server.url, vec![text("Deleted.")]).await;
    let agent = host.agent().await.unwrap();
    let mut conversation = Conversation::from_json(&saved).unwrap();
    let answer = json!({ "action": "accept", "content": { "confirm": true } });
    conversation
        .answer_input("c1", [("confirm".to_owned(), answer)].into())
        .unwrap();
    let done = agent
        .resume(&mut conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(done.text, "Deleted.", "{done:?}");
    assert_eq!(done.executions[0].output, "deleted e.txt", "{done:?}");
    // The model was asked once, by the resumed host, after the result.
    assert_eq!(model.requests().len(), 1);
    // The answer went to the task left upstream, which finished with it (a call made again
    // would have been a new task, and left this one asking).
    let state = client.request("tasks/get", json!({ "taskId": task })).await;
    assert_eq!(state["result"]["status"], "completed", "{state}");
    assert_eq!(
        state["result"]["result"]["content"][0]["text"], "deleted e.txt",
        "{state}"
    );
    host.shutdown().await;
}

/// The first string under `key` anywhere in `value`.
fn find_key(value: &serde_json::Value, key: &str) -> Option<String> {
    match value {
        serde_json::Value::Object(map) => map
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .or_else(|| map.values().find_map(|v| find_key(v, key))),
        serde_json::Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

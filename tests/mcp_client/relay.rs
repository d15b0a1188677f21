//! What an MCP server sends while one of its tools runs reaches whoever watches or drives the
//! call: progress and log messages its observer (within the host's rate bound), elicitation
//! and sampling requests its asker; roots are the directories its configuration grants.
//! server-everything (the reference server) and the fake server's `chatty` tool.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolhost::mcp::client::McpServerConfig;
use toolhost::sandbox::{CallObserver, LogLevel, Observer, Progress};
use toolhost::{Ask, AskError, Asker, CallContext, InputRequest, Toolbox};
use toolhost_tests::peers::peers;

use super::{PATIENCE, patient, toolbox};

/// What a call's observer saw: `done/total message` for progress, `level: line` for logs.
#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

impl Seen {
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl CallObserver for Seen {
    fn progress(&self, _tool: &str, progress: &Progress) {
        let message = progress.message.as_deref().unwrap_or("");
        let total = progress.total.map_or("?".to_owned(), |t| t.to_string());
        self.0
            .lock()
            .unwrap()
            .push(format!("{}/{total} {message}", progress.done));
    }

    fn log(&self, _tool: &str, level: LogLevel, message: &str) {
        self.0.lock().unwrap().push(format!("{level:?}: {message}"));
    }
}

/// An asker that answers every request with `answer` and remembers who asked what.
pub(crate) struct Answering {
    pub(crate) answer: Value,
    pub(crate) asked: Mutex<Vec<(String, InputRequest)>>,
}

impl Ask for Answering {
    fn ask<'a>(
        &'a self,
        asker: &'a str,
        request: &'a InputRequest,
    ) -> BoxFuture<'a, Result<Value, AskError>> {
        self.asked
            .lock()
            .unwrap()
            .push((asker.to_owned(), request.clone()));
        Box::pin(std::future::ready(Ok(self.answer.clone())))
    }
}

fn answering(answer: Value) -> Arc<Answering> {
    Arc::new(Answering {
        answer,
        asked: Mutex::new(Vec::new()),
    })
}

fn everything() -> McpServerConfig {
    patient(McpServerConfig::stdio(
        "everything",
        peers().everything_stdio(),
    ))
}

/// Waits until the tools server-everything registers after the handshake are listed.
async fn wait_for_tool(toolbox: &Toolbox, tool: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while toolbox.spec(tool).is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "`{tool}` never showed: {:?}",
            toolbox.names()
        );
        toolbox.refresh().await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_servers_progress_reaches_the_calls_observer() {
    let toolbox = toolbox(vec![everything()]).await;
    let seen = Arc::new(Seen::default());
    let context = CallContext {
        observer: Some(Observer(seen.clone())),
        ..CallContext::default()
    };
    let output = toolbox
        .call(
            "trigger-long-running-operation",
            r#"{"duration": 0.4, "steps": 4}"#,
            &context,
        )
        .await
        .unwrap();
    assert!(output.text.contains("Steps: 4"), "{}", output.text);
    assert_eq!(seen.all(), ["1/4 ", "2/4 ", "3/4 ", "4/4 "]);
    assert_eq!(output.reports.progress, 4, "{:?}", output.reports);
    assert_eq!(output.reports.passed_on, 4, "{:?}", output.reports);
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_bounded_and_each_concurrent_call_gets_its_own_progress() {
    let config = patient(McpServerConfig::stdio("fake", peers().fake_server(&[])));
    let toolbox = toolbox(vec![config]).await;
    let observed = || {
        let seen = Arc::new(Seen::default());
        let context = CallContext {
            observer: Some(Observer(seen.clone())),
            ..CallContext::default()
        };
        (seen, context)
    };
    // One call: its log lines too.
    let (seen, context) = observed();
    let output = toolbox
        .call("chatty", r#"{"label": "solo", "count": 3}"#, &context)
        .await
        .unwrap();
    assert_eq!(output.text, "solo");
    assert_eq!(
        seen.all(),
        [
            "Info: solo says info",
            "Warning: solo says warning",
            "1/3 solo",
            "2/3 solo",
            "3/3 solo"
        ]
    );
    assert_eq!(output.reports.log_lines, 2);

    // Two at once, 20 000 reports each: each sees only its own, a bounded few, and its last.
    let (seen_a, context_a) = observed();
    let (seen_b, context_b) = observed();
    let (a, b) = tokio::join!(
        toolbox.call("chatty", r#"{"label": "a", "count": 20000}"#, &context_a),
        toolbox.call("chatty", r#"{"label": "b", "count": 20000}"#, &context_b),
    );
    for (output, seen, label) in [(a, seen_a, "a"), (b, seen_b, "b")] {
        let output = output.unwrap();
        let progress: Vec<String> = seen
            .all()
            .into_iter()
            .filter(|line| line.contains('/'))
            .collect();
        assert!(
            progress
                .iter()
                .all(|line| line.ends_with(&format!(" {label}"))),
            "{label} saw another call's progress: {progress:?}"
        );
        assert_eq!(
            progress.first().map(String::as_str),
            Some(&*format!("1/20000 {label}"))
        );
        assert_eq!(
            progress.last().map(String::as_str),
            Some(&*format!("20000/20000 {label}"))
        );
        assert!(progress.len() < 200, "{} passed on", progress.len());
        assert_eq!(output.reports.progress, 20000, "{:?}", output.reports);
    }
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_reaches_the_calls_asker_and_its_answer_the_tool() {
    let toolbox = toolbox(vec![everything()]).await;
    wait_for_tool(&toolbox, "trigger-elicitation-request").await;
    let asker = answering(json!({ "action": "accept", "content": { "name": "Ada" } }));
    let context = CallContext {
        asker: Some(Asker(asker.clone())),
        ..CallContext::default()
    };
    let output = toolbox
        .call("trigger-elicitation-request", "{}", &context)
        .await
        .unwrap();
    assert!(output.text.contains("- Name: Ada"), "{}", output.text);
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let (who, request) = &asked[0];
    assert_eq!(
        who,
        "MCP server `everything` (tool `trigger-elicitation-request`)"
    );
    assert_eq!(request.method, "elicitation/create");
    assert_eq!(
        request.params["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(
        request.params["requestedSchema"]["required"],
        json!(["name"])
    );

    // Without an asker, the server hears why nobody answers, and so does the caller.
    let refused = toolbox
        .call("trigger-elicitation-request", "{}", &CallContext::default())
        .await;
    let message = match refused {
        Ok(output) => output.text,
        Err(error) => error.to_string(),
    };
    assert!(message.contains("nobody to ask"), "{message}");
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_and_roots_are_offered_only_when_granted() {
    // By default: neither, so the reference server does not even offer the tools that use them.
    let plain = toolbox(vec![everything()]).await;
    wait_for_tool(&plain, "trigger-elicitation-request").await;
    for tool in ["trigger-sampling-request", "get-roots-list"] {
        assert!(plain.spec(tool).is_none(), "{tool}: {:?}", plain.names());
    }
    plain.shutdown().await;

    let granted = tempfile::tempdir().unwrap();
    let mut config = everything();
    config.sampling = true;
    config.roots = vec![granted.path().to_owned()];
    let toolbox = toolbox(vec![config]).await;
    wait_for_tool(&toolbox, "get-roots-list").await;
    let roots = toolbox
        .call("get-roots-list", "{}", &CallContext::default())
        .await
        .unwrap();
    let uri = format!("URI: file://{}", granted.path().display());
    assert!(roots.text.contains(&uri), "{uri} in {}", roots.text);
    assert!(roots.text.contains("(1 total)"), "{}", roots.text);

    let model = answering(json!({
        "role": "assistant",
        "content": { "type": "text", "text": "Paris, of course." },
        "model": "the-user's-model",
    }));
    let context = CallContext {
        asker: Some(Asker(model.clone())),
        ..CallContext::default()
    };
    let sampled = toolbox
        .call(
            "trigger-sampling-request",
            r#"{"prompt": "The capital of France?"}"#,
            &context,
        )
        .await
        .unwrap();
    assert!(
        sampled.text.contains("Paris, of course."),
        "{}",
        sampled.text
    );
    let asked = model.asked.lock().unwrap().clone();
    assert_eq!(asked[0].1.method, "sampling/createMessage");
    assert_eq!(asked[0].1.params["maxTokens"], 100);
    toolbox.shutdown().await;
}

/// What a server may not ask, or asks malformed, never reaches the person: it gets a JSON-RPC
/// error that says why (and names the fix), and the call goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_server_may_not_ask_is_refused_before_anyone_is_asked() {
    let toolbox = toolbox(vec![patient(McpServerConfig::stdio(
        "fake",
        peers().fake_server(&[]),
    ))])
    .await;
    let asker = answering(json!({ "action": "accept", "content": { "name": "Ada" } }));
    let context = CallContext {
        asker: Some(Asker(asker.clone())),
        ..CallContext::default()
    };
    let ask =
        |method: &str, params: Value| json!({ "method": method, "params": params }).to_string();
    let sampling = ask(
        "sampling/createMessage",
        json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }], "maxTokens": 5 }),
    );
    let not_an_object = ask(
        "elicitation/create",
        json!({ "message": "Your name?", "requestedSchema": { "type": "string" } }),
    );
    let roots = ask("roots/list", json!({}));
    for (arguments, expected) in [
        (sampling, "sampling = true"),
        (not_an_object, "requestedSchema"),
        (roots, "`roots`"),
    ] {
        let output = toolbox.call("ask", &arguments, &context).await.unwrap();
        let answer: Value = serde_json::from_str(&output.text).unwrap();
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{arguments}: {answer}");
    }
    assert!(asker.asked.lock().unwrap().is_empty(), "nobody is asked");
    toolbox.shutdown().await;
}

/// A server that sends its question on the session's standalone stream (a request not tied
/// to the call) drops it when that stream is not open yet, as the TypeScript SDK does; this
/// one (tests/mcp-peers/late_stream_server.cjs) opens it a second late. The client waits for
/// the stream before its first request, so the question is heard and its answer reaches the
/// tool (before, the call waited for a question nobody heard until its time ran out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_on_a_stream_that_opens_late_is_still_heard() {
    use tokio::io::AsyncBufReadExt as _;

    let script = toolhost_tests::repo_root().join("tests/mcp-peers/late_stream_server.cjs");
    let mut server = tokio::process::Command::new("node")
        .arg(&script)
        .env(
            "NODE_PATH",
            toolhost_tests::peers::peers_dir().join("node_modules"),
        )
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
    let line = lines
        .next_line()
        .await
        .unwrap()
        .expect("the server says its port");
    let port = line
        .strip_prefix("listening on ")
        .expect("listening on PORT");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let toolbox = toolbox(vec![patient(McpServerConfig::http("late", &url))]).await;
    let asker = answering(json!({ "action": "accept", "content": { "name": "Ada" } }));
    let context = CallContext {
        asker: Some(Asker(asker.clone())),
        ..CallContext::default()
    };
    let output = toolbox.call("ask", "{}", &context).await.unwrap();
    assert!(output.text.contains(r#""name":"Ada""#), "{}", output.text);
    assert_eq!(asker.asked.lock().unwrap().len(), 1);
    toolbox.shutdown().await;
}

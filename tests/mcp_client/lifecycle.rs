//! A stdio server starts with the host and stops with it, whatever it started included; the
//! tools it adds at run time reach the model at its next turn.

use std::path::Path;

use toolhost::agent::{Agent, AgentOptions, Conversation, RunOptions};
use toolhost::llm::{HttpOptions, OpenAiProvider};
use toolhost::mcp::client::McpServerConfig;
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::peers::{eventually, is_gone, peers};

use super::bad::with_env;
use super::{PATIENCE, patient, toolbox};

/// The pids a fake server wrote to its log: its own and its grandchild's.
/// The pids of the fake server in use and of its grandchild: the last started (the first
/// process was asked `server/discover`, answered as a server of the dated revisions do, and
/// was stopped for one greeted with `initialize`).
pub async fn pids(log: &Path) -> (u32, u32) {
    let read = || std::fs::read_to_string(log).unwrap_or_default();
    let count = |what: &str| read().lines().filter(|l| l.starts_with(what)).count();
    let written = eventually(PATIENCE, || {
        count("grandchild ") > 0 && count("grandchild ") == count("started ")
    })
    .await;
    assert!(written, "the fake server logged its pids: {}", read());
    let pid = |what: &str| -> u32 {
        read()
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix(what))
            .and_then(|pid| pid.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{what}` in {}", read()))
    };
    (pid("started "), pid("grandchild "))
}

/// Every pid the fake server logged as `what` (`started `, `grandchild `).
fn all_pids(log: &Path, what: &str) -> Vec<u32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix(what)?.trim().parse().ok())
        .collect()
}

/// A fake server that starts a grandchild, logging both pids to `log`.
pub fn spawning(log: &Path) -> McpServerConfig {
    with_env(
        patient(McpServerConfig::stdio(
            "fake",
            peers().fake_server(&["--grandchild"]),
        )),
        "FAKE_LOG",
        log.to_str().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_down_stops_the_server_and_what_it_started() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let toolbox = toolbox(vec![spawning(log.path())]).await;
    let (server, grandchild) = pids(log.path()).await;
    assert!(!is_gone(server) && !is_gone(grandchild));
    toolbox.shutdown().await;
    assert!(
        eventually(PATIENCE, || is_gone(server) && is_gone(grandchild)).await,
        "server {server} or its child {grandchild} outlived the shutdown"
    );
    // Nor did the process asked `server/discover` first, nor its child.
    let every = [
        all_pids(log.path(), "started "),
        all_pids(log.path(), "grandchild "),
    ]
    .concat();
    assert_eq!(every.len(), 4, "{every:?}");
    assert!(every.iter().all(|&pid| is_gone(pid)), "{every:?}");
    let error = toolbox
        .call("echo", r#"{"text": "?"}"#, &Default::default())
        .await
        .unwrap_err();
    assert_error_chain_contains(&error, "stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_toolbox_kills_the_servers_process_group() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let toolbox = toolbox(vec![spawning(log.path())]).await;
    let (server, grandchild) = pids(log.path()).await;
    drop(toolbox);
    assert!(
        eventually(PATIENCE, || is_gone(server) && is_gone(grandchild)).await,
        "server {server} or its child {grandchild} outlived the toolbox"
    );
}

/// The model calls a tool that makes the server add another and send
/// `tools/list_changed`; the very next request offers the new tool, and it can be called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_during_a_turn_is_offered_at_the_next() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "add_tool", "{}")]),
            calls(vec![call("c2", "added", "{}")]),
            text("Done."),
        ],
    )
    .await;
    let toolbox = toolbox(vec![patient(McpServerConfig::stdio(
        "fake",
        peers().fake_server(&[]),
    ))])
    .await;
    assert!(toolbox.spec("added").is_none());
    let toolbox = std::sync::Arc::new(toolbox);
    let provider =
        OpenAiProvider::new(&model.base_url(), "scripted", None, HttpOptions::default()).unwrap();
    let agent = Agent::new(
        std::sync::Arc::new(provider),
        toolbox.clone(),
        AgentOptions::default(),
    );
    let mut conversation = Conversation::new();
    conversation.push_user("Add a tool and use it.");
    let result = agent
        .run(&mut conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(result.text, "Done.");
    let offered = |body: &serde_json::Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let bodies = model.bodies();
    assert!(!offered(&bodies[0]).contains(&"added".to_owned()));
    assert!(
        offered(&bodies[1]).contains(&"added".to_owned()),
        "{:?}",
        offered(&bodies[1])
    );
    let added = &result.executions[1];
    assert_eq!(added.name, "added");
    assert_eq!(added.output, "the added tool ran", "{added:?}");
    toolbox.shutdown().await;
}

/// A server of 2026-07-28 tells of changes to its tools only on a subscription: the host
/// holds one open, and lists the tools again when they change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_servers_tool_changes_arrive_on_a_subscription() {
    let config = patient(McpServerConfig::stdio(
        "changing",
        peers().changing_server(),
    ));
    let (server, toolbox) = super::server(config).await;
    assert_eq!(server.identity().unwrap().protocol_version, "2026-07-28");
    assert!(!toolbox.names().contains(&"added_1".to_owned()));
    toolbox
        .call("test_trigger_tool_change", "{}", &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let listed = eventually(PATIENCE, || toolbox.names().contains(&"added_1".to_owned())).await;
    assert!(listed, "{:?}", toolbox.names());
    let added = toolbox
        .call("added_1", r#"{"text": "hello"}"#, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(added.text.contains("hello"), "{added:?}");
    toolbox.shutdown().await;
}

//! Bad servers never take the host down or hang a run: one that crashes at start, one that
//! hangs on `tools/list`, one that answers malformed JSON-RPC, one that returns a 200 MB
//! result (bounded by `max_result`), one that dies mid-call (restarted once), one that is too
//! slow (cancelled). The fake server is tests/mcp-peers/fake_server.py.

use std::time::Duration;

use toolhost::mcp::client::McpServerConfig;
use toolhost::{CallContext, ErrorKind, LoadError, ToolOutput, Toolbox};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::peers::{eventually, peers};
use toolhost_tests::runtime;

use super::{PATIENCE, patient, server, toolbox};

fn fake(name: &str, args: &[&str]) -> McpServerConfig {
    patient(McpServerConfig::stdio(name, peers().fake_server(args)))
}

async fn call(
    toolbox: &Toolbox,
    tool: &str,
    arguments: &str,
) -> Result<ToolOutput, toolhost::CallError> {
    toolbox.call(tool, arguments, &CallContext::default()).await
}

async fn echo_works(toolbox: &Toolbox) {
    let output = call(toolbox, "echo", r#"{"text": "still here"}"#)
        .await
        .unwrap_or_else(|e| panic!("the server no longer answers: {e}"));
    assert_eq!(output.text, "still here");
}

async fn load(configs: Vec<McpServerConfig>) -> Result<Toolbox, LoadError> {
    Toolbox::builder(&runtime())
        .mcp_servers(configs)
        .build()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_at_start_fails_the_load_naming_it_and_why() {
    let error = load(vec![fake("db", &["--crash"]), fake("fine", &[])])
        .await
        .err()
        .expect("a required server that crashes fails the load");
    assert_error_chain_contains(&error, "MCP server `db`");
    assert_error_chain_contains(&error, "exited with status 3");
    // Its stderr.
    assert_error_chain_contains(&error, "fake: cannot open the database");

    let mut optional = fake("db", &["--crash"]);
    optional.required = false;
    let toolbox = load(vec![optional, fake("fine", &[])]).await.unwrap();
    let skipped = toolbox.skipped();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].name, "db");
    assert_error_chain_contains(&skipped[0].error, "MCP server `db`");
    echo_works(&toolbox).await;
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_lists_its_tools_is_given_up_on() {
    let mut hangs = fake("hangs", &["--hang-on-list"]);
    hangs.startup_timeout = Duration::from_millis(500);
    let error = load(vec![hangs.clone()])
        .await
        .err()
        .expect("the load fails");
    assert_error_chain_contains(&error, "MCP server `hangs`");
    // It names the setting.
    assert_error_chain_contains(&error, "startup_timeout");

    hangs.required = false;
    let toolbox = load(vec![hangs, fake("fine", &[])]).await.unwrap();
    assert_eq!(toolbox.skipped()[0].name, "hangs");
    echo_works(&toolbox).await;
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_answers_fail_their_call_and_the_server_goes_on() {
    let mut config = fake("fake", &[]);
    config.timeout = Duration::from_secs(1);
    let toolbox = toolbox(vec![config.clone()]).await;

    // An answer that names its request but is not JSON-RPC fails that call at once: not a
    // timeout, though the limit is short.
    let error = call(&toolbox, "malformed", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    assert_error_chain_contains(&error, "malformed");
    echo_works(&toolbox).await;

    // A result that is not a tool result.
    let error = call(&toolbox, "not_a_result", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    assert_error_chain_contains(&error, "not a tool result");
    echo_works(&toolbox).await;

    // A line that is not JSON at all names no request: that call runs into its timeout.
    let error = call(&toolbox, "garbage", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    echo_works(&toolbox).await;
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_mb_result_is_refused_by_max_result_and_not_kept() {
    let mut config = fake("fake", &[]);
    config.max_result = 1 << 20;
    let toolbox = toolbox(vec![config]).await;
    let error = call(&toolbox, "big", r#"{"bytes": 200000000}"#)
        .await
        .unwrap_err();
    let toolhost::CallError::ResultTooLarge { size, limit, .. } = &error else {
        panic!("{error}");
    };
    assert!(*size >= 200_000_000, "{error}");
    assert_eq!(*limit, 1 << 20);
    assert_error_chain_contains(&error, "max_result");
    echo_works(&toolbox).await;

    // A result within the limit arrives whole.
    let whole = call(&toolbox, "big", r#"{"bytes": 1000000}"#)
        .await
        .unwrap();
    assert_eq!(whole.text.len(), 1_000_000);
    // One just over it (its line within the transport's bound) is refused too.
    let error = call(&toolbox, "big", r#"{"bytes": 1100000}"#)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ResultTooLarge, "{error}");
    toolbox.shutdown().await;
}

/// Over Streamable HTTP, rmcp reads at most the transport's bound of an answer (4 x
/// `max_result` + 64 KiB): a JSON body over it is refused as too large, an event stream is
/// cut; either way the call fails at once and the next one works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_mb_answer_over_http_is_cut_off_too() {
    for mode in ["json", "sse"] {
        let server = peers().fake_http_server(mode).await;
        let mut config = patient(McpServerConfig::http("remote", &server.url));
        config.max_result = 1 << 20;
        let toolbox = toolbox(vec![config]).await;
        let error = call(&toolbox, "big", r#"{"bytes": 200000000}"#)
            .await
            .unwrap_err();
        match mode {
            "json" => assert_eq!(error.kind(), ErrorKind::ResultTooLarge, "{error}"),
            _ => {
                assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
                assert_error_chain_contains(&error, "max_result");
            }
        }
        echo_works(&toolbox).await;
        let whole = call(&toolbox, "big", r#"{"bytes": 1000000}"#)
            .await
            .unwrap();
        assert_eq!(whole.text.len(), 1_000_000, "{mode}");
        toolbox.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_is_restarted_once() {
    let (server, toolbox) = server(fake("fake", &[])).await;
    let first = server.pid().await.expect("a stdio server has a pid");

    let error = call(&toolbox, "die", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    assert_error_chain_contains(&error, "exited with status 7");
    // Its stderr.
    assert_error_chain_contains(&error, "fake: dying on purpose");
    assert_error_chain_contains(&error, "restarted for the next call");

    echo_works(&toolbox).await;
    let second = server.pid().await.expect("running again");
    assert_ne!(first, second, "a new process");

    let error = call(&toolbox, "die", "{}").await.unwrap_err();
    assert_error_chain_contains(&error, "restarted once already");
    let error = call(&toolbox, "echo", r#"{"text": "?"}"#)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    assert_error_chain_contains(&error, "not restarted again");
    assert!(
        error.model_message().contains("unavailable"),
        "{}",
        error.model_message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_times_out_is_cancelled_on_the_server() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut config = fake("fake", &[]);
    config.timeout = Duration::from_millis(300);
    let config = with_env(config, "FAKE_LOG", log.path().to_str().unwrap());
    let toolbox = toolbox(vec![config]).await;
    let error = call(&toolbox, "slow", r#"{"seconds": 600}"#)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    let cancelled = eventually(PATIENCE, || {
        std::fs::read_to_string(log.path()).is_ok_and(|text| text.contains("cancelled "))
    })
    .await;
    assert!(
        cancelled,
        "the server was sent notifications/cancelled: {}",
        std::fs::read_to_string(log.path()).unwrap_or_default()
    );
    echo_works(&toolbox).await;
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_of_every_kind_come_through() {
    let toolbox = toolbox(vec![fake("fake", &[])]).await;
    let image = call(&toolbox, "image", "{}").await.unwrap();
    assert_eq!(image.text, "a dot:");
    let first = image.images().next().map(|image| image.mime_type.as_str());
    assert_eq!(first, Some("image/png"));
    let structured = call(&toolbox, "structured", "{}").await.unwrap();
    assert_eq!(structured.text, r#"{"answer":42}"#, "the JSON once");
    let error = call(&toolbox, "failing", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ToolFailed);
    assert_eq!(
        error.model_message(),
        "the tool failed: the account is locked"
    );
    toolbox.shutdown().await;
}

/// `config` with the environment variable `name` set for the server.
pub fn with_env(config: McpServerConfig, name: &str, value: &str) -> McpServerConfig {
    config.env(toolhost::sandbox::EnvGrant::Set(name.into(), value.into()))
}

//! `@modelcontextprotocol/server-everything` (npm, the reference server), over stdio and over
//! Streamable HTTP: listing, calls, structured content, images, schema checks, the
//! environment a stdio server gets, a per-call timeout, and its `tools/list_changed`.

use std::collections::BTreeSet;

use serde_json::Value;
use toolhost::mcp::client::{INHERITED_ENV, McpServerConfig};
use toolhost::sandbox::EnvGrant;
use toolhost::{CallContext, ErrorKind, Toolbox};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::peers::peers;

use super::{PATIENCE, patient, toolbox};

/// `simulate-research-query` needs MCP tasks (a plain call fails by design): left out.
fn everything(config: McpServerConfig) -> McpServerConfig {
    let mut config = patient(config);
    config.options.exclude = BTreeSet::from(["simulate-research-query".to_owned()]);
    config
}

async fn call(toolbox: &Toolbox, tool: &str, arguments: &str) -> toolhost::ToolOutput {
    toolbox
        .call(tool, arguments, &CallContext::default())
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// What every transport must do with server-everything.
async fn the_reference_server_works(toolbox: &Toolbox) {
    let names = toolbox.names();
    for tool in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
    ] {
        assert!(
            names.contains(&tool.to_owned()),
            "{tool} is listed: {names:?}"
        );
    }
    let origin = toolbox.origin("echo").unwrap();
    assert!(!origin.is_sandboxed(), "{origin:?}");
    assert_eq!(origin.name(), "everything");

    assert_eq!(
        call(toolbox, "echo", r#"{"message": "hi"}"#).await.text,
        "Echo: hi"
    );
    assert_eq!(
        call(toolbox, "get-sum", r#"{"a": 2, "b": 40}"#).await.text,
        "The sum of 2 and 40 is 42."
    );

    // structuredContent is the result, as JSON, once.
    let weather = call(
        toolbox,
        "get-structured-content",
        r#"{"location": "Chicago"}"#,
    )
    .await;
    let structured = weather.structured.expect("structuredContent is kept");
    assert!(structured["temperature"].is_number(), "{structured}");
    assert_eq!(
        serde_json::from_str::<Value>(&weather.text).unwrap(),
        structured
    );
    assert!(
        toolbox
            .spec("get-structured-content")
            .unwrap()
            .output_schema
            .is_some()
    );

    // An image block is kept as an image, not pasted into the text.
    let image = call(toolbox, "get-tiny-image", "{}").await;
    let images: Vec<_> = image.images().collect();
    assert_eq!(images.len(), 1, "{image:?}");
    assert_eq!(images[0].mime_type, "image/png");
    assert!(images[0].data.starts_with("iVBORw0KGgo"), "a PNG");
    assert!(!image.text.contains("iVBORw0KGgo"), "{}", image.text);
    assert!(!image.text.is_empty(), "the text blocks around it stay");

    // The arguments are checked against the server's schema before the server sees them.
    let error = toolbox
        .call(
            "get-sum",
            r#"{"a": "two", "b": 40}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArguments, "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_stdio() {
    let peers = peers();
    let config = McpServerConfig::stdio("everything", peers.everything_stdio())
        .env(EnvGrant::Set("TOOLHOST_TEST_GIVEN".into(), "yes".into()));
    let toolbox = toolbox(vec![everything(config)]).await;
    the_reference_server_works(&toolbox).await;

    // A stdio server gets a few of the host's variables and those its `env` names, no more.
    let env = call(&toolbox, "get-env", "{}").await.text;
    let env: Value = serde_json::from_str(&env).unwrap_or_else(|e| panic!("{e}: {env}"));
    assert_eq!(env["TOOLHOST_TEST_GIVEN"], "yes", "{env}");
    assert!(env.get("PATH").is_some(), "PATH is passed: {env}");
    let unexpected: Vec<&String> = env
        .as_object()
        .unwrap()
        .keys()
        .filter(|name| {
            !INHERITED_ENV.contains(&name.as_str()) && name.as_str() != "TOOLHOST_TEST_GIVEN"
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "the host's other variables are not passed: {unexpected:?}"
    );
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http() {
    let peers = peers();
    let server = peers.everything_http().await;
    let config = McpServerConfig::http("everything", &server.url)
        .header("X-Toolhost-Test", "home is ${HOME}");
    let toolbox = toolbox(vec![everything(config)]).await;
    the_reference_server_works(&toolbox).await;
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_naming_an_unset_variable_fails_the_load_naming_it() {
    let config = McpServerConfig::http("remote", "http://127.0.0.1:9/mcp")
        .header("Authorization", "Bearer ${TOOLHOST_SURELY_UNSET_TOKEN}");
    let error = Toolbox::builder(&toolhost_tests::runtime())
        .mcp_server(config)
        .build()
        .await
        .err()
        .expect("the load fails");
    assert_error_chain_contains(&error, "MCP server `remote`");
    assert_error_chain_contains(&error, "TOOLHOST_SURELY_UNSET_TOKEN is not set");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_takes_too_long_times_out_and_the_next_one_works() {
    let peers = peers();
    let mut config = everything(McpServerConfig::stdio(
        "everything",
        peers.everything_stdio(),
    ));
    config.timeout = std::time::Duration::from_millis(500);
    let toolbox = toolbox(vec![config]).await;
    let error = toolbox
        .call(
            "trigger-long-running-operation",
            r#"{"duration": 30, "steps": 2}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert_eq!(
        call(&toolbox, "echo", r#"{"message": "still here"}"#)
            .await
            .text,
        "Echo: still here"
    );
    toolbox.shutdown().await;
}

/// server-everything registers more tools right after the handshake and says so with
/// `notifications/tools/list_changed`; the catalog must come to show them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_servers_list_change_reaches_the_catalog() {
    let peers = peers();
    let toolbox = toolbox(vec![patient(McpServerConfig::stdio(
        "everything",
        peers.everything_stdio(),
    ))])
    .await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        toolbox.refresh().await;
        if toolbox.spec("simulate-research-query").is_some() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tool it added never showed: {:?}",
            toolbox.names()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    toolbox.shutdown().await;
}

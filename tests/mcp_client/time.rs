//! `mcp-server-time` (PyPI, the Python SDK's reference time server) over stdio: structured
//! results, a tool error as a tool failure, prefixes and include lists.

use std::collections::BTreeSet;

use toolhost::mcp::client::McpServerConfig;
use toolhost::{CallContext, ErrorKind};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::peers::peers;

use super::{patient, toolbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_time_tells_the_time_in_tokyo() {
    let peers = peers();
    let toolbox = toolbox(vec![patient(McpServerConfig::stdio(
        "time",
        peers.time_server(),
    ))])
    .await;
    assert_eq!(toolbox.names(), ["get_current_time", "convert_time"]);

    let now = toolbox
        .call(
            "get_current_time",
            r#"{"timezone": "Asia/Tokyo"}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let structured = now.structured.clone().expect("structuredContent");
    assert_eq!(structured["timezone"], "Asia/Tokyo", "{now:?}");
    let datetime = structured["datetime"].as_str().unwrap();
    assert!(datetime.ends_with("+09:00"), "{datetime}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&now.text).unwrap(),
        structured,
        "the model reads the same JSON"
    );

    let converted = toolbox
        .call(
            "convert_time",
            r#"{"source_timezone": "Europe/Warsaw", "time": "12:00", "target_timezone": "Asia/Tokyo"}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let difference = &converted.structured.unwrap()["time_difference"];
    assert!(
        difference == "+8.0h" || difference == "+7.0h",
        "{difference}"
    );

    // `isError: true` is the tool's own failure, with its text, for the model to read.
    let error = toolbox
        .call(
            "get_current_time",
            r#"{"timezone": "Mars/Olympus"}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ToolFailed, "{error}");
    assert!(
        error.model_message().contains("Invalid timezone"),
        "{error}"
    );
    toolbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_and_an_include_list_apply_to_an_mcp_server() {
    let peers = peers();
    let mut config = patient(McpServerConfig::stdio("time", peers.time_server()));
    config.options.prefix = "time_".into();
    config.options.include = Some(BTreeSet::from(["get_current_time".to_owned()]));
    let toolbox = toolbox(vec![config]).await;
    assert_eq!(toolbox.names(), ["time_get_current_time"]);
    let now = toolbox
        .call(
            "time_get_current_time",
            r#"{"timezone": "UTC"}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(now.structured.unwrap()["timezone"], "UTC");
    toolbox.shutdown().await;

    let mut config = patient(McpServerConfig::stdio("time", peers.time_server()));
    config.options.include = Some(BTreeSet::from(["get_weather".to_owned()]));
    let error = toolhost::Toolbox::builder(&toolhost_tests::runtime())
        .mcp_server(config)
        .build()
        .await
        .err()
        .expect("a tools list naming a missing tool fails the load");
    assert_error_chain_contains(&error, "MCP server `time` has no tool `get_weather`");
}

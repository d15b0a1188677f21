//! toolhost's own `host mcp` as an MCP server: a toolhost loop calling another toolhost's
//! sandboxed tools.

use toolhost::CallContext;
use toolhost::mcp::client::McpServerConfig;
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::host_binary;

use super::{patient, toolbox};

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

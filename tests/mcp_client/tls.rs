//! An MCP server at an `https://` URL whose certificate a private CA signed (made by the
//! test): another toolhost's `host mcp --http` behind a TLS front. The host refuses it, naming
//! the setting that trusts it, until the CA is named in `TOOLHOST_CA_BUNDLE`; then its tools
//! are listed and called.

use std::path::Path;

use toolhost_tests::cli::{HostCommand, HostOutput, ManifestFile};
use toolhost_tests::mcp::HttpServer;
use toolhost_tests::tls::{PrivateCa, TlsFront};

/// `host ARGS` with `TOOLHOST_CA_BUNDLE` naming `bundle` (unset without one).
async fn host(args: &[&str], bundle: Option<&Path>) -> HostOutput {
    HostCommand::new(args[0])
        .args(&args[1..])
        .ca_bundle(bundle)
        .run()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_behind_a_private_ca_is_used_once_its_ca_is_named() {
    let inner = ManifestFile::calculator("");
    let server = HttpServer::start(&[inner.arg()], &[]).await;
    let ca = PrivateCa::new();
    let front = TlsFront::start(&ca, &server.authority).await;
    let manifest = ManifestFile::new(&format!(
        "[mcp_servers.remote]\nurl = \"{}/mcp\"\n",
        front.url()
    ));

    let refused = host(&["tools", manifest.arg()], None).await;
    assert!(!refused.success(), "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("the TLS certificate of `remote` is not trusted"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("TOOLHOST_CA_BUNDLE"),
        "the setting is named: {}",
        refused.stderr
    );

    let listed = host(&["tools", manifest.arg()], Some(ca.pem_file())).await;
    listed.assert_success();
    assert!(listed.stdout.contains("square_root"), "{}", listed.stdout);
    let called = host(
        &["call", manifest.arg(), "square_root", r#"{"x": 16}"#],
        Some(ca.pem_file()),
    )
    .await;
    called.assert_success();
    assert_eq!(called.stdout.trim(), r#"{"result":4.0}"#);
}

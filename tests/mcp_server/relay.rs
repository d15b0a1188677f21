//! `host mcp` serving the tools of an MCP server its manifest uses (server-everything), to the
//! Python SDK's client: the server's progress reaches the client with the client's own
//! progress token, and its elicitation reaches the client, whose answer reaches the tool. A
//! stateless (2026-07-28) request cannot relay an elicitation, and says so.

use serde_json::{Value, json};
use toolhost_tests::cli::ManifestFile;

use super::peers::python_client;

fn everything_manifest() -> ManifestFile {
    let everything = toolhost_tests::peers::peers().everything_stdio();
    ManifestFile::new(&format!(
        "[mcp_servers.everything]\ncommand = {everything:?}\n"
    ))
}

/// The texts of a printed result's content blocks, joined.
fn texts(printed: &Value) -> String {
    printed["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no result: {printed}"))
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn an_upstream_servers_progress_reaches_the_client_of_a_session() {
    let manifest = everything_manifest();
    let printed = python_client(
        &[
            "--mode",
            "legacy",
            "--call",
            "trigger-long-running-operation",
            "--args",
            r#"{"duration": 0.6, "steps": 3}"#,
        ],
        &[manifest.arg()],
    )
    .await;
    assert_eq!(printed["result"]["isError"], false, "{printed}");
    assert_eq!(
        printed["progress"],
        json!([
            { "progress": 1.0, "total": 3.0, "message": null },
            { "progress": 2.0, "total": 3.0, "message": null },
            { "progress": 3.0, "total": 3.0, "message": null },
        ]),
        "{printed}"
    );
}

#[tokio::test]
async fn an_upstream_elicitation_reaches_the_client_and_its_answer_the_tool() {
    let manifest = everything_manifest();
    let printed = python_client(
        &[
            "--mode",
            "legacy",
            "--elicit",
            r#"{"name": "Ada Lovelace", "check": true}"#,
            "--call",
            "trigger-elicitation-request",
        ],
        &[manifest.arg()],
    )
    .await;
    let elicitations = printed["elicitations"].as_array().unwrap();
    assert_eq!(elicitations.len(), 1, "{printed}");
    assert_eq!(
        elicitations[0]["message"],
        "Please provide inputs for the following fields:"
    );
    // The form as the server wrote it, titled enums and all.
    let schema = &elicitations[0]["requestedSchema"];
    assert_eq!(schema["required"], json!(["name"]), "{schema}");
    assert_eq!(
        schema["properties"]["titledSingleSelectEnum"]["oneOf"][1]["title"],
        "Green Lantern"
    );
    let text = texts(&printed);
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Agreed to terms: true"), "{text}");
}

#[tokio::test]
async fn a_stateless_request_cannot_relay_an_upstream_elicitation_and_says_so() {
    let manifest = everything_manifest();
    let printed = python_client(
        &[
            "--mode",
            "2026-07-28",
            "--elicit",
            r#"{"name": "Ada"}"#,
            "--call",
            "trigger-elicitation-request",
        ],
        &[manifest.arg()],
    )
    .await;
    assert_eq!(printed["protocolVersion"], "2026-07-28", "{printed}");
    assert_eq!(printed["elicitations"], json!([]), "{printed}");
    assert_eq!(printed["result"]["isError"], true, "{printed}");
    let text = texts(&printed);
    assert!(text.contains("stateless (2026-07-28) request"), "{text}");
}

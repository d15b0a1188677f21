//! What a session (revision 2025-11-25, on stdio) gets besides tools: a prompt that asks for
//! input, asked of the client by the server itself; and resource subscriptions, with
//! `notifications/resources/updated` after a call that may have changed a resource.

use serde_json::{Value, json};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::{CALCULATOR, MCP_CONFORMANCE};
use toolhost_tests::mcp::StdioServer;
use toolhost_tests::require_guests;

/// `initialize` with `capabilities`, and `notifications/initialized`.
async fn initialize(server: &mut StdioServer, capabilities: Value) -> Value {
    let answer = server
        .request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": { "name": "toolhost-tests", "version": "0" },
            }),
        )
        .await;
    server.notify("notifications/initialized", json!({})).await;
    answer["result"].clone()
}

#[tokio::test]
async fn in_a_session_the_server_asks_the_client_what_a_prompt_needs() {
    let mut server = StdioServer::spawn(&[MCP_CONFORMANCE]);
    initialize(&mut server, json!({ "elicitation": {} })).await;
    let id = server
        .start_request(
            "prompts/get",
            json!({ "name": "test_input_required_result_prompt" }),
        )
        .await;
    // The server's own request to the client comes first.
    let asked = server.next_message().await.unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(
        asked["params"]["message"],
        "What context should the prompt use?"
    );
    server
        .send(&json!({
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": { "action": "accept", "content": { "context": "from the session" } },
        }))
        .await;
    let answer = server.answer(&json!(id)).await;
    assert_eq!(
        answer["result"]["messages"][0]["content"]["text"], "Use this context: from the session",
        "{answer}"
    );

    // A client without elicitation is told which capability the prompt needs.
    let mut unable = StdioServer::start(&[MCP_CONFORMANCE]).await;
    let refused = unable
        .request(
            "prompts/get",
            json!({ "name": "test_input_required_result_prompt" }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

/// The conformance guest (resources; `test_simple_text` served as writing, by the manifest)
/// and the calculator (no resources, its tools writing too).
fn manifest() -> ManifestFile {
    require_guests();
    ManifestFile::new(&format!(
        r#"
[components.conformance]
path = {MCP_CONFORMANCE:?}

[components.calculator]
path = {CALCULATOR:?}

[tools.test_simple_text]
annotations = {{ read_only = false }}

[tools.add]
annotations = {{ read_only = false }}
"#
    ))
}

/// The URIs of the `notifications/resources/updated` received so far.
fn updated(server: &StdioServer) -> Vec<String> {
    server
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/resources/updated")
        .map(|n| n["params"]["uri"].as_str().unwrap().to_owned())
        .collect()
}

/// Calls `tool` and then pings, so that any notification the call caused has arrived.
async fn call_and_settle(server: &mut StdioServer, tool: &str, arguments: Value) {
    let answer = server.call(tool, arguments).await;
    assert!(answer["result"]["isError"] != json!(true), "{answer}");
    server.request("ping", json!({})).await;
}

#[tokio::test]
async fn a_subscriber_hears_of_calls_that_may_change_its_resource_and_of_no_others() {
    let manifest = manifest();
    let mut server = StdioServer::spawn(&[manifest.arg()]);
    let result = initialize(&mut server, json!({})).await;
    assert_eq!(
        result["capabilities"]["resources"]["subscribe"], true,
        "{result}"
    );
    for uri in ["test://watched-resource", "test://template/7/data"] {
        let answer = server
            .request("resources/subscribe", json!({ "uri": uri }))
            .await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    // A URI that is no resource is refused, naming it.
    let unknown = server
        .request("resources/subscribe", json!({ "uri": "test://nothing" }))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(unknown["error"]["data"]["uri"], "test://nothing");

    // A read-only tool of the component, and a writing tool of another: nothing.
    call_and_settle(&mut server, "test_image_content", json!({})).await;
    call_and_settle(&mut server, "add", json!({ "a": 1, "b": 2 })).await;
    assert_eq!(updated(&server), Vec::<String>::new());

    // A writing tool of the component: each subscribed resource, once.
    call_and_settle(&mut server, "test_simple_text", json!({})).await;
    assert_eq!(
        updated(&server),
        ["test://template/7/data", "test://watched-resource"]
    );

    // Unsubscribed: no more of that one.
    let answer = server
        .request(
            "resources/unsubscribe",
            json!({ "uri": "test://watched-resource" }),
        )
        .await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    call_and_settle(&mut server, "test_simple_text", json!({})).await;
    assert_eq!(
        updated(&server),
        [
            "test://template/7/data",
            "test://watched-resource",
            "test://template/7/data"
        ]
    );
}

#[tokio::test]
async fn a_session_may_hold_a_thousand_subscriptions_and_is_told_beyond() {
    let mut server = StdioServer::start(&[MCP_CONFORMANCE]).await;
    for id in 0..1000 {
        let uri = format!("test://template/{id}/data");
        let answer = server
            .request("resources/subscribe", json!({ "uri": uri }))
            .await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    let again = server
        .request(
            "resources/subscribe",
            json!({ "uri": "test://template/0/data" }),
        )
        .await;
    assert_eq!(
        again["result"],
        json!({}),
        "subscribing again is no new one"
    );
    let beyond = server
        .request(
            "resources/subscribe",
            json!({ "uri": "test://watched-resource" }),
        )
        .await;
    assert_eq!(beyond["error"]["code"], -32602, "{beyond}");
    assert!(
        beyond["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unsubscribe from one first"),
        "{beyond}"
    );
}

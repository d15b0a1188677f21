//! What each caller of `host mcp --http` may do, end to end: the `host` binary taking real
//! access tokens (signed by an issuer this test runs on 127.0.0.1) with `[[mcp.access]]` rules,
//! the example `files` component writing each caller's notes into a `{sub}` directory (and
//! reading them back as resources, from the same directory), sessions bound to their caller,
//! `subscriptions/listen` offering only what the caller may read, and the audit log naming
//! the caller of every call.

use serde_json::{Value, json};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::FILES;
use toolhost_tests::issuer::{RESOURCE, SigningKey, TestIssuer};
use toolhost_tests::mcp::{HttpClient, HttpServer};
use toolhost_tests::require_guests;

/// The manifest docs/manifest.md shows, with the issuer, an audit log and a notes directory
/// in `dir`.
fn manifest(issuer: &TestIssuer) -> ManifestFile {
    require_guests();
    ManifestFile::in_dir(|dir| {
        std::fs::create_dir(dir.join("notes")).unwrap();
        format!(
            r#"
[components.files]
path = {FILES:?}
grants.dirs = [
  {{ host = "notes/{{sub}}", guest = "/notes", write = true }},
  {{ host = "notes/{{sub}}", guest = "/data" }},
]

[mcp.auth]
issuer = {issuer:?}
resource = {RESOURCE:?}
scopes = ["mcp:tools"]

[[mcp.access]]
scopes = ["notes"]
tools = ["write_note", "list_files"]
resources = ["note://{{title}}"]

[[mcp.access]]
claims = {{ groups = "admins" }}
tools = ["*"]

[audit]
path = "audit.jsonl"
"#,
            issuer = issuer.url()
        )
    })
}

/// A client of `server` with a session, as the caller `token` names.
async fn client(server: &HttpServer, token: &str) -> HttpClient {
    let mut client = HttpClient::new(&server.url);
    client
        .headers
        .push(("authorization".into(), format!("Bearer {token}")));
    client.initialize().await;
    client
}

async fn tool_names(client: &mut HttpClient) -> Vec<String> {
    let answer = client.request("tools/list", json!({})).await;
    let tools = answer["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut names: Vec<String> = (tools.iter())
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn callers_see_their_tools_keep_their_notes_and_sessions_to_themselves() {
    let key = SigningKey::new("k1");
    let issuer = TestIssuer::start(&[&key]).await;
    let manifest = manifest(&issuer);
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    let token = |sub: &str, scope: &str, groups: Value| {
        key.sign(&issuer.claims(|claims| {
            claims["sub"] = json!(sub);
            claims["scope"] = json!(scope);
            claims["groups"] = groups;
        }))
    };
    let alice_token = token("alice", "mcp:tools notes", json!([]));
    let mut alice = client(&server, &alice_token).await;
    let mut bob = client(&server, &token("bob", "mcp:tools notes", json!([]))).await;
    let mut eve = client(&server, &token("eve", "mcp:tools", json!(["staff"]))).await;
    let mut root = client(&server, &token("root", "mcp:tools", json!(["admins"]))).await;

    assert_eq!(tool_names(&mut alice).await, ["list_files", "write_note"]);
    assert_eq!(
        tool_names(&mut root).await,
        ["list_files", "read_file", "write_note"]
    );
    assert!(tool_names(&mut eve).await.is_empty());

    // A tool eve may not use is, for her, a tool there is not.
    let hidden = eve.call("read_file", json!({ "path": "/data/x" })).await;
    let missing = eve.call("read_filf", json!({ "path": "/data/x" })).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    assert_eq!(
        hidden["error"]["message"]
            .as_str()
            .map(|m| m.replace("read_file", "read_filf")),
        missing["error"]["message"].as_str().map(str::to_owned),
    );

    // One notes tool, two callers, two directories.
    let note = json!({ "title": "groceries", "text": "milk, eggs" });
    let written = alice.call("write_note", note).await;
    assert!(written["result"]["isError"] != json!(true), "{written}");
    let list = json!({ "path": "/data" });
    let alices = alice.call("list_files", list.clone()).await;
    assert!(crate::text(&alices).contains("groceries.md"), "{alices}");
    let bobs = bob.call("list_files", list).await;
    assert_eq!(crate::text(&bobs), r#"{"result":[]}"#, "{bobs}");
    let dir = manifest.path().parent().unwrap().join("notes");
    assert!(dir.join("alice").join("groceries.md").is_file());

    // Bob with alice's session id: no such session.
    bob.session.clone_from(&alice.session);
    let (_, message) = bob.message("tools/list", json!({}));
    let response = bob.post(&message).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 404);

    // The audit log names each call's caller.
    let audit =
        std::fs::read_to_string(manifest.path().parent().unwrap().join("audit.jsonl")).unwrap();
    let records: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let write = records
        .iter()
        .find(|r| r["tool"] == "write_note")
        .expect("the write is recorded");
    assert_eq!(write["caller"]["subject"], "alice", "{write}");
    assert_eq!(write["caller"]["scopes"], json!(["mcp:tools", "notes"]));
    assert_eq!(write["caller"]["client_id"], "app");
    let refused = records
        .iter()
        .find(|r| r["tool"] == "read_file")
        .expect("the refused call is recorded");
    assert_eq!(refused["outcome"], "unknown_tool");
    assert_eq!(refused["caller"]["subject"], "eve");
    // ... and never the token: its signature is nowhere in the log.
    let signature = alice_token.rsplit('.').next().unwrap();
    assert!(!audit.contains(signature), "the audit log holds a token");
}

/// A `subscriptions/listen` on the stateless revision as the caller `token` names, for the
/// resources `uris`: the acknowledgment's accepted filter.
async fn listen_accepts(server: &HttpServer, token: &str, uris: &[&str]) -> Value {
    let params = json!({
        "notifications": { "resourceSubscriptions": uris },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    });
    let body =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params });
    let mut stream = toolhost_tests::http_client()
        .build()
        .unwrap()
        .post(&server.url)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert!(stream.status().is_success(), "{}", stream.status());
    let mut buffer = String::new();
    let read = async {
        loop {
            if let Some(data) = (buffer.lines())
                .filter_map(|line| line.strip_prefix("data:"))
                .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            {
                return data;
            }
            let chunk = stream
                .chunk()
                .await
                .unwrap()
                .expect("the stream stays open");
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    };
    let ack = tokio::time::timeout(toolhost_tests::mcp::HANG, read)
        .await
        .expect("an acknowledgment");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    ack["params"]["notifications"].clone()
}

#[tokio::test]
async fn resources_and_listen_streams_follow_the_callers_rules_and_directories() {
    let key = SigningKey::new("k1");
    let issuer = TestIssuer::start(&[&key]).await;
    let manifest = manifest(&issuer);
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    let token = |sub: &str, scope: &str| {
        key.sign(&issuer.claims(|claims| {
            claims["sub"] = json!(sub);
            claims["scope"] = json!(scope);
        }))
    };
    let (alice_token, eve_token) = (token("alice", "mcp:tools notes"), token("eve", "mcp:tools"));
    let mut alice = client(&server, &alice_token).await;
    let mut bob = client(&server, &token("bob", "mcp:tools notes")).await;
    let mut eve = client(&server, &eve_token).await;
    let note = json!({ "title": "groceries", "text": "milk, eggs" });
    let written = alice.call("write_note", note).await;
    assert!(written["result"]["isError"] != json!(true), "{written}");

    // The note, read as a resource, comes from its writer's own directory: bob has none.
    let read = |uri: &str| json!({ "uri": uri });
    let alices = alice
        .request("resources/read", read("note://groceries"))
        .await;
    let text = alices["result"]["contents"][0]["text"].as_str();
    assert!(text.is_some_and(|t| t.contains("milk, eggs")), "{alices}");
    let bobs = bob
        .request("resources/read", read("note://groceries"))
        .await;
    assert!(bobs.get("result").is_none(), "{bobs}");
    assert!(bobs.to_string().contains("no note titled"), "{bobs}");
    assert!(!bobs.to_string().contains("milk"), "{bobs}");
    // A caller whose rules give it no resources: the note is as one there is not.
    let hidden = eve
        .request("resources/read", read("note://groceries"))
        .await;
    let missing = eve
        .request("resources/read", read("nothing://groceries"))
        .await;
    assert!(hidden.get("error").is_some(), "{hidden}");
    assert_eq!(
        hidden["error"].to_string().replace("note://", "nothing://"),
        missing["error"].to_string()
    );
    let listed = eve.request("resources/templates/list", json!({})).await;
    assert!(!listed.to_string().contains("note://"), "{listed}");
    // And so for a subscription: alice's is taken, eve's refused as one to nothing.
    let subscribed = alice
        .request("resources/subscribe", read("note://groceries"))
        .await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");
    let hidden = eve
        .request("resources/subscribe", read("note://groceries"))
        .await;
    let missing = eve
        .request("resources/subscribe", read("nothing://groceries"))
        .await;
    assert!(hidden.get("error").is_some(), "{hidden}");
    assert_eq!(
        hidden["error"].to_string().replace("note://", "nothing://"),
        missing["error"].to_string()
    );

    // A listen stream is accepted only the resources its caller may read; the others are
    // left out as unknown ones are.
    let wanted = ["note://groceries", "nothing://x"];
    let alices = listen_accepts(&server, &alice_token, &wanted).await;
    assert_eq!(
        alices["resourceSubscriptions"],
        json!(["note://groceries"]),
        "{alices}"
    );
    let eves = listen_accepts(&server, &eve_token, &wanted).await;
    assert!(eves.get("resourceSubscriptions").is_none(), "{eves}");
}

//! `host mcp` given what JSON-RPC allows and a careless client sends (issue 37): a request id
//! reused while its request is in flight, ids past the signed 64-bit range, bodies with a key
//! given twice and notifications nobody can read. Each gets an answer a client can match to
//! what it sent, on stdio and over HTTP alike; nothing is dropped silently.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::mcp::{HttpServer, StdioServer, messages};

use super::{test_manifest, text};

/// Far more than any answer here takes.
const WAIT: Duration = Duration::from_secs(30);

/// The next message on `server`'s stdout that is not a notification.
async fn next_answer(server: &mut StdioServer) -> Value {
    loop {
        let message = tokio::time::timeout(WAIT, server.next_message())
            .await
            .expect("an answer comes")
            .expect("stdout is open");
        if message.get("id").is_some() {
            return message;
        }
    }
}

#[tokio::test]
async fn stdio_a_request_whose_id_is_in_flight_is_answered_with_an_error_naming_it() {
    let manifest = test_manifest();
    let mut server = StdioServer::start(&[manifest.arg()]).await;
    // A call that runs until it is cancelled, under id 77; then two more requests under the
    // same id: a call (which a session serves on its direct path) and a ping (served by
    // rmcp). Each is answered, neither is served.
    let spin = json!({ "jsonrpc": "2.0", "id": 77, "method": "tools/call",
                       "params": { "name": "spin", "arguments": {} } });
    server.send(&spin).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let call = json!({ "jsonrpc": "2.0", "id": 77, "method": "tools/call",
                       "params": { "name": "add", "arguments": { "a": 1, "b": 2 } } });
    server.send(&call).await;
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 77, "method": "ping" }))
        .await;
    for _ in 0..2 {
        let answer = next_answer(&mut server).await;
        assert_eq!(answer["id"], 77, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("request id 77 is already in flight"),
            "{message}"
        );
    }
    // Once the first is over (cancelled: it gets no answer), its id may be used again.
    server
        .notify(
            "notifications/cancelled",
            json!({ "requestId": 77, "reason": "test" }),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.send(&call).await;
    let answer = next_answer(&mut server).await;
    assert_eq!(answer["id"], 77, "{answer}");
    assert_eq!(text(&answer), r#"{"result":3.0}"#, "{answer}");
}

#[tokio::test]
async fn ids_past_the_signed_64_bit_range_are_echoed_on_stdio_and_over_http() {
    const ID: &str = "18446744073709551615";
    let line = format!(r#"{{"jsonrpc":"2.0","id":{ID},"method":"ping"}}"#);

    let mut stdio = StdioServer::start(&[CALCULATOR]).await;
    stdio.write_line(line.as_bytes()).await;
    let answer = next_answer(&mut stdio).await;
    assert_eq!(answer["id"], json!(u64::MAX), "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("the id {ID} is outside")),
        "{message}"
    );

    let http = HttpServer::start(&[CALCULATOR], &[]).await;
    let client = http.client().await;
    let response = raw_post(&client, line).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let body = response.text().await.unwrap();
    assert!(body.contains(&format!(r#""id":{ID}"#)), "{body}");
    assert!(body.contains(&format!("the id {ID} is outside")), "{body}");
}

/// A POST of `body` as it is, in `client`'s session.
fn raw_post(client: &toolhost_tests::mcp::HttpClient, body: String) -> reqwest::RequestBuilder {
    client
        .http
        .post(&client.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", client.session.as_deref().unwrap())
        .header("mcp-protocol-version", "2025-11-25")
        .body(body)
}

#[tokio::test]
async fn http_answers_every_body_as_stdio_does_never_with_a_bare_415() {
    let http = HttpServer::start(&[CALCULATOR], &[]).await;
    let client = http.client().await;
    // A key given twice: JSON allows it (the last one counts), rmcp's reader does not.
    let twice = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","id":6,
        "params":{"name":"add","arguments":{"a":1,"b":2}}}"#;
    let response = raw_post(&client, twice.to_owned()).send().await.unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    let answer = messages(&body)
        .into_iter()
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {body}"));
    assert_eq!(answer["id"], 6, "{answer}");
    assert_eq!(text(&answer), r#"{"result":3.0}"#, "{answer}");
    // The same line on stdio gets the same answer.
    let mut stdio = StdioServer::start(&[CALCULATOR]).await;
    stdio.write_line(twice.replace('\n', "").as_bytes()).await;
    let answer = next_answer(&mut stdio).await;
    assert_eq!(answer["id"], 6, "{answer}");
    assert_eq!(text(&answer), r#"{"result":3.0}"#, "{answer}");

    // A notification whose params rmcp cannot read gets no answer, as on stdio: 202, no body.
    let notification = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#;
    let response = raw_post(&client, notification.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    assert_eq!(response.text().await.unwrap(), "");
}

#[tokio::test]
async fn http_sessions_that_expired_take_no_room_from_new_ones() {
    // The cap counts the sessions kept: once two have expired, two more fit.
    let server = HttpServer::start(
        &[
            CALCULATOR,
            "--max-sessions",
            "2",
            "--session-idle-timeout",
            "1s",
        ],
        &[],
    )
    .await;
    for round in 0..3 {
        for _ in 0..2 {
            let mut client = server.client().await;
            let answer = client.call("add", json!({ "a": 1, "b": 2 })).await;
            assert_eq!(text(&answer), r#"{"result":3.0}"#, "round {round}");
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

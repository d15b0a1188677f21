//! `host mcp` under abuse, as an attacker or a careless client would treat it (issue 26,
//! findings 1-7): bodies and headers that never end, too many connections and sessions, a
//! stdio client that writes and never reads, ids and params that are not what JSON-RPC says,
//! text echoed back, the exit status on SIGTERM, and a first start with an empty compile
//! cache. Every peer here is real: raw TCP or reqwest over 127.0.0.1, pipes to the `host`
//! binary.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::mcp::{HttpClient, HttpServer, StdioServer, host_command, signal};

/// Far more than any limit a test sets: what "never" means here.
const NEVER: Duration = Duration::from_secs(15);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

/// Sends `head` (the request line and headers, without the blank line) and `body` on a new
/// connection, and returns the status line and headers of what comes back within `wait`, or
/// `None` when nothing did (or the connection closed without an answer).
async fn raw_request(authority: &str, head: &str, body: &[u8], wait: Duration) -> Option<String> {
    let mut stream = TcpStream::connect(authority).await.unwrap();
    stream
        .write_all(format!("{head}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    stream.write_all(body).await.unwrap();
    read_answer(&mut stream, wait).await
}

/// What the server answers on `stream` within `wait`.
async fn read_answer(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let read = tokio::time::timeout(wait, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
            }
            if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                return;
            }
        }
    })
    .await;
    let _ = read;
    (!answer.is_empty()).then(|| String::from_utf8_lossy(&answer).into_owned())
}

fn post_head(authority: &str, length: u64) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {length}"
    )
}

#[tokio::test]
async fn http_a_declared_body_over_the_limit_is_refused_at_once() {
    let server = HttpServer::start(&[CALCULATOR], &[]).await;
    let started = Instant::now();
    // 100 GiB declared, 10 bytes sent: the limit is 4 MiB.
    let answer = raw_request(
        &server.authority,
        &post_head(&server.authority, 107_374_182_400),
        b"0123456789",
        NEVER,
    )
    .await;
    let answer = answer.expect("no answer to a body declared over --max-request");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the 413 took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn http_a_request_that_never_ends_is_cut_off_after_the_read_timeout() {
    let server = HttpServer::start(&[CALCULATOR, "--read-timeout", "1s"], &[]).await;
    // A body that never finishes: 100 bytes declared, 10 sent.
    let started = Instant::now();
    let answer = raw_request(
        &server.authority,
        &post_head(&server.authority, 100),
        b"0123456789",
        NEVER,
    )
    .await;
    let answer = answer.expect("no answer to a body that never finished");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );

    // Headers that never finish: the connection is closed.
    let started = Instant::now();
    let mut stream = TcpStream::connect(&server.authority).await.unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let closed = tokio::time::timeout(NEVER, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "a connection with unfinished headers stayed open"
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn http_connections_over_the_cap_are_refused_at_once_and_health_still_answers() {
    let server = HttpServer::start(&[CALCULATOR, "--max-connections", "4"], &[]).await;
    // Four connections that send half their headers and wait.
    let mut slow = Vec::new();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(&server.authority).await.unwrap();
        stream.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
        slow.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let body = INITIALIZE.as_bytes();
    let started = Instant::now();
    let refused = raw_request(
        &server.authority,
        &post_head(&server.authority, body.len() as u64),
        body,
        NEVER,
    )
    .await
    .expect("no answer over the connection cap");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    let health = raw_request(
        &server.authority,
        &format!("GET /health HTTP/1.1\r\nHost: {}", server.authority),
        b"",
        NEVER,
    )
    .await
    .expect("/health did not answer over the connection cap");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    // Once they are gone, calls are served again.
    drop(slow);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut client = HttpClient::new(&server.url);
    client.initialize().await;
}

/// `host mcp ARGS` on stdio, with pipes the test holds as it likes (it may never read).
fn stdio_child(args: &[&str]) -> tokio::process::Child {
    host_command()
        .arg("mcp")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("host mcp starts")
}

/// `count` `tools/call` lines of `add`, ids from 1000.
fn call_lines(count: usize) -> Vec<u8> {
    let mut lines = Vec::new();
    lines.extend_from_slice(INITIALIZE.as_bytes());
    lines.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for id in 1000..1000 + count {
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": { "name": "add", "arguments": { "a": 1, "b": 2 } } });
        lines.extend_from_slice(line.to_string().as_bytes());
        lines.push(b'\n');
    }
    lines
}

/// The resident memory of process `pid`, in KiB.
pub(crate) fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn stdio_a_client_that_does_not_read_makes_the_server_stop_reading() {
    let mut child = stdio_child(&[CALCULATOR, "--max-pending", "32"]);
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let count = 20_000;
    let lines = call_lines(count);
    let total = lines.len();
    // The server takes what it reads; what it does not read stays with the writer.
    let (sent_tx, sent_rx) = tokio::sync::watch::channel(0usize);
    let writer = tokio::spawn(async move {
        for chunk in lines.chunks(1024) {
            stdin.write_all(chunk).await.unwrap();
            sent_tx.send_modify(|sent| *sent += chunk.len());
        }
        stdin
    });
    tokio::time::sleep(Duration::from_secs(8)).await;
    let sent = *sent_rx.borrow();
    let resident = resident_kib(pid);
    eprintln!("after 8 s without reading: {sent} of {total} bytes taken, {resident} KiB resident");
    // 32 answers waiting, the reader's 64 KiB and the pipe's 64 KiB: far from 20,000 calls.
    assert!(
        sent < total / 4,
        "the server read {sent} of {total} bytes while no answer was read"
    );
    // Reading resumes it: every call is answered.
    let mut lines = BufReader::new(stdout).lines();
    let mut answered = 0;
    let reading = tokio::time::timeout(Duration::from_secs(240), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"].as_u64().is_some_and(|id| id >= 1000) {
                assert_eq!(message["result"]["content"][0]["text"], r#"{"result":3.0}"#);
                answered += 1;
                if answered == count {
                    return;
                }
            }
        }
    })
    .await;
    assert!(reading.is_ok(), "only {answered} of {count} calls answered");
    drop(writer.await.unwrap());
    let _ = child.wait().await;
}

#[tokio::test]
async fn stdio_a_client_that_closes_stdin_with_answers_unread_sees_the_server_exit_in_5s() {
    let mut child = stdio_child(&[CALCULATOR]);
    let mut stdin = child.stdin.take().unwrap();
    // Held, never read: the server's writes block.
    let _stdout = child.stdout.take().unwrap();
    let lines = call_lines(20_000);
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&lines).await;
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Closes stdin, whether or not everything was written.
    writer.abort();
    let _ = writer.await;
    let closed = Instant::now();
    let exited = tokio::time::timeout(NEVER, child.wait()).await;
    assert!(
        exited.is_ok(),
        "the server still ran {NEVER:?} after its client closed stdin"
    );
    assert!(
        closed.elapsed() < Duration::from_secs(8),
        "the server took {:?} to exit after stdin closed (5 s of grace)",
        closed.elapsed()
    );
}

/// The next message on `server`'s stdout within `wait`, or `None`.
async fn message_within(server: &mut StdioServer, wait: Duration) -> Option<Value> {
    tokio::time::timeout(wait, server.next_message())
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn stdio_a_request_id_that_is_not_an_integer_or_string_is_answered_invalid_request() {
    let mut server = StdioServer::start(&[CALCULATOR]).await;
    // (An integer past the signed 64-bit range is echoed: see `bounds`.)
    for id in ["1.5", "true", "{}", "[1]"] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        server.write_line(line.as_bytes()).await;
        let answer = message_within(&mut server, Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("no answer to a request with id {id}"));
        assert_eq!(answer["error"]["code"], -32600, "id {id}: {answer}");
        assert_eq!(answer.get("id"), Some(&Value::Null), "id {id}: {answer}");
    }
    // The session goes on.
    let pong = server.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
}

#[tokio::test]
async fn malformed_params_are_invalid_params_and_invalid_requests_carry_a_null_id() {
    let mut server = StdioServer::start(&[CALCULATOR]).await;
    let malformed = [
        json!({ "method": "tools/call", "params": { "name": "add", "arguments": "x" } }),
        json!({ "method": "tools/call", "params": { "name": "add", "arguments": [1, 2] } }),
        json!({ "method": "tools/call", "params": { "name": 5 } }),
        json!({ "method": "tools/call" }),
        json!({ "method": "initialize", "params": { "protocolVersion": 5 } }),
        json!({ "method": "logging/setLevel", "params": { "level": "loud" } }),
    ];
    for (id, request) in malformed.iter().enumerate() {
        let mut request = request.clone();
        request["jsonrpc"] = json!("2.0");
        request["id"] = json!(id);
        server.send(&request).await;
        let answer = server.answer(&json!(id)).await;
        assert_eq!(answer["error"]["code"], -32602, "{request}: {answer}");
    }
    // Not JSON: a parse error, with `"id": null`.
    server.write_line(b"{not json").await;
    let answer = server.next_message().await.unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer.get("id"), Some(&Value::Null), "{answer}");
    // JSON, but not JSON-RPC: an invalid request, with `"id": null`.
    server.write_line(br#"{"jsonrpc":"2.0","method":5}"#).await;
    let answer = server.next_message().await.unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer.get("id"), Some(&Value::Null), "{answer}");

    // Over HTTP, the same: a JSON-RPC error in a JSON body.
    let http = HttpServer::start(&[CALCULATOR], &[]).await;
    let mut client = HttpClient::new(&http.url);
    client.initialize().await;
    let invalid = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": "x" }),
        json!({ "jsonrpc": "1.0", "id": 1, "method": "ping" }),
        json!({ "jsonrpc": "2.0", "id": null, "method": "ping" }),
        json!([{ "jsonrpc": "2.0", "id": 1, "method": "ping" }]),
    ];
    for body in &invalid {
        let response = client.post(body).send().await.unwrap();
        let status = response.status();
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        let text = response.text().await.unwrap();
        assert_eq!(status, 400, "{body}: {text}");
        assert!(
            kind.starts_with("application/json"),
            "{body}: {kind}: {text}"
        );
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{body}: {answer}");
        assert!(answer.get("id").is_some(), "{body}: {answer}");
    }
    let (_, call) = client.message("tools/call", json!({ "name": "add", "arguments": "x" }));
    let response = client.post(&call).send().await.unwrap();
    let text = response.text().await.unwrap();
    let answer = toolhost_tests::mcp::messages(&text)
        .into_iter()
        .find(|m| m.get("error").is_some())
        .unwrap_or_else(|| panic!("no error in {text}"));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

#[tokio::test]
async fn http_sessions_are_capped_expire_and_an_unknown_one_is_404() {
    let server = HttpServer::start(
        &[
            CALCULATOR,
            "--max-sessions",
            "2",
            "--session-idle-timeout",
            "2s",
        ],
        &[],
    )
    .await;
    let mut first = HttpClient::new(&server.url);
    first.initialize().await;
    let mut second = HttpClient::new(&server.url);
    second.initialize().await;
    // A third is refused, saying why.
    let third = HttpClient::new(&server.url);
    let response = third
        .post(&serde_json::from_str(INITIALIZE).unwrap())
        .send()
        .await
        .unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, 503, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("--max-sessions"), "{message}");

    // Ending one makes room.
    let delete = |session: &str| {
        first
            .http
            .delete(&server.url)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    let ended = delete(second.session.as_deref().unwrap()).await.unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    let unknown = delete("no-such-session").await.unwrap();
    assert_eq!(unknown.status(), 404);
    let mut again = HttpClient::new(&server.url);
    again.initialize().await;

    // Idle sessions expire: the client is told to start again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (_, ping) = first.message("ping", json!({}));
    let expired = first.post(&ping).send().await.unwrap();
    assert_eq!(expired.status(), 404);
}

#[tokio::test]
async fn http_health_answers_only_allowed_hosts() {
    let server = HttpServer::start(&[CALCULATOR], &[]).await;
    let http = toolhost_tests::http_client().no_proxy().build().unwrap();
    let url = format!("http://{}/health", server.authority);
    let port = server.authority.rsplit(':').next().unwrap();
    let foreign = http
        .get(&url)
        .header("host", format!("evil.example:{port}"))
        .send()
        .await
        .unwrap();
    let status = foreign.status();
    let text = foreign.text().await.unwrap();
    assert_eq!(status, 403, "{text}");
    assert!(!text.contains("tools"), "{text}");
    let local = http.get(&url).send().await.unwrap();
    assert_eq!(local.status(), 200);
}

#[tokio::test]
async fn an_unknown_tool_name_is_echoed_truncated() {
    let mut server = StdioServer::start(&[CALCULATOR]).await;
    let name = "x".repeat(100_000);
    let answer = server.call(&name, json!({})).await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(&name[..64]), "{message}");
    assert!(message.len() < 500, "an error of {} bytes", message.len());
    server.close_stdin();
    assert_eq!(server.exit_code().await, Some(0));
    let longest = server
        .stderr
        .text()
        .lines()
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(longest < 2000, "a log line of {longest} bytes");
}

/// The README's sentence on exit statuses, and what `host mcp` does on SIGTERM, agree.
#[tokio::test]
async fn sigterm_ends_host_mcp_with_the_status_the_readme_gives() {
    let readme = std::fs::read_to_string(toolhost_tests::repo_root().join("README.md")).unwrap();
    let paragraph = readme
        .split("\n\n")
        .find(|p| p.contains("Every command exits"))
        .expect("the README says how commands exit")
        .replace('\n', " ");
    let mut server = StdioServer::start(&[CALCULATOR]).await;
    server.terminate();
    let code = server.exit_code().await;
    assert_eq!(code, Some(0), "host mcp stops cleanly on SIGTERM");
    assert!(
        paragraph.contains("`host mcp`") && paragraph.contains("exits 0"),
        "the README does not say `host mcp` exits 0 on SIGTERM: {paragraph}"
    );
    let _ = signal;
}

#[tokio::test]
async fn a_first_start_answers_initialize_at_once_and_announces_the_tools_when_ready() {
    let component = toolhost_tests::repo_root().join("example-tools/dist/text-python.wasm");
    assert!(
        component.exists(),
        "build the example tools with `just tools` (scripts/build-tools.sh)"
    );
    let cache = tempfile::tempdir().unwrap();
    let mut command = host_command();
    command
        .env("TOOLHOST_COMPONENT_CACHE", cache.path())
        .arg("mcp")
        .arg(&component)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = Instant::now();
    stdin
        .write_all(format!("{INITIALIZE}\n").as_bytes())
        .await
        .unwrap();
    let first = tokio::time::timeout(NEVER, lines.next_line()).await;
    let first =
        first.unwrap_or_else(|_| panic!("no answer to initialize {NEVER:?} into a first start"));
    let initialized: Value = serde_json::from_str(&first.unwrap().unwrap()).unwrap();
    assert_eq!(initialized["id"], 1, "{initialized}");
    // At most the 5 s of --ready-wait, far below what clients wait (10 s and more).
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "initialize took {:?}",
        started.elapsed()
    );
    assert_eq!(
        initialized["result"]["capabilities"]["tools"]["listChanged"], true,
        "{initialized}"
    );
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    // No tools yet: they are still compiling.
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n")
        .await
        .unwrap();
    let listed: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(listed["result"]["tools"], json!([]), "{listed}");
    // A call made while the tools load waits for them.
    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": { "name": "regex_find_all",
                                   "arguments": { "pattern": "[0-9]+", "text": "a1b22" } } });
    stdin
        .write_all(format!("{call}\n").as_bytes())
        .await
        .unwrap();
    // The tools come when they are compiled, announced; then the call is answered.
    let announced = tokio::time::timeout(Duration::from_secs(600), async {
        let (mut announced, mut answered) = (false, None);
        while let Some(line) = lines.next_line().await.unwrap() {
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "notifications/tools/list_changed" {
                announced = true;
            }
            if message["id"] == 3 {
                answered = Some(message);
            }
            if let (true, Some(answer)) = (announced, &answered) {
                return answer.clone();
            }
        }
        panic!("stdout ended before the tools were announced and the call answered");
    })
    .await;
    let answer = announced.as_ref().expect("the tools were never announced");
    eprintln!("tools announced {:?} into a first start", started.elapsed());
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"));
    assert!(text.contains("22"), "{answer}");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}\n")
        .await
        .unwrap();
    let listed: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"regex_find_all"), "{listed}");
    let _ = child.start_kill();
}

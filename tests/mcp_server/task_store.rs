//! Tasks kept in Redis (`[mcp.tasks] store`, `--task-store`): two `host mcp --http` processes
//! share one real Redis (tests/support/redis.rs); a task started through one is polled,
//! answered and cancelled through the other, a finished task's result outlives the process
//! that ran it, a task whose process died while it worked fails within the lease, and
//! expired tasks leave Redis.

use serde_json::{Value, json};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::MCP_CONFORMANCE;
use toolhost_tests::mcp::{HttpClient, HttpServer};
use toolhost_tests::redis::Redis;
use toolhost_tests::require_guests;

use super::tasks::TASK_TOOLS_MANIFEST;

/// The conformance guest with the task tools, its tasks kept in `redis` for `ttl`.
fn manifest(redis: &Redis, ttl: &str) -> ManifestFile {
    require_guests();
    ManifestFile::new(&format!(
        "[components.conformance]\npath = {MCP_CONFORMANCE:?}\nresources = []\nprompts = []\n\
         limits.timeout = \"10m\"\n{TASK_TOOLS_MANIFEST}\n\
         [mcp.tasks]\nstore = {:?}\nttl = {ttl:?}\npoll_interval = \"200ms\"\n\n\
         [audit]\npath = \"audit.jsonl\"\n",
        redis.url()
    ))
}

/// A stateless (2026-07-28) client of `server` that declared the tasks extension: `method`
/// with `params`, the whole answer.
async fn ask(server: &HttpServer, method: &str, params: Value) -> Value {
    let client = HttpClient::new(&server.url);
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": { "io.modelcontextprotocol/tasks": {} },
        },
        "io.modelcontextprotocol/clientInfo": { "name": "toolhost-tests", "version": "0" },
    });
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let name = params
        .get("name")
        .or(params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut request = client
        .post(&message)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let response = request.send().await.unwrap();
    let text = response.text().await.unwrap();
    toolhost_tests::mcp::messages(&text)
        .into_iter()
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("no answer to {method}: {text}"))
}

async fn start(server: &HttpServer, tool: &str, arguments: Value) -> String {
    let answer = ask(
        server,
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
    .await;
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    answer["result"]["taskId"].as_str().unwrap().to_owned()
}

/// `tasks/get` of `id` through `server` until `done` says yes; the last state.
async fn poll(server: &HttpServer, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    loop {
        let answer = ask(server, "tasks/get", json!({ "taskId": id })).await;
        let state = answer["result"].clone();
        assert!(state.is_object(), "{answer}\n{}", server.stderr.text());
        if done(&state) {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_task_started_through_one_process_is_polled_answered_and_cancelled_through_another() {
    let redis = Redis::start();
    let manifest = manifest(&redis, "10m");
    let one = HttpServer::start(&[manifest.arg()], &[]).await;
    let two = HttpServer::start(&[manifest.arg()], &[]).await;
    one.loaded().await;
    two.loaded().await;

    let id = start(
        &one,
        "slow_compute",
        json!({ "seconds": 2, "label": "shared" }),
    )
    .await;
    // The other process sees it working, its progress, and its result.
    let seen = poll(&two, &id, |s| s["statusMessage"].is_string()).await;
    assert!(
        seen["statusMessage"]
            .as_str()
            .unwrap()
            .ends_with(": shared"),
        "{seen}"
    );
    assert_eq!(seen["pollIntervalMs"], 200, "{seen}");
    let done = poll(&two, &id, |s| s["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "computed shared in 2 s",
        "{done}"
    );

    // Asked through one, answered through the other.
    let id = start(&one, "confirm_delete", json!({ "filename": "b.txt" })).await;
    let asking = poll(&two, &id, |s| s["status"] == "input_required").await;
    assert_eq!(
        asking["inputRequests"]["confirm"]["method"], "elicitation/create",
        "{asking}"
    );
    let answer = json!({ "action": "decline" });
    let update = json!({ "taskId": id, "inputResponses": { "confirm": answer } });
    let ack = ask(&two, "tasks/update", update).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = poll(&one, &id, |s| s["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "kept b.txt", "{done}");

    // Cancelled through the other: the call stops on the process running it.
    let id = start(&one, "slow_compute", json!({ "seconds": 600 })).await;
    poll(&two, &id, |s| s["statusMessage"].is_string()).await;
    let ack = ask(&two, "tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let cancelled = poll(&one, &id, |s| s["status"] != "working").await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // The call was stopped, not left to run its ten minutes: the audit log has it cancelled.
    let logged = std::fs::read_to_string(manifest.dir().join("audit.jsonl")).unwrap();
    let record: Value = serde_json::from_str(logged.lines().last().unwrap()).unwrap();
    assert_eq!(record["tool"], "slow_compute", "{logged}");
    assert_eq!(record["outcome"], "cancelled", "{logged}");

    // An id no one made is unknown on both.
    for server in [&one, &two] {
        let unknown = ask(server, "tasks/get", json!({ "taskId": "0123" })).await;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    }
}

#[tokio::test]
async fn results_outlive_their_process_and_a_dead_processs_task_fails_within_the_lease() {
    let redis = Redis::start();
    let manifest = manifest(&redis, "10m");
    let mut one = HttpServer::start(&[manifest.arg()], &[]).await;
    let two = HttpServer::start(&[manifest.arg()], &[]).await;
    one.loaded().await;
    two.loaded().await;
    let finished = start(
        &one,
        "slow_compute",
        json!({ "seconds": 0, "label": "kept" }),
    )
    .await;
    poll(&one, &finished, |s| s["status"] == "completed").await;
    let working = start(&one, "slow_compute", json!({ "seconds": 600 })).await;
    poll(&two, &working, |s| s["statusMessage"].is_string()).await;

    one.child.start_kill().unwrap();
    one.child.wait().await.unwrap();

    let kept = poll(&two, &finished, |_| true).await;
    assert_eq!(kept["status"], "completed", "{kept}");
    assert_eq!(
        kept["result"]["content"][0]["text"], "computed kept in 0 s",
        "{kept}"
    );
    // Working until the lease lapses (a few seconds), then failed, saying why.
    let failed = poll(&two, &working, |s| s["status"] != "working").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("replica running this task stopped"),
        "{failed}"
    );
    // The survivor takes new tasks.
    let new = start(&two, "slow_compute", json!({ "seconds": 0 })).await;
    let done = poll(&two, &new, |s| s["status"] != "working").await;
    assert_eq!(done["status"], "completed", "{done}");
}

#[tokio::test]
async fn expired_tasks_leave_redis() {
    let redis = Redis::start();
    let manifest = manifest(&redis, "1s");
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    server.loaded().await;
    let id = start(&server, "slow_compute", json!({ "seconds": 0 })).await;
    assert!(!redis.keys(&format!("toolhost:task:{id}*")).is_empty());
    // Redis removes every key of the task at its TTL: the task, its lease, the caps' sets.
    loop {
        let left = redis.keys("toolhost:*");
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let gone = ask(&server, "tasks/get", json!({ "taskId": id })).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
}

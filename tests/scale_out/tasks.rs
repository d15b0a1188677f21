//! The tasks leg: three replicas of `host mcp --http --stateless` behind HAProxy sharing one
//! Redis (`--task-store`), tasks started through the balancer, a replica killed (SIGKILL)
//! while its long task works. After it: every task that had completed is still read, with its
//! result, through the others; the killed replica's working task turns `failed` once its
//! lease lapses (never `working` forever); the survivors' tasks still work and are cancelled;
//! new tasks complete. It counts what was sent, answered, failed and lost, and prints it.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::components::MCP_CONFORMANCE;
use toolhost_tests::mcp::{HttpServer, messages};
use toolhost_tests::redis::Redis;
use toolhost_tests::require_guests;

use crate::REPLICAS;
use crate::haproxy::Haproxy;

/// A stateless request (2026-07-28) through the balancer from a client that declared the
/// tasks extension: the answer, and the replica that gave it (`x-replica`); an error for a
/// transport failure or a status that is not 200.
async fn ask(url: &str, method: &str, params: Value) -> Result<(Value, String), String> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": { "io.modelcontextprotocol/tasks": {} },
        },
        "io.modelcontextprotocol/clientInfo": { "name": "scale-out", "version": "0" },
    });
    let name = (params.get("name").or(params.get("taskId")))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let http = toolhost_tests::http_client()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let response = toolhost_tests::mcp::post(&http, url, None, &body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .send()
        .await
        .map_err(|e| format!("transport: {e}"))?;
    let replica = (response.headers().get("x-replica"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("?")
        .to_owned();
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {text}"));
    }
    let answer = messages(&text).into_iter().find(|m| m["id"] == 1);
    answer
        .map(|answer| (answer, replica))
        .ok_or_else(|| format!("no answer in {text}"))
}

/// A task started through the balancer: its id and the replica that runs it.
struct Started {
    id: String,
    replica: String,
}

async fn start(url: &str, seconds: u64, counts: &mut Counts) -> Started {
    counts.sent += 1;
    let arguments = json!({ "seconds": seconds, "label": format!("{seconds} s") });
    let params = json!({ "name": "slow_compute", "arguments": arguments });
    let (answer, replica) = ask(url, "tools/call", params).await.unwrap();
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    Started {
        id: answer["result"]["taskId"].as_str().unwrap().to_owned(),
        replica,
    }
}

/// `tasks/get` of `id` through the balancer until `done` holds; requests that fail on the way
/// (the killed replica, before HAProxy marks it down) are retried and counted.
async fn poll(url: &str, id: &str, counts: &mut Counts, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = String::new();
    // At most a minute: a task that stays as it is past that is reported with its last state.
    for _ in 0..600 {
        match ask(url, "tasks/get", json!({ "taskId": id })).await {
            Ok((answer, _)) => {
                let state = answer["result"].clone();
                if answer.get("error").is_some() || done(&state) {
                    return answer;
                }
                last = answer.to_string();
            }
            Err(error) => {
                counts.retried += 1;
                last = error;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} never got where it was awaited; last: {last}")
}

/// What the leg counts, by task.
#[derive(Default)]
struct Counts {
    /// Tasks started.
    sent: u64,
    /// Tasks whose result was read, after the kill.
    answered: u64,
    /// The killed replica's working tasks, settled `failed` with the lease's message.
    failed: u64,
    /// Tasks cancelled on purpose (the survivors' long ones).
    cancelled: u64,
    /// Tasks unknown, or in a state they should not be in, after the kill.
    lost: Vec<String>,
    /// Polls that failed on the way and were sent again.
    retried: u64,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tasks: {} sent, {} answered, {} failed (the killed replica's, within the lease), \
             {} cancelled, {} lost; {} polls retried",
            self.sent,
            self.answered,
            self.failed,
            self.cancelled,
            self.lost.len(),
            self.retried
        )
    }
}

#[tokio::test]
async fn tasks_outlive_a_killed_replica_through_redis() {
    require_guests();
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("toolhost.toml");
    std::fs::write(
        &manifest,
        format!(
            "[components.conformance]\npath = {MCP_CONFORMANCE:?}\nresources = []\nprompts = []\n\
             limits.timeout = \"10m\"\n\n[tools.slow_compute]\ntask = \"optional\"\n"
        ),
    )
    .unwrap();
    let store = redis.url();
    let args = [
        manifest.to_str().unwrap(),
        "--stateless",
        "--task-store",
        &store,
    ];
    let mut servers = Vec::new();
    for _ in 0..REPLICAS {
        let server = HttpServer::start(&args, &[]).await;
        server.loaded().await;
        servers.push(server);
    }
    let authorities: Vec<String> = servers.iter().map(|s| s.authority.clone()).collect();
    let haproxy = Haproxy::start(&authorities, false).await;
    let url = haproxy.url.clone();
    let mut counts = Counts::default();

    // Round robin: short and long tasks on every replica.
    let mut short = Vec::new();
    let mut long = Vec::new();
    for _ in 0..REPLICAS * 2 {
        short.push(start(&url, 0, &mut counts).await);
        long.push(start(&url, 600, &mut counts).await);
    }
    for task in &short {
        poll(&url, &task.id, &mut counts, |s| s["status"] == "completed").await;
    }
    for task in &long {
        poll(&url, &task.id, &mut counts, |s| {
            s["statusMessage"].is_string()
        })
        .await;
    }
    let victim = long[0].replica.clone();
    let index: usize = victim.trim_start_matches('r').parse().unwrap();
    servers[index].child.start_kill().unwrap();
    servers[index].child.wait().await.unwrap();

    for task in &short {
        let answer = poll(&url, &task.id, &mut counts, |_| true).await;
        if answer["result"]["status"] == "completed"
            && answer["result"]["result"]["content"][0]["text"] == "computed 0 s in 0 s"
        {
            counts.answered += 1;
        } else {
            counts
                .lost
                .push(format!("{} (done on {}): {answer}", task.id, task.replica));
        }
    }
    let mut on_victim = 0;
    for task in &long {
        // The victim's: working until the lease lapses. A survivor's: working still.
        let answer = if task.replica == victim {
            poll(&url, &task.id, &mut counts, |s| s["status"] != "working").await
        } else {
            poll(&url, &task.id, &mut counts, |_| true).await
        };
        let state = &answer["result"];
        if task.replica == victim {
            on_victim += 1;
            let message = state["error"]["message"].as_str().unwrap_or_default();
            if state["status"] == "failed" && message.contains("replica running this task stopped")
            {
                counts.failed += 1;
                continue;
            }
        } else if state["status"] == "working" {
            let cancel = ask(&url, "tasks/cancel", json!({ "taskId": task.id })).await;
            let cancelled = poll(&url, &task.id, &mut counts, |s| s["status"] != "working").await;
            if cancel.is_ok() && cancelled["result"]["status"] == "cancelled" {
                counts.cancelled += 1;
                continue;
            }
        }
        counts
            .lost
            .push(format!("{} (on {}): {answer}", task.id, task.replica));
    }
    // New tasks after the kill complete on the survivors.
    let mut after = BTreeMap::new();
    for _ in 0..REPLICAS * 2 {
        let task = start(&url, 0, &mut counts).await;
        let answer = poll(&url, &task.id, &mut counts, |s| s["status"] != "working").await;
        if answer["result"]["status"] == "completed" {
            counts.answered += 1;
            *after.entry(task.replica).or_insert(0) += 1;
        } else {
            counts
                .lost
                .push(format!("{} (after the kill): {answer}", task.id));
        }
    }
    println!("{counts}; killed {victim}, which ran {on_victim} long task(s)");
    assert!(on_victim > 0);
    assert!(counts.lost.is_empty(), "{counts}: {:#?}", counts.lost);
    assert_eq!(counts.failed, on_victim, "{counts}");
    assert_eq!(
        counts.answered + counts.failed + counts.cancelled,
        counts.sent,
        "{counts}"
    );
    assert!(
        !after.contains_key(&victim),
        "{victim} answered after it was killed"
    );
}

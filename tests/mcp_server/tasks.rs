//! Calls that outlive their request (the MCP tasks extension, `io.modelcontextprotocol/tasks`):
//! the official conformance suite's `tasks-*` scenarios, and what they do not check: the
//! manifest's TTL and poll interval, progress seen through `tasks/get`, a cancelled task's
//! instance stopped, tasks bound to their caller, the caps, and tasks on stdio.

use serde_json::{Value, json};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::MCP_CONFORMANCE;
use toolhost_tests::issuer::{RESOURCE, SigningKey, TestIssuer};
use toolhost_tests::mcp::{HttpClient, HttpServer, StdioServer, peers};
use toolhost_tests::redis::Redis;
use toolhost_tests::require_guests;

use super::peers::{baseline_in, conformance_manifest, run_suite};

/// The conformance guest's tools for the tasks scenarios (tests/guests/mcp-conformance's
/// `tasks.rs`; the Python guest has none of them).
pub(crate) const TASK_TOOLS: [&str; 7] = [
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
];

/// How each of them runs, as the scenarios expect: `greet` within its request, the rest as
/// tasks (`failing_job` only as one; `test_tool_with_task` once it has its input).
pub(crate) const TASK_TOOLS_MANIFEST: &str = r#"
[tools.slow_compute]
task = "optional"

[tools.failing_job]
task = "required"

[tools.protocol_error_job]
task = "optional"

[tools.confirm_delete]
task = "optional"

[tools.multi_input]
task = "optional"

[tools.test_tool_with_task]
task = "after_input"
"#;

/// The suite's scenarios of the tasks extension (0.2.0-alpha.12).
const SCENARIOS: [&str; 10] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

#[tokio::test]
async fn the_tasks_scenarios_of_the_conformance_suite_pass() {
    let peers = peers();
    let (file, baseline) = baseline_in("conformance-tasks.yml");
    assert!(
        baseline.is_empty(),
        "the baseline must stay empty: {baseline:?}"
    );
    let manifest = conformance_manifest();
    // Tasks in memory, then in Redis (`--task-store`): the same scenarios pass with either.
    let redis = Redis::start();
    let store = redis.url();
    for args in [
        vec![manifest.arg()],
        vec![manifest.arg(), "--task-store", &store],
    ] {
        let server = HttpServer::start(&args, &[]).await;
        run_scenarios(&peers, &file, &server).await;
    }
}

/// Runs each of [`SCENARIOS`] against `server`, with the (empty) baseline `file`.
async fn run_scenarios(
    peers: &toolhost_tests::mcp::Peers,
    file: &std::path::Path,
    server: &HttpServer,
) {
    for scenario in SCENARIOS {
        let suite = [
            peers.conformance_next.as_os_str(),
            "server".as_ref(),
            "--scenario".as_ref(),
            scenario.as_ref(),
        ];
        let (stdout, checks) = run_suite(peers, &suite, file, server).await;
        let results = checks
            .get(scenario)
            .unwrap_or_else(|| panic!("{scenario} did not run: {stdout}"));
        for check in results {
            let status = check["status"].as_str().unwrap_or("?");
            // The suite skips the notifications scenario whole (its harness awaits a
            // rewrite for subscriptions/listen): it checks nothing yet, of any server.
            let skipped_by_the_suite = scenario == "tasks-status-notifications"
                && status == "SKIPPED"
                && results.len() == 1;
            assert!(
                status == "SUCCESS" || status == "INFO" || skipped_by_the_suite,
                "{scenario}: {check}"
            );
        }
        assert!(
            results.iter().any(|check| check["status"] == "SUCCESS")
                || scenario == "tasks-status-notifications",
            "{scenario} passed nothing: {results:?}"
        );
    }
}

/// A manifest of the conformance guest with the task tools, a TTL of 10 minutes, polls
/// every 250 ms, two tasks per caller, and `extra` after.
fn task_manifest(extra: &str) -> ManifestFile {
    require_guests();
    ManifestFile::new(&format!(
        "[components.conformance]\npath = {MCP_CONFORMANCE:?}\nresources = []\nprompts = []\n\
         limits.timeout = \"10m\"\n{TASK_TOOLS_MANIFEST}\n\
         [mcp.tasks]\nttl = \"10m\"\npoll_interval = \"250ms\"\nmax_per_caller = 2\n\n{extra}"
    ))
}

/// The session capabilities of a client that declared the tasks extension.
fn with_tasks() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "elicitation": {},
            "extensions": { "io.modelcontextprotocol/tasks": {} },
        },
        "clientInfo": { "name": "toolhost-tests", "version": "0" },
    })
}

/// A client of `server` in a session that declared the tasks extension, with `headers`.
async fn tasks_client(server: &HttpServer, headers: &[(&str, String)]) -> HttpClient {
    let mut client = HttpClient::new(&server.url);
    for (name, value) in headers {
        client.headers.push(((*name).to_owned(), value.clone()));
    }
    let answer = client.request("initialize", with_tasks()).await;
    assert!(
        answer["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{answer}"
    );
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let response = client.post(&initialized).send().await.unwrap();
    assert!(response.status().is_success());
    client
}

/// `tasks/get` of `id` until `done` says yes; the last state.
async fn poll(client: &mut HttpClient, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    loop {
        let answer = client.request("tasks/get", json!({ "taskId": id })).await;
        let state = answer["result"].clone();
        assert!(state.is_object(), "{answer}");
        if done(&state) {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn task_id(answer: &Value) -> String {
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    answer["result"]["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_task_keeps_the_manifests_ttl_and_shows_its_progress_then_its_result() {
    let manifest = task_manifest("");
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    let mut client = tasks_client(&server, &[]).await;
    let created = client
        .call("slow_compute", json!({ "seconds": 2, "label": "sums" }))
        .await;
    let id = task_id(&created);
    assert_eq!(created["result"]["status"], "working", "{created}");
    assert_eq!(created["result"]["ttlMs"], 600_000, "{created}");
    assert_eq!(created["result"]["pollIntervalMs"], 250, "{created}");
    // The tool's progress reports are the task's status message.
    let reported = poll(&mut client, &id, |s| s["statusMessage"].is_string()).await;
    assert!(
        reported["statusMessage"]
            .as_str()
            .unwrap()
            .ends_with("/2: sums"),
        "{reported}"
    );
    let done = poll(&mut client, &id, |s| s["status"] != "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "computed sums in 2 s",
        "{done}"
    );
    assert_eq!(done["result"]["isError"], false, "{done}");

    // A tool that needs a task, from a client that did not declare the extension: -32021.
    let mut plain = HttpClient::new(&server.url);
    plain.initialize().await;
    let refused = plain.call("failing_job", json!({})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"]
            .is_object(),
        "{refused}"
    );
    // An optional one runs within its request for that client.
    let inline = plain.call("slow_compute", json!({ "seconds": 0 })).await;
    assert_eq!(
        inline["result"]["content"][0]["text"], "computed unlabelled in 0 s",
        "{inline}"
    );

    // A trap is a failed task, with the host's error; a tool's reported failure a completed
    // one with isError.
    let trapped = task_id(&client.call("protocol_error_job", json!({})).await);
    let failed = poll(&mut client, &trapped, |s| s["status"] != "working").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["data"]["kind"], "trap", "{failed}");
    assert!(failed.get("result").is_none(), "{failed}");
}

/// The tasks extension (SEP-2663, Final) has no TTL a client asks for: "The `task` parameter
/// on `CallToolRequest` is removed; servers MUST ignore it". A client that still sends the
/// 2025-11-25 `task: {ttl}` gets the manifest's TTL, in memory and in Redis, and the task is
/// gone once it has run out.
#[tokio::test]
async fn a_task_keeps_the_manifests_ttl_whatever_the_client_asks_then_is_gone() {
    require_guests();
    let manifest = ManifestFile::new(&format!(
        "[components.conformance]\npath = {MCP_CONFORMANCE:?}\nresources = []\nprompts = []\n\
         {TASK_TOOLS_MANIFEST}\n[mcp.tasks]\nttl = \"3s\"\npoll_interval = \"100ms\"\n"
    ));
    let redis = Redis::start();
    let store = redis.url();
    for args in [
        vec![manifest.arg()],
        vec![manifest.arg(), "--task-store", &store],
    ] {
        let server = HttpServer::start(&args, &[]).await;
        let mut client = tasks_client(&server, &[]).await;
        // Asks for far less than the manifest's 3 s, and for far more: neither is heard.
        for asked in [200, 86_400_000] {
            let call = json!({
                "name": "slow_compute",
                "arguments": { "seconds": 0 },
                "task": { "ttl": asked },
            });
            let created = client.request("tools/call", call).await;
            let id = task_id(&created);
            assert_eq!(created["result"]["ttlMs"], 3000, "{created}");
            let done = poll(&mut client, &id, |s| s["status"] != "working").await;
            assert_eq!(done["status"], "completed", "{done}");
            assert_eq!(done["ttlMs"], 3000, "{done}");
            // Past its TTL the task is gone: an unknown task, as an id that never was.
            let gone = loop {
                let answer = client.request("tasks/get", json!({ "taskId": id })).await;
                if answer.get("error").is_some() {
                    break answer;
                }
                assert_eq!(answer["result"]["status"], "completed", "{answer}");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            };
            assert_eq!(gone["error"]["code"], -32602, "{gone}");
        }
    }
}

#[tokio::test]
async fn a_cancelled_task_stops_its_instance_and_asks_are_answered_by_update() {
    let manifest = task_manifest("[audit]\npath = \"audit.jsonl\"\n");
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    let mut client = tasks_client(&server, &[]).await;
    let id = task_id(&client.call("slow_compute", json!({ "seconds": 600 })).await);
    poll(&mut client, &id, |s| s["statusMessage"].is_string()).await;
    let ack = client
        .request("tasks/cancel", json!({ "taskId": id }))
        .await;
    assert_eq!(ack["result"], json!({ "resultType": "complete" }), "{ack}");
    let cancelled = poll(&mut client, &id, |s| s["status"] != "working").await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // The call was stopped, not left to run its ten minutes: the audit log has it cancelled.
    let audit = manifest.dir().join("audit.jsonl");
    let logged = std::fs::read_to_string(&audit).unwrap();
    let record: Value = serde_json::from_str(logged.lines().last().unwrap()).unwrap();
    assert_eq!(record["tool"], "slow_compute", "{logged}");
    assert_eq!(record["outcome"], "cancelled", "{logged}");

    // A tool that asks: input_required with its request, answered by tasks/update.
    let id = task_id(
        &client
            .call("confirm_delete", json!({ "filename": "a.txt" }))
            .await,
    );
    let asking = poll(&mut client, &id, |s| s["status"] != "working").await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    assert_eq!(
        asking["inputRequests"]["confirm"]["method"], "elicitation/create",
        "{asking}"
    );
    // An answer that is not a result is refused, naming it.
    let bad = json!({ "taskId": id, "inputResponses": { "confirm": 3 } });
    let refused = client.request("tasks/update", bad).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let answer = json!({ "action": "accept", "content": { "confirm": true } });
    let update = json!({ "taskId": id, "inputResponses": { "confirm": answer } });
    let ack = client.request("tasks/update", update).await;
    assert_eq!(ack["result"], json!({ "resultType": "complete" }), "{ack}");
    let done = poll(&mut client, &id, |s| s["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted a.txt",
        "{done}"
    );
}

#[tokio::test]
async fn a_task_is_its_callers_alone_and_each_caller_has_a_cap() {
    let key = SigningKey::new("k1");
    let issuer = TestIssuer::start(&[&key]).await;
    let auth = format!(
        "[mcp.auth]\nissuer = {:?}\nresource = {RESOURCE:?}\nscopes = [\"mcp:tools\"]\n",
        issuer.url()
    );
    let manifest = task_manifest(&auth);
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    let bearer = |sub: &str| {
        let token = key.sign(&issuer.claims(|claims| claims["sub"] = json!(sub)));
        [("authorization", format!("Bearer {token}"))]
    };
    let mut alice = tasks_client(&server, &bearer("alice")).await;
    let mut bob = tasks_client(&server, &bearer("bob")).await;
    let id = task_id(&alice.call("slow_compute", json!({ "seconds": 600 })).await);

    // Bob's every request about alice's task answers as for a task there is not.
    let unknown = bob
        .request("tasks/get", json!({ "taskId": "no-such-task" }))
        .await;
    for method in ["tasks/get", "tasks/cancel"] {
        let answer = bob.request(method, json!({ "taskId": id })).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert_eq!(
            answer["error"]["message"]
                .as_str()
                .map(|m| m.replace(&id, "no-such-task")),
            unknown["error"]["message"].as_str().map(str::to_owned),
            "{answer}"
        );
    }
    let update = json!({ "taskId": id, "inputResponses": {} });
    let answer = bob.request("tasks/update", update).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // Alice's task still runs: bob's cancel did nothing.
    let state = alice.request("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(state["result"]["status"], "working", "{state}");

    // Two tasks each (`max_per_caller = 2`): alice's third is refused, bob's first is not.
    task_id(&alice.call("slow_compute", json!({ "seconds": 600 })).await);
    let third = alice.call("slow_compute", json!({ "seconds": 600 })).await;
    assert!(
        third["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_per_caller"),
        "{third}"
    );
    task_id(&bob.call("slow_compute", json!({ "seconds": 600 })).await);
}

#[tokio::test]
async fn tasks_run_on_stdio_too() {
    let manifest = task_manifest("");
    let mut server = StdioServer::spawn(&[manifest.arg()]);
    server.request("initialize", with_tasks()).await;
    server.notify("notifications/initialized", json!({})).await;
    // Not served on the direct path: the answer is a task.
    let created = server.call("multi_input", json!({})).await;
    let id = task_id(&created);
    // The tool asks its two questions at once; a poll may come between the two.
    let asking = loop {
        let state = server.request("tasks/get", json!({ "taskId": id })).await;
        let asked = state["result"]["inputRequests"]
            .as_object()
            .map_or(0, |asked| asked.len());
        if state["result"]["status"] == "input_required" && asked == 2 {
            break state["result"].clone();
        }
    };
    let keys: Vec<&String> = asking["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["first", "second"], "{asking}");
    let answer = |name: &str| json!({ "action": "accept", "content": { "name": name } });
    let update = json!({ "taskId": id, "inputResponses": { "first": answer("ann") } });
    server.request("tasks/update", update).await;
    let state = server.request("tasks/get", json!({ "taskId": id })).await;
    let pending: Vec<&String> = state["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(pending, ["second"], "{state}");
    let update = json!({ "taskId": id, "inputResponses": { "second": answer("bo") } });
    server.request("tasks/update", update).await;
    let done = loop {
        let state = server.request("tasks/get", json!({ "taskId": id })).await;
        if state["result"]["status"] == "completed" {
            break state["result"].clone();
        }
    };
    assert_eq!(
        done["result"]["content"][0]["text"], "first: ann, second: bo",
        "{done}"
    );
    // A tool that does not run as a task answers within its request, as ever.
    let greeted = server.call("greet", json!({ "name": "stdio" })).await;
    assert_eq!(
        greeted["result"]["content"][0]["text"], "Hello, stdio!",
        "{greeted}"
    );
}

/// One caller's storm: `pollers` at once on `client`'s session, each polling task `id`
/// `polls` times back to back. Every answer is the task, still working, or a 429 of the
/// caller's rate (`[mcp.per_caller]`) with `Retry-After`; how many of each.
async fn storm(client: &HttpClient, id: &str, pollers: usize, polls: usize) -> (usize, usize) {
    let poller = |n: usize| async move {
        let (mut answered, mut refused) = (0, 0);
        for i in 0..polls {
            let message = json!({
                "jsonrpc": "2.0",
                "id": n * polls + i,
                "method": "tasks/get",
                "params": { "taskId": id },
            });
            let response = client.post(&message).send().await.unwrap();
            let status = response.status();
            let retry_after = response.headers().get("retry-after").is_some();
            let text = response.text().await.unwrap();
            if status == 429 {
                assert!(retry_after, "a 429 without Retry-After: {text}");
                refused += 1;
                continue;
            }
            assert!(status.is_success(), "HTTP {status}: {text}");
            let state = toolhost_tests::mcp::messages(&text).remove(0);
            assert_eq!(state["result"]["status"], "working", "{state}");
            answered += 1;
        }
        (answered, refused)
    };
    let counts = futures::future::join_all((0..pollers).map(poller)).await;
    counts
        .into_iter()
        .fold((0, 0), |(a, r), (answered, refused)| {
            (a + answered, r + refused)
        })
}

/// A caller that polls its working task as hard as it can (64 requests at once, again and
/// again) is answered each time, or refused with 429 past its rate, while the server's
/// memory stays where it was and another caller's task is polled to its result, never
/// refused; with the tasks in memory and in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polling_storm_is_answered_or_refused_without_growing_memory_or_starving_another() {
    let key = SigningKey::new("k1");
    let issuer = TestIssuer::start(&[&key]).await;
    let extra = format!(
        "[mcp.auth]\nissuer = {:?}\nresource = {RESOURCE:?}\nscopes = [\"mcp:tools\"]\n\n\
         [mcp.per_caller]\nrate = 100\nburst = 100\n",
        issuer.url()
    );
    let manifest = task_manifest(&extra);
    let redis = Redis::start();
    let store = redis.url();
    for args in [
        vec![manifest.arg()],
        vec![manifest.arg(), "--task-store", &store],
    ] {
        let server = HttpServer::start(&args, &[]).await;
        let pid = server.child.id().unwrap();
        let bearer = |sub: &str| {
            let token = key.sign(&issuer.claims(|claims| claims["sub"] = json!(sub)));
            [("authorization", format!("Bearer {token}"))]
        };
        let mut alice = tasks_client(&server, &bearer("alice")).await;
        let mut bob = tasks_client(&server, &bearer("bob")).await;
        let id = task_id(&alice.call("slow_compute", json!({ "seconds": 600 })).await);
        // A first storm, so that what the server sets up once (connections, buffers,
        // the limiter's entry) is there before the memory is read.
        storm(&alice, &id, 64, 10).await;
        let before = super::abuse::resident_kib(pid);

        let bobs = task_id(&bob.call("slow_compute", json!({ "seconds": 2 })).await);
        let quiet = async {
            let mut polls = 0;
            loop {
                // Any refusal fails here: `request` wants a success.
                let state = bob.request("tasks/get", json!({ "taskId": bobs })).await;
                polls += 1;
                if state["result"]["status"] != "working" {
                    return (state, polls);
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        };
        let ((answered, refused), (bobs_end, bob_polls)) =
            tokio::join!(storm(&alice, &id, 64, 40), quiet);
        let after = super::abuse::resident_kib(pid);
        eprintln!(
            "{}: storm of {} polls: {answered} answered, {refused} refused (429); bob's {bob_polls} \
             polls all answered; resident {before} KiB before, {after} KiB after",
            if args.len() == 1 { "memory" } else { "Redis" },
            64 * 40
        );
        assert_eq!(answered + refused, 64 * 40);
        assert!(
            answered > 0 && refused > 0,
            "{answered} answered, {refused} refused"
        );
        assert_eq!(bobs_end["result"]["status"], "completed", "{bobs_end}");
        assert_eq!(
            bobs_end["result"]["result"]["content"][0]["text"], "computed unlabelled in 2 s",
            "{bobs_end}"
        );
        // 2,560 polls leave no trace: a kilobyte kept per poll would be 2.5 MiB.
        assert!(
            after < before + 2 * 1024,
            "resident memory grew from {before} KiB to {after} KiB over the storm"
        );
        // The task the storm polled is as it was.
        let state = alice.request("tasks/get", json!({ "taskId": id })).await;
        assert_eq!(state["result"]["status"], "working", "{state}");
    }
}

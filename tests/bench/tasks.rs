//! What running a call as a task costs (the MCP tasks extension): the calculator's `add` as a
//! plain `tools/call` against the same call run as a task (its `tools/call`, which answers
//! with the task, then `tasks/get` until the result is there), and what one poll of a task
//! still working costs (a `tasks/get` of the conformance guest's `slow_compute` of ten
//! minutes: what a client polling a long task sends again and again), with the tasks in
//! memory and in a real Redis (tests/support/redis.rs), over `host mcp --http` in this
//! process, in interleaved rounds, each client with a session on a kept-alive connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::mcp::server::{HttpServerOptions, McpServer, serve_http};
use toolhost::{Host, Runtime, RuntimeConfig};
use toolhost_tests::components::{CALCULATOR, MCP_CONFORMANCE};
use toolhost_tests::mcp::HttpClient;
use toolhost_tests::redis::Redis;

use super::over_http::{call_add, send};
use super::{Bench, Stats, fmt, ratio};

/// Prints the section, and adds `task_over_plain`, `redis_task_over_plain`, `poll_over_plain`
/// and `redis_poll_over_plain` to the summary.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    toolhost_tests::require_guests();
    let calls = bench.scaled(bench.iterations / 4, bench.iterations);
    let redis = Redis::start();
    let cache = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })?;
    let memory = serve(&runtime, cache.path(), None).await?;
    let shared = serve(&runtime, cache.path(), Some(&redis.url())).await?;
    let mut plain = HttpClient::new(&memory);
    plain.initialize().await;
    let mut in_memory = tasks_client(&memory).await?;
    let mut in_redis = tasks_client(&shared).await?;
    // A task of ten minutes each, polled while it works.
    let working = [
        long_task(&mut in_memory).await?,
        long_task(&mut in_redis).await?,
    ];

    let rounds = 10;
    let per_round = (calls / rounds).max(5);
    let (mut plains, mut memories, mut redises) = (Vec::new(), Vec::new(), Vec::new());
    let (mut memory_polls, mut redis_polls) = (Vec::new(), Vec::new());
    let mut gets = [0usize; 2];
    for round in 0..=rounds {
        for _ in 0..per_round {
            let a = call_add(&mut plain).await?;
            let (b, memory_gets) = task(&mut in_memory).await?;
            let (c, redis_gets) = task(&mut in_redis).await?;
            let d = poll(&mut in_memory, &working[0]).await?;
            let e = poll(&mut in_redis, &working[1]).await?;
            if round > 0 {
                memory_polls.push(d);
                redis_polls.push(e);
                plains.push(a);
                memories.push(b);
                redises.push(c);
                gets[0] += memory_gets;
                gets[1] += redis_gets;
            }
        }
    }
    for (client, id) in [(&mut in_memory, &working[0]), (&mut in_redis, &working[1])] {
        send(client, "tasks/cancel", json!({ "taskId": id })).await?;
    }
    let tasks = memories.len().max(1) as f64;
    let (memory_poll, redis_poll) = (Stats::of(memory_polls), Stats::of(redis_polls));
    let (plain, memory, redis) = (Stats::of(plains), Stats::of(memories), Stats::of(redises));
    println!();
    println!("MCP over HTTP: a call run as a task (create, then tasks/get until the result)");
    println!("{:<44} {:>12} {:>12}", "", "median", "p90");
    plain.row("  plain tools/call");
    memory.row("  as a task, in memory");
    redis.row("  as a task, in Redis");
    let over = ratio(memory.median, plain.median);
    let redis_over = ratio(redis.median, plain.median);
    println!("task (memory) / plain:        {over:>8.2}x");
    println!("task (Redis) / plain:         {redis_over:>8.2}x");
    println!(
        "added per call:               {:>8} in memory, {} in Redis",
        fmt(memory.median.saturating_sub(plain.median)),
        fmt(redis.median.saturating_sub(plain.median))
    );
    println!(
        "tasks/get per task:           {:>8.2} in memory, {:.2} in Redis",
        gets[0] as f64 / tasks,
        gets[1] as f64 / tasks
    );
    println!();
    println!("MCP over HTTP: one tasks/get of a task still working (a client polling it)");
    println!("{:<44} {:>12} {:>12}", "", "median", "p90");
    plain.row("  plain tools/call");
    memory_poll.row("  tasks/get, in memory");
    redis_poll.row("  tasks/get, in Redis");
    let poll_over = ratio(memory_poll.median, plain.median);
    let redis_poll_over = ratio(redis_poll.median, plain.median);
    println!("poll (memory) / plain:        {poll_over:>8.2}x");
    println!("poll (Redis) / plain:         {redis_poll_over:>8.2}x");
    bench.summary.add("task_over_plain", format!("{over:.2}"));
    bench
        .summary
        .add("redis_task_over_plain", format!("{redis_over:.2}"));
    bench
        .summary
        .add("poll_over_plain", format!("{poll_over:.2}"));
    bench
        .summary
        .add("redis_poll_over_plain", format!("{redis_poll_over:.2}"));
    Ok(())
}

/// Serves the calculator, its `add` run as a task when the client declared the extension,
/// with its tasks in `store` (memory when none), on a free loopback port; its `/mcp` URL.
async fn serve(
    runtime: &Runtime,
    dir: &std::path::Path,
    store: Option<&str>,
) -> anyhow::Result<String> {
    let store = store
        .map(|url| format!("store = {url:?}\n"))
        .unwrap_or_default();
    let manifest = dir.join(format!("tasks-{}.toml", store.len()));
    std::fs::write(
        &manifest,
        format!(
            "[components.calculator]\npath = {CALCULATOR:?}\n\n\
             [components.conformance]\npath = {MCP_CONFORMANCE:?}\ntools = [\"slow_compute\"]\n\
             resources = []\nprompts = []\nlimits.timeout = \"10m\"\n\n\
             [tools.add]\ntask = \"optional\"\n\n[tools.slow_compute]\ntask = \"required\"\n\n\
             [mcp.tasks]\n{store}max_per_caller = 100000\nmax = 100000\n"
        ),
    )?;
    let host = Host::builder()
        .runtime(runtime.clone())
        .manifest(&manifest)
        .build()
        .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(serve_http(
        McpServer::new(Arc::new(host)),
        listener,
        HttpServerOptions::default(),
        std::future::pending(),
    ));
    Ok(url)
}

/// A client of `url` in a session that declared the tasks extension.
async fn tasks_client(url: &str) -> anyhow::Result<HttpClient> {
    let mut client = HttpClient::new(url);
    let params = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        "clientInfo": { "name": "bench", "version": "0" },
    });
    client.request("initialize", params).await;
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    client.post(&initialized).send().await?;
    Ok(client)
}

/// `add` as a task: created, then `tasks/get` until it completed (at once, no wait between);
/// the time from the create to the result, and how many `tasks/get` it took.
async fn task(client: &mut HttpClient) -> anyhow::Result<(Duration, usize)> {
    let params = json!({ "name": "add", "arguments": { "a": 1, "b": 2 } });
    let began = Instant::now();
    let (created, _) = send(client, "tools/call", params).await?;
    anyhow::ensure!(created["resultType"] == "task", "{created}");
    let id = created["taskId"].clone();
    for gets in 1..=10_000 {
        let (state, _) = send(client, "tasks/get", json!({ "taskId": id })).await?;
        match state["status"].as_str() {
            Some("completed") => {
                anyhow::ensure!(
                    state["result"]["structuredContent"]["result"] == 3.0,
                    "{state}"
                );
                return Ok((began.elapsed(), gets));
            }
            Some("working") => {}
            _ => anyhow::bail!("the task did not complete: {state}"),
        }
    }
    anyhow::bail!("the task was still working after 10,000 tasks/get")
}

/// Starts `slow_compute` of ten minutes as a task; its id.
async fn long_task(client: &mut HttpClient) -> anyhow::Result<String> {
    let params = json!({ "name": "slow_compute", "arguments": { "seconds": 600 } });
    let (created, _) = send(client, "tools/call", params).await?;
    anyhow::ensure!(created["resultType"] == "task", "{created}");
    created["taskId"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("no taskId: {created}"))
}

/// One `tasks/get` of task `id`, which must still be working; how long it took.
async fn poll(client: &mut HttpClient, id: &str) -> anyhow::Result<Duration> {
    let (state, took) = send(client, "tasks/get", json!({ "taskId": id })).await?;
    anyhow::ensure!(state["status"] == "working", "{state}");
    Ok(took)
}

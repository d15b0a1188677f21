//! `host mcp` against a floor: an MCP round trip per call (`tools/call` of the calculator's
//! `add`) over stdio and over HTTP, measured with a raw JSON-RPC client (no SDK) against
//! `host mcp` and against `bench-mcp-floor` (a minimal server that answers at once), in
//! interleaved rounds; calls per second at 1 and 4 in flight; the start time (spawn to
//! `tools/list` answered) with the example manifest's components and a warm compile cache;
//! resident memory; and how soon a cancelled spinning call frees its instance.

mod client;
pub mod versus;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use toolhost::mcp::server::{HttpServerOptions, McpServer, StdioOptions, serve_http, serve_lines};
use toolhost::sandbox::LimitsConfig;
use toolhost::units::HumanDuration;
use toolhost::{ComponentConfig, Host, Manifest, Runtime, RuntimeConfig, Toolbox};
use toolhost_tests::components::{CALCULATOR, MISBEHAVE};
use toolhost_tests::{host_binary, repo_root};

use client::{Connection, Http, Lines, tool_names};

use crate::{Bench, Stats, fmt, require_example_components};

const FLOOR: &str = env!("CARGO_BIN_EXE_bench-mcp-floor");

/// Prints the MCP section of the benchmark.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let calls = bench.iterations;
    let host = host_binary();
    let cache = tempfile::tempdir()?;
    let cache_dir = cache
        .path()
        .to_str()
        .context("a UTF-8 temp path")?
        .to_owned();
    let host_args = ["--cache-dir", &cache_dir, "mcp", CALCULATOR];

    let mut floor_stdio = Lines::spawn(FLOOR, &[]).await?;
    let mut host_stdio = Lines::spawn(host.to_str().context("UTF-8 path")?, &host_args).await?;
    let (floor_http_child, floor_http) = Http::spawn(FLOOR, &["--http", "127.0.0.1:0"]).await?;
    let mut http_args = host_args.to_vec();
    http_args.extend(["--http", "127.0.0.1:0"]);
    let (host_http_child, host_http) =
        Http::spawn(host.to_str().context("UTF-8 path")?, &http_args).await?;
    let mut floor_http = floor_http.connect(4).await?;
    let mut host_http = host_http.connect(4).await?;
    host_stdio.wait_for_tools().await?;
    host_http.wait_for_tools().await?;

    // Warm up every path, then interleave rounds so that all four see the same machine.
    let rounds = bench.scaled(20, 2);
    let per_round = (calls / rounds).max(10);
    let mut samples: [Vec<Duration>; 4] = Default::default();
    for round in 0..=rounds {
        let mut one = |i: usize, took: Duration| {
            if round > 0 {
                samples[i].push(took);
            }
        };
        for _ in 0..per_round {
            one(0, floor_stdio.call().await?);
            one(1, host_stdio.call().await?);
            one(2, floor_http.call(0).await?);
            one(3, host_http.call(0).await?);
        }
    }
    let [floor_stdio_rt, host_stdio_rt, floor_http_rt, host_http_rt] = samples.map(Stats::of);

    let throughput_calls = calls.max(bench.scaled(400, 8));
    let rate = |took: Duration| throughput_calls as f64 / took.as_secs_f64();
    let stdio_rates = [
        (
            rate(floor_stdio.pipelined(throughput_calls, 1).await?),
            rate(floor_stdio.pipelined(throughput_calls, 4).await?),
        ),
        (
            rate(host_stdio.pipelined(throughput_calls, 1).await?),
            rate(host_stdio.pipelined(throughput_calls, 4).await?),
        ),
    ];
    let http_rates = [
        (
            rate(floor_http.concurrent(throughput_calls, 1).await?),
            rate(floor_http.concurrent(throughput_calls, 4).await?),
        ),
        (
            rate(host_http.concurrent(throughput_calls, 1).await?),
            rate(host_http.concurrent(throughput_calls, 4).await?),
        ),
    ];
    let host_rss = memory(host_stdio.child.id());
    let floor_rss = memory(floor_stdio.child.id());
    drop((floor_http_child, host_http_child));

    println!();
    println!(
        "MCP: a tools/call round trip (calculator `add`), raw JSON-RPC client; {rounds} \
         interleaved rounds of {per_round} calls each"
    );
    println!(
        "{:<36} {:>10} {:>10} {:>14} {:>14}",
        "", "median", "p90", "calls/s at 1", "calls/s at 4"
    );
    let row = |label: &str, stats: &Stats, (one, four): (f64, f64)| {
        println!(
            "{label:<36} {:>10} {:>10} {:>14.0} {:>14.0}",
            fmt(stats.median),
            fmt(stats.p90),
            one,
            four
        );
    };
    row("stdio: floor", &floor_stdio_rt, stdio_rates[0]);
    row("stdio: host mcp", &host_stdio_rt, stdio_rates[1]);
    row("HTTP: floor (JSON answers)", &floor_http_rt, http_rates[0]);
    row(
        "HTTP: host mcp (sessions, SSE)",
        &host_http_rt,
        http_rates[1],
    );
    println!(
        "host mcp over the floor, per call:  stdio {}   HTTP {}",
        fmt(host_stdio_rt.median.saturating_sub(floor_stdio_rt.median)),
        fmt(host_http_rt.median.saturating_sub(floor_http_rt.median))
    );
    println!("resident memory after the calls: host mcp {host_rss}; floor {floor_rss}");

    start_times(&host, bench).await?;
    cancellation(bench.scaled(10, 2)).await?;
    Ok(())
}

/// Spawn to `tools/list` answered, with the example manifest's components: with an empty
/// compile cache (until every tool is listed, which is when the cache is filled), then with
/// the warm cache, where each start must list every tool at once.
///
/// A smoke run starts a manifest of the calculator alone (the example manifest's cold start
/// compiles for minutes on a debug build), with no ready-wait: its cold start lists no
/// tools at first, as the example manifest's does on a release build.
async fn start_times(host: &std::path::Path, bench: &Bench) -> anyhow::Result<()> {
    require_example_components()?;
    let dir = tempfile::tempdir()?;
    let (manifest, ready_wait) = if bench.smoke() {
        let manifest = dir.path().join("toolhost.toml");
        std::fs::write(
            &manifest,
            format!("[components.calculator]\npath = {CALCULATOR:?}\n"),
        )?;
        (manifest, "0s")
    } else {
        (repo_root().join("example-tools/toolhost.toml"), "5s")
    };
    let expected = manifest_tools(&bench.runtime, &manifest).await?;
    let cache = tempfile::tempdir()?;
    let args = [
        "--cache-dir",
        cache.path().to_str().context("UTF-8 path")?,
        "mcp",
        manifest.to_str().context("UTF-8 path")?,
    ];
    // Only the cold start: a warm one with no ready-wait would answer before it loaded.
    let cold_args = [&args[..], &["--ready-wait", ready_wait]].concat();
    let host = host.to_str().context("UTF-8 path")?;
    // A cold `host mcp` answers with no tools while it compiles past its ready-wait: it is
    // kept until it lists them all, its compile cache then filled for the warm starts.
    let mut cold = start_once(host, &cold_args).await?;
    if cold.tools.is_empty() {
        cold.tools = cold.server.wait_for_tools().await?;
    }
    let cold_took = cold.started.elapsed();
    ensure_listed("its cold start", &cold.tools, &expected)?;
    drop(cold);
    let mut warm = Vec::new();
    let mut memory_line = String::new();
    for i in 0..=bench.scaled(20, 2) {
        let start = start_once(host, &args).await?;
        ensure_listed("a warm start", &start.tools, &expected)?;
        if i > 0 {
            warm.push(start.took);
        }
        memory_line = memory(start.server.child.id());
    }
    let mut floor = Vec::new();
    for _ in 0..bench.scaled(20, 2) {
        floor.push(start_once(FLOOR, &[]).await?.took);
    }
    let warm = Stats::of(warm);
    let floor = Stats::of(floor);
    println!();
    println!(
        "start: spawn to tools/list answered ({} tools of {})",
        expected.len(),
        bench.scaled("the example manifest's components", "the calculator")
    );
    println!("{:<36} {:>10} {:>10}", "", "median", "p90");
    println!(
        "{:<36} {:>10} {:>10}",
        "host mcp, warm compile cache",
        fmt(warm.median),
        fmt(warm.p90)
    );
    println!(
        "{:<36} {:>10}",
        "host mcp, empty cache (compiles)",
        fmt(cold_took)
    );
    println!(
        "{:<36} {:>10} {:>10}",
        "floor (spawn + answer)",
        fmt(floor.median),
        fmt(floor.p90)
    );
    println!("resident memory once started (warm): {memory_line}");
    Ok(())
}

/// The names of the tools the example manifest offers, as this build's library loads them,
/// sorted.
async fn manifest_tools(
    runtime: &Runtime,
    manifest: &std::path::Path,
) -> anyhow::Result<Vec<String>> {
    let manifest = Manifest::load(manifest)?;
    let toolbox = Toolbox::builder(runtime)
        .components(ComponentConfig::from_manifest(&manifest))
        .build()
        .await?;
    let mut names = toolbox.names();
    names.sort();
    Ok(names)
}

/// Fails unless `host mcp` listed the manifest's tools (`expected`) at `when`.
fn ensure_listed(when: &str, listed: &[String], expected: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(
        listed == expected,
        "host mcp listed {} tools at {when}, not the {} of its manifest: {listed:?}",
        listed.len(),
        expected.len()
    );
    Ok(())
}

/// A server started: how long from its spawn to `tools/list` answered, and what it listed.
struct Started {
    server: Lines,
    started: Instant,
    took: Duration,
    tools: Vec<String>,
}

/// One start: spawn, initialize and list in one write.
async fn start_once(program: &str, args: &[&str]) -> anyhow::Result<Started> {
    let started = Instant::now();
    let mut server = Lines::spawn_raw(program, args)?;
    let mut batch = String::new();
    for message in [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "bench", "version": "0" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    ] {
        batch.push_str(&message.to_string());
        batch.push('\n');
    }
    server.stdin.write_all(batch.as_bytes()).await?;
    server.stdin.flush().await?;
    let listed = loop {
        let message = server.recv().await?;
        if message["id"] == 2 {
            break message;
        }
    };
    let took = started.elapsed();
    Ok(Started {
        tools: tool_names(&listed)?,
        server,
        started,
        took,
    })
}

/// Resident memory of process `pid` now and at its peak, from /proc (Linux).
fn memory(pid: Option<u32>) -> String {
    let status = pid
        .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map_or_else(|| "?".to_owned(), |v| v.trim().to_owned())
    };
    format!("{} (peak {})", field("VmRSS:"), field("VmHWM:"))
}

/// How soon a cancelled spinning call has freed its instance: the library's server in this
/// process (so its count of calls in flight can be watched), over a pipe and over HTTP.
async fn cancellation(times: i64) -> anyhow::Result<()> {
    let cache = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })?;
    let minute = Some(HumanDuration(Duration::from_secs(60)));
    let host = Host::builder()
        .runtime(runtime)
        .component(ComponentConfig::new(MISBEHAVE))
        .limits(LimitsConfig {
            cpu_time: minute,
            timeout: minute,
            ..LimitsConfig::default()
        })
        .build()
        .await?;
    let server = McpServer::new(Arc::new(host));
    let spin = |id: i64| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "spin", "arguments": {} } })
    };

    // Over a pipe, as on stdio.
    let (client, served) = tokio::io::duplex(1 << 16);
    let (input, output) = tokio::io::split(served);
    tokio::spawn(serve_lines(
        server.session(),
        input,
        output,
        StdioOptions::default(),
        std::future::pending(),
    ));
    let (from_server, mut to_server) = tokio::io::split(client);
    tokio::spawn(async move {
        let mut lines = BufReader::new(from_server).lines();
        while let Ok(Some(_)) = lines.next_line().await {}
    });
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "bench", "version": "0" } } });
    for message in [
        initialize,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    ] {
        to_server
            .write_all(format!("{message}\n").as_bytes())
            .await?;
    }
    let mut pipe = Vec::new();
    for id in 1..=times {
        to_server
            .write_all(format!("{}\n", spin(id)).as_bytes())
            .await?;
        in_flight(&server, 1).await?;
        tokio::time::sleep(Duration::from_millis(30)).await;
        let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": { "requestId": id } });
        to_server
            .write_all(format!("{cancel}\n").as_bytes())
            .await?;
        let started = Instant::now();
        in_flight(&server, 0).await?;
        pipe.push(started.elapsed());
    }

    // Over HTTP, with sessions: the client closes its connection mid-call.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let authority = listener.local_addr()?.to_string();
    tokio::spawn(serve_http(
        server.session(),
        listener,
        HttpServerOptions::default(),
        std::future::pending(),
    ));
    let clients = Http {
        authority,
        session: None,
    }
    .connect(1)
    .await?;
    let mut http = Vec::new();
    for id in 1..=times {
        let mut connection = Connection::open(&clients.server.authority).await?;
        let message = spin(id).to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: \
             application/json, text/event-stream\r\ncontent-length: {}\r\nmcp-session-id: \
             {}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n{message}",
            clients.server.authority,
            message.len(),
            clients.server.session.as_deref().unwrap_or_default(),
        );
        connection.writer.write_all(request.as_bytes()).await?;
        in_flight(&server, 1).await?;
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(connection);
        let started = Instant::now();
        in_flight(&server, 0).await?;
        http.push(started.elapsed());
    }
    let (pipe, http) = (Stats::of(pipe), Stats::of(http));
    println!();
    println!("cancellation: a spinning guest's instance freed after (median, p90; {times} each)");
    println!(
        "{:<36} {:>10} {:>10}",
        "notifications/cancelled (pipe)",
        fmt(pipe.median),
        fmt(pipe.p90)
    );
    println!(
        "{:<36} {:>10} {:>10}",
        "HTTP connection closed (sessions)",
        fmt(http.median),
        fmt(http.p90)
    );
    Ok(())
}

async fn in_flight(server: &McpServer, n: usize) -> anyhow::Result<()> {
    tokio::time::timeout(Duration::from_secs(30), async {
        while server.calls_in_flight() != n {
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
    })
    .await
    .with_context(|| format!("the server never had {n} call(s) in flight"))
}

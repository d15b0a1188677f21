//! `just soak`: many clients call `host mcp --http` for a long time, and every answer is
//! checked. Reports calls per second, latency percentiles, and the server's resident memory
//! at the start, the middle and the end; exits non-zero when an answer is wrong or missing,
//! or when memory grew between the middle and the end by more than the allowed margin.
//!
//!   soak --host target/release/host [--manifest example-tools/toolhost.toml]
//!        [--clients 16] [--calls 100000] [--stateless] [--growth-percent 10]
//!
//! Why the middle and not the start: the first calls fill what a server keeps for good (an
//! instance pool per component, the allocator's arenas, sessions), so the start is lower
//! for reasons that are not leaks. From the middle to the end the same calls run again from
//! the same clients; memory that keeps growing then grows with the number of calls. The
//! example manifest's server settles at ~170 MB; with 50,000 calls between the two readings,
//! a 10% margin catches any leak of ~350 bytes per call or more (issue 26 found 3.4 KB per
//! queued answer and 49 KB per session), while leaving room for the allocator's jitter: over
//! 100,000 calls (debug build), RSS was 165, 165, 166, 166, 167, 173, 170, 175, 174 and
//! 173 MiB after each 10,000.

mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use toolhost_tests::load::{RpcClient, percentile, resident_kib, tool_text};

use workload::{KINDS, Workload};

/// Longer than the manifest's own call timeout (30 s), so the server's limit shows first.
const CALL_TIMEOUT: Duration = Duration::from_secs(40);

struct Options {
    host: PathBuf,
    manifest: PathBuf,
    clients: u64,
    calls: u64,
    stateless: bool,
    growth_percent: u64,
}

fn options() -> anyhow::Result<Options> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut options = Options {
        host: PathBuf::new(),
        manifest: root.join("example-tools/toolhost.toml"),
        clients: 16,
        calls: 100_000,
        stateless: false,
        growth_percent: 10,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--host" => options.host = value()?.into(),
            "--manifest" => options.manifest = value()?.into(),
            "--clients" => options.clients = value()?.parse()?,
            "--calls" => options.calls = value()?.parse()?,
            "--growth-percent" => options.growth_percent = value()?.parse()?,
            "--stateless" => options.stateless = true,
            other => bail!("unknown argument {other}; see the top of tests/soak/main.rs"),
        }
    }
    if options.host.as_os_str().is_empty() {
        bail!("--host PATH is required: the `host` binary to soak (`just soak` passes it)");
    }
    if options.clients == 0 || options.calls < options.clients {
        bail!("--calls must be at least --clients, and --clients at least 1");
    }
    Ok(options)
}

/// The server, the URL it printed, and everything it wrote on stderr.
async fn start_server(options: &Options) -> anyhow::Result<(Child, String)> {
    let mut command = Command::new(&options.host);
    command
        .arg("mcp")
        .arg(&options.manifest)
        .args(["--http", "127.0.0.1:0"])
        .args(options.stateless.then_some("--stateless"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", options.host.display()))?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr is piped")?).lines();
    // A first start compiles the components that are not in the compile cache yet.
    let url = tokio::time::timeout(Duration::from_secs(600), async {
        while let Some(line) = lines.next_line().await? {
            eprintln!("server: {line}");
            if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                return Ok(url.to_owned());
            }
        }
        bail!("the server ended before it printed its address")
    })
    .await
    .context("the server printed no address within 10 minutes")??;
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("server: {line}");
        }
    });
    Ok((child, url))
}

/// What the clients found.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    /// The latencies of each tool.
    by_tool: BTreeMap<&'static str, Vec<Duration>>,
    wrong: Vec<String>,
    wrong_count: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    workload::check_the_checks()?;
    let testdata = options
        .manifest
        .parent()
        .context("the manifest has a directory")?
        .join("files/testdata");
    let workload = Arc::new(Workload::new(&testdata).with_context(|| {
        format!(
            "cannot read {}: --manifest must be example-tools/toolhost.toml",
            testdata.display()
        )
    })?);
    let (server, url) = start_server(&options).await?;
    let pid = server.id().context("the server runs")?;

    let mut clients = Vec::new();
    for _ in 0..options.clients {
        let mut client = RpcClient::new(&url, CALL_TIMEOUT);
        if !options.stateless {
            client
                .initialize()
                .await
                .map_err(|e| anyhow::anyhow!("initialize failed: {e}"))?;
        }
        clients.push(client);
    }
    let rss_start = resident_kib(pid).context("no VmRSS for the server")?;
    let rss_middle = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Mutex::new(Tally::default()));
    println!(
        "soak: {} clients, {} calls over {} kinds, {} mode, server pid {pid}",
        options.clients,
        options.calls,
        KINDS,
        if options.stateless {
            "stateless"
        } else {
            "session"
        }
    );

    let started = Instant::now();
    let mut tasks = Vec::new();
    for mut client in clients {
        let (workload, next, done, tally, rss_middle) = (
            workload.clone(),
            next.clone(),
            done.clone(),
            tally.clone(),
            rss_middle.clone(),
        );
        let total = options.calls;
        tasks.push(tokio::spawn(async move {
            let mut mine = Tally::default();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                let call = workload.call(n);
                let began = Instant::now();
                let answer = client.call(call.tool, &call.arguments).await;
                let took = began.elapsed();
                mine.latencies.push(took);
                mine.by_tool.entry(call.tool).or_default().push(took);
                let verdict = answer
                    .map_err(|failure| failure.to_string())
                    .and_then(|answer| tool_text(&answer.message).map(str::to_owned))
                    .and_then(|text| call.expect.check(&text));
                if let Err(why) = verdict {
                    mine.wrong_count += 1;
                    if mine.wrong.len() < 5 {
                        mine.wrong.push(format!("call {n} ({}): {why}", call.tool));
                    }
                }
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                if finished == total / 2 {
                    rss_middle.store(resident_kib(pid).unwrap_or(0), Ordering::Relaxed);
                }
                if finished % (total / 10).max(1) == 0 {
                    let rss = resident_kib(pid).unwrap_or(0);
                    eprintln!("soak: {finished} calls, RSS {} MiB", rss / 1024);
                }
            }
            let mut tally = tally.lock().await;
            tally.latencies.append(&mut mine.latencies);
            for (tool, mut latencies) in mine.by_tool {
                tally
                    .by_tool
                    .entry(tool)
                    .or_default()
                    .append(&mut latencies);
            }
            tally.wrong.append(&mut mine.wrong);
            tally.wrong_count += mine.wrong_count;
        }));
    }
    for task in tasks {
        task.await.context("a client panicked")?;
    }
    let elapsed = started.elapsed();
    let rss_end = resident_kib(pid).context("the server is gone at the end")?;
    let rss_middle = rss_middle.load(Ordering::Relaxed);
    drop(server);

    let mut tally = tally.lock().await;
    tally.latencies.sort();
    let calls = tally.latencies.len() as u64;
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "soak: {calls} calls in {:.1} s: {:.0} calls/s; latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64(),
        percentile(&tally.latencies, 50.0).as_secs_f64() * 1e3,
        percentile(&tally.latencies, 99.0).as_secs_f64() * 1e3,
        percentile(&tally.latencies, 100.0).as_secs_f64() * 1e3,
    );
    for (tool, latencies) in &mut tally.by_tool {
        latencies.sort();
        println!(
            "soak:   {tool:<16} {:>6} calls, p50 {:>8.2} ms, p99 {:>8.2} ms",
            latencies.len(),
            percentile(latencies, 50.0).as_secs_f64() * 1e3,
            percentile(latencies, 99.0).as_secs_f64() * 1e3,
        );
    }
    println!(
        "soak: server RSS start {:.1} MiB, middle {:.1} MiB, end {:.1} MiB (end - middle: {:+.1} MiB)",
        mib(rss_start),
        mib(rss_middle),
        mib(rss_end),
        mib(rss_end) - mib(rss_middle)
    );
    println!("soak: wrong or missing answers: {}", tally.wrong_count);
    for wrong in &tally.wrong {
        println!("  {wrong}");
    }
    let limit = rss_middle + rss_middle * options.growth_percent / 100;
    if calls != options.calls {
        bail!("{calls} calls were made instead of {}", options.calls);
    }
    if tally.wrong_count > 0 {
        bail!("{} answers were wrong or missing", tally.wrong_count);
    }
    if rss_middle == 0 || rss_end > limit {
        bail!(
            "memory is not flat: {:.1} MiB at the end, over {:.1} MiB (the middle's {:.1} MiB + {}%)",
            mib(rss_end),
            mib(limit),
            mib(rss_middle),
            options.growth_percent
        );
    }
    println!("soak: passed");
    Ok(())
}

//! Two callers, one flooding: a quiet caller's `tools/call` latency (median and p99) on
//! `host mcp --http` taking access tokens, alone, then while another caller floods the server
//! from many connections at once, without and with per-caller limits (`[mcp.per_caller]`).
//! The issuer is a local one (tests/support/issuer.rs); the tool is the calculator's `add`.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::mcp::server::auth::ResourceServerConfig;
use toolhost::mcp::server::{HttpServerOptions, McpServer, serve_http};
use toolhost::{ComponentConfig, Host, McpConfig, PerCallerLimits, Runtime, RuntimeConfig};
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::issuer::{RESOURCE, SigningKey, TestIssuer};
use toolhost_tests::mcp::{HttpClient, messages};

use super::{Bench, fmt, ratio};

/// How many connections the flooding caller calls from at once.
const FLOODERS: usize = 16;

/// Prints the section, and adds the quiet caller's p99 under a flood over its p99 alone, with
/// and without limits, to the summary.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let calls = bench.iterations;
    let summary = &mut bench.summary;
    let key = SigningKey::new("fair");
    let issuer = TestIssuer::start(&[&key]).await;
    let token = |sub: &str| key.sign(&issuer.claims(|c| c["sub"] = json!(sub)));
    let (quiet, flooder) = (token("quiet"), token("flooder"));
    let limits = PerCallerLimits {
        rate: NonZeroU32::new(200),
        burst: NonZeroU32::new(50),
        calls: NonZeroU32::new(2),
    };
    let open = serve(&issuer, PerCallerLimits::default()).await?;
    let fair = serve(&issuer, limits).await?;
    let samples = (calls / 4).max(100);

    let alone = quiet_latencies(&open, &quiet, None, samples).await?;
    let flooded = quiet_latencies(&open, &quiet, Some(&flooder), samples).await?;
    let limited = quiet_latencies(&fair, &quiet, Some(&flooder), samples).await?;
    println!();
    println!(
        "Two callers: the quiet one's calls while the other floods from {FLOODERS} connections"
    );
    println!(
        "{:<44} {:>12} {:>12} {:>14}",
        "", "median", "p99", "flood answered"
    );
    alone.row("  alone");
    flooded.row("  flooded, no per-caller limits");
    limited.row("  flooded, [mcp.per_caller] 200/s, 2 calls");
    let (unfair, fairer) = (ratio(flooded.p99, alone.p99), ratio(limited.p99, alone.p99));
    println!("quiet p99 flooded / alone:    {unfair:>8.2}x without limits, {fairer:.2}x with");
    summary.add("flooded_p99_over_alone", format!("{unfair:.2}"));
    summary.add("flooded_limited_p99_over_alone", format!("{fairer:.2}"));
    Ok(())
}

/// How often the quiet caller calls: one call every 10 ms, 100 a second.
const QUIET_PACE: Duration = Duration::from_millis(10);

/// The quiet caller's latencies, and what the flood got.
struct Latencies {
    median: Duration,
    p99: Duration,
    /// The flood's calls answered, and those refused with 429.
    flood: Option<(usize, usize)>,
}

impl Latencies {
    fn row(&self, label: &str) {
        let flood = match self.flood {
            Some((answered, refused)) => format!("{answered} ok, {refused} 429"),
            None => String::new(),
        };
        println!(
            "{label:<44} {:>12} {:>12} {flood:>14}",
            fmt(self.median),
            fmt(self.p99)
        );
    }
}

/// `samples` calls of the `quiet` caller, one at a time, while `flooder` (if any) calls from
/// [`FLOODERS`] connections as fast as it is answered.
async fn quiet_latencies(
    url: &str,
    quiet: &str,
    flooder: Option<&str>,
    samples: usize,
) -> anyhow::Result<Latencies> {
    let stop = Arc::new(AtomicBool::new(false));
    let (answered, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    // Every flooding connection opens its session before any floods: under a rate limit, a
    // session opened once the flood runs would itself be refused.
    let mut clients = Vec::new();
    for _ in 0..flooder.map_or(0, |_| FLOODERS) {
        clients.push(client(url, flooder.unwrap_or_default()).await);
    }
    let mut flood = Vec::new();
    for mut client in clients {
        let (stop, answered, refused) = (stop.clone(), answered.clone(), refused.clone());
        flood.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match call(&mut client).await {
                    Ok(200) => answered.fetch_add(1, Ordering::Relaxed),
                    Ok(429) => refused.fetch_add(1, Ordering::Relaxed),
                    _ => 0,
                };
            }
        }));
    }
    let mut client = client(url, quiet).await;
    let mut took = Vec::with_capacity(samples);
    for _ in 0..samples {
        // Quiet: within its share (half the 200/s the limited server allows), so that what
        // it waits for is the other caller's flood, not its own allowance.
        tokio::time::sleep(QUIET_PACE).await;
        let began = Instant::now();
        let status = call(&mut client).await?;
        anyhow::ensure!(status == 200, "the quiet caller got HTTP {status}");
        took.push(began.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    for task in flood {
        task.await?;
    }
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q).round() as usize];
    Ok(Latencies {
        median: at(0.5),
        p99: at(0.99),
        flood: flooder.map(|_| {
            (
                answered.load(Ordering::Relaxed),
                refused.load(Ordering::Relaxed),
            )
        }),
    })
}

/// `host mcp --http` over the calculator on a free loopback port, taking `issuer`'s tokens,
/// with `limits` per caller; its `/mcp` URL.
async fn serve(issuer: &TestIssuer, limits: PerCallerLimits) -> anyhow::Result<String> {
    let cache = tempfile::tempdir()?.keep();
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache),
        ..RuntimeConfig::default()
    })?;
    let host = Host::builder()
        .runtime(runtime)
        .component(ComponentConfig::new(CALCULATOR))
        .mcp(McpConfig {
            per_caller: limits,
            ..McpConfig::default()
        })
        .build()
        .await?;
    let mut auth = ResourceServerConfig::new(issuer.url().parse()?, RESOURCE.parse()?);
    auth.scopes = vec!["mcp:tools".to_owned()];
    let options = HttpServerOptions {
        auth: Some(auth),
        ..HttpServerOptions::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let server = McpServer::new(Arc::new(host));
    tokio::spawn(serve_http(
        server,
        listener,
        options,
        std::future::pending(),
    ));
    Ok(url)
}

/// A client of `url` with a session, as the caller `token` names.
async fn client(url: &str, token: &str) -> HttpClient {
    let mut client = HttpClient::new(url);
    client
        .headers
        .push(("authorization".into(), format!("Bearer {token}")));
    client.initialize().await;
    client
}

/// One `tools/call` of `add`: the HTTP status (200 only with the right answer).
async fn call(client: &mut HttpClient) -> anyhow::Result<u16> {
    let (id, message) = client.message(
        "tools/call",
        json!({ "name": "add", "arguments": { "a": 1, "b": 2 } }),
    );
    let response = client.post(&message).send().await?;
    let status = response.status().as_u16();
    let body = response.text().await?;
    if status == 200 {
        let answer = messages(&body).into_iter().find(|m| m["id"] == json!(id));
        // The calculator declares an output schema: its result is structured.
        let sum = answer
            .as_ref()
            .map(|a| a["result"]["structuredContent"]["result"].clone());
        anyhow::ensure!(sum == Some(json!(3.0)), "a wrong answer: {body}");
    }
    Ok(status)
}

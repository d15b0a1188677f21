//! What telemetry costs a call: three `host mcp --http` processes side by side, in interleaved
//! rounds, each call a `tools/call` of the calculator's `add` on a kept-alive connection with
//! a session: telemetry off (`OTEL_SDK_DISABLED=true`: nothing recorded, no `/metrics`),
//! metrics on with traces exported but not sampled (`OTEL_TRACES_SAMPLER=always_off`), and
//! every call traced (`always_on`), its spans sent over OTLP/HTTP to a local server that takes
//! them (and answers as a collector does). The host binary is the build's
//! ([`host_binary`](toolhost_tests::host_binary): release for `just bench`).

use std::time::{Duration, Instant};

use toolhost_tests::cli::ManifestFile;
use toolhost_tests::mcp::HttpServer;
use toolhost_tests::server::{Reply, TestServer};

use super::over_http::call_add;
use super::{Bench, Stats, fmt, ratio};

/// Prints the section, and adds `telemetry_unsampled_over_off` and
/// `telemetry_sampled_over_off` to the summary.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let calls = bench.iterations;
    let collector = TestServer::start(|_| Reply::text(200, "")).await;
    let endpoint = collector.url();
    let manifest = ManifestFile::calculator("");
    let start = |env: Vec<(&'static str, String)>| {
        let manifest = manifest.arg().to_owned();
        async move {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let server = HttpServer::start(&[&manifest], &env).await;
            server.loaded().await;
            server
        }
    };
    let off = start(vec![("OTEL_SDK_DISABLED", "true".to_owned())]).await;
    let traced = |sampler: &str| {
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
            ("OTEL_TRACES_SAMPLER", sampler.to_owned()),
        ]
    };
    let unsampled = start(traced("always_off")).await;
    let sampled = start(traced("always_on")).await;
    let mut clients = Vec::new();
    for server in [&off, &unsampled, &sampled] {
        clients.push(server.client().await);
    }

    let rounds = 20;
    let per_round = (calls / rounds).max(10);
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..=rounds {
        for _ in 0..per_round {
            for (client, times) in clients.iter_mut().zip(&mut times) {
                let took = call_add(client).await?;
                if round > 0 {
                    times.push(took);
                }
            }
        }
    }
    let [off_times, unsampled_times, sampled_times] = times;
    let stats = [
        Stats::of(off_times),
        Stats::of(unsampled_times),
        Stats::of(sampled_times),
    ];
    // The spans go out in batches, every 5 s by default.
    let exports = || {
        (collector.requests().iter())
            .filter(|request| request.path == "/v1/traces")
            .count()
    };
    let waited = Instant::now();
    while exports() == 0 && waited.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exported = exports();
    anyhow::ensure!(exported > 0, "the sampled server exported no spans in 30 s");
    println!();
    println!(
        "MCP over HTTP: a call with telemetry off, metrics and unsampled traces, every call traced"
    );
    println!("{:<44} {:>12} {:>12}", "", "median", "p90");
    stats[0].row("  off (OTEL_SDK_DISABLED=true)");
    stats[1].row("  metrics, traces not sampled");
    stats[2].row("  metrics, every call traced (OTLP)");
    let unsampled_over = ratio(stats[1].median, stats[0].median);
    let sampled_over = ratio(stats[2].median, stats[0].median);
    let unsampled_cost = stats[1].median.saturating_sub(stats[0].median);
    let sampled_cost = stats[2].median.saturating_sub(stats[0].median);
    println!(
        "unsampled / off:              {unsampled_over:>8.2}x  ({} a call over off)",
        fmt(unsampled_cost)
    );
    println!(
        "sampled / off:                {sampled_over:>8.2}x  ({} a call over off; {exported} OTLP exports)",
        fmt(sampled_cost)
    );
    let summary = &mut bench.summary;
    summary.add(
        "telemetry_unsampled_over_off",
        format!("{unsampled_over:.2}"),
    );
    summary.add("telemetry_sampled_over_off", format!("{sampled_over:.2}"));
    summary.add(
        "telemetry_sampled_us_over_off",
        format!("{:.1}", sampled_cost.as_secs_f64() * 1e6),
    );
    Ok(())
}

//! `just bench`: what a sandboxed tool call costs, measured side by side in one run.
//!
//! - **host call**: `Toolbox::call` on the calculator's `add`: argument validation against the
//!   schema, a fresh store with grants and limits (memory limiter, CPU budget, timeout), a fresh
//!   instance from the pooling allocator, the call, and the result check;
//! - **raw call**: the same export called again and again on one instance kept alive, with no
//!   limits: the floor of what a call into wasm costs;
//! - **process per call**: spawning a tiny native binary that reads the arguments from stdin;
//! - **start**: loading the example tools with an empty compile cache, then with a warm one;
//! - **per component** of `example-tools/dist/` (every language): size, first compile, a
//!   load from the cache, and a call;
//! - **MCP** (`mcp.rs`): `host mcp` per call over stdio and HTTP against a minimal server,
//!   its start time and memory, and how soon a cancelled call frees its instance.
//!
//! Reports medians (and p90) and the ratios. No thresholds: the figures are for reading.

mod baseline;
mod components;
mod mcp;

use std::time::{Duration, Instant};

use toolhost::{CallContext, ComponentConfig, Runtime, RuntimeConfig, Toolbox};
use toolhost_tests::components::{CALCULATOR, CLOCK, FILES, WEATHER};

const ARGUMENTS: &str = r#"{"a": 1, "b": 2}"#;

fn main() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let iterations = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    // `BENCH=mcp just bench`: only the MCP section.
    if std::env::var("BENCH").as_deref() == Ok("mcp") {
        return mcp::report(iterations).await;
    }
    let cache = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })?;

    let cold = time_load(&runtime).await?;
    let warm = {
        let mut samples = Vec::new();
        for _ in 0..20 {
            samples.push(time_load(&runtime).await?);
        }
        Stats::of(samples)
    };

    let toolbox = Toolbox::builder(&runtime)
        .component(ComponentConfig::new(CALCULATOR))
        .build()
        .await?;
    let context = CallContext::default();
    let mut host = Vec::with_capacity(iterations);
    for i in 0..iterations + 100 {
        let started = Instant::now();
        let output = toolbox.call("add", ARGUMENTS, &context).await?;
        if i >= 100 {
            host.push(started.elapsed());
        }
        assert_eq!(output.text, "3.0");
    }
    let host = Stats::of(host);

    let raw =
        Stats::of(baseline::raw_calls(runtime.engine(), CALCULATOR, ARGUMENTS, iterations).await?);
    let process = Stats::of(baseline::process_calls(
        ARGUMENTS,
        (iterations / 10).max(50),
    )?);

    println!(
        "toolhost benchmark ({iterations} calls each; process: {} spawns)",
        process.count
    );
    println!();
    println!("{:<44} {:>12} {:>12}", "", "median", "p90");
    host.row("host call (fresh instance, limits on)");
    raw.row("raw call (one instance kept alive)");
    process.row("process spawned per call");
    println!();
    println!(
        "host call / raw call:        {:>8.1}x",
        ratio(host.median, raw.median)
    );
    println!(
        "process per call / host call: {:>7.1}x",
        ratio(process.median, host.median)
    );
    println!(
        "host call overhead over raw:  {:>8}",
        fmt(host.median.saturating_sub(raw.median))
    );
    println!();
    println!("start: load calculator, clock, files and weather");
    println!(
        "{:<44} {:>12}",
        "  empty compile cache (compiles)",
        fmt(cold)
    );
    println!(
        "{:<44} {:>12} {:>12}",
        "  warm compile cache",
        fmt(warm.median),
        fmt(warm.p90)
    );
    println!(
        "cold start / warm start:      {:>8.1}x",
        ratio(cold, warm.median)
    );

    components::report((iterations / 10).max(50)).await?;
    mcp::report(iterations).await?;

    println!();
    println!("memory: {}", memory_status());
    Ok(())
}

async fn time_load(runtime: &Runtime) -> anyhow::Result<Duration> {
    let configs = [CALCULATOR, CLOCK, FILES, WEATHER]
        .map(ComponentConfig::new)
        .to_vec();
    let started = Instant::now();
    let toolbox = Toolbox::builder(runtime)
        .components(configs)
        .build()
        .await?;
    let took = started.elapsed();
    assert_eq!(toolbox.names().len(), 8);
    Ok(took)
}

/// The process's resident memory now and at its peak, from /proc (Linux).
fn memory_status() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map_or_else(|| "?".to_owned(), |v| v.trim().to_owned())
    };
    format!(
        "resident {} now, {} at the peak (the whole run: compilers included)",
        field("VmRSS:"),
        field("VmHWM:")
    )
}

struct Stats {
    count: usize,
    median: Duration,
    p90: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Self {
            count: samples.len(),
            median: at(0.5),
            p90: at(0.9),
        }
    }

    fn row(&self, label: &str) {
        println!("{label:<44} {:>12} {:>12}", fmt(self.median), fmt(self.p90));
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} us")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

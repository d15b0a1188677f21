//! `just bench`: what a sandboxed tool call costs, measured side by side in one run.
//!
//! - **host call**: `Toolbox::call` on the calculator's `add`: argument validation against the
//!   schema, a fresh store with grants and limits (memory limiter, CPU budget, timeout), a fresh
//!   instance from the pooling allocator, the call, and the result check;
//! - **raw call**: the same export called again and again on one instance kept alive, with no
//!   limits: the floor of what a call into wasm costs;
//! - **process per call**: spawning a tiny native binary that reads the arguments from stdin;
//! - **start**: loading the example tools with an empty compile cache, then with a warm one;
//! - **per component** of `example-tools/dist/` (every language): size, first compile, a load
//!   from the cache, a call, and where a fresh-instance call's time goes (store, instantiation,
//!   the component's own start-up code, the call, teardown);
//! - **parallel calls**: throughput with 1, 2, 4 and 16 calls in flight, and a full pool (more
//!   calls than instance slots: they wait, and all succeed);
//! - **memory**, in a child process: a host with the eight example components loaded and idle,
//!   the increment per call in flight, and the growth over 100,000 calls.
//! - **MCP** (`mcp.rs`): `host mcp` per call over stdio and HTTP against a minimal server,
//!   its start time and memory, and how soon a cancelled call frees its instance
//!   (`BENCH=mcp just bench` for that part alone).
//!
//! - **access tokens** (`oauth.rs`): a call with a validated JWT against one with no auth.
//! - **two callers** (`fairness.rs`): a quiet caller's latency while another floods, without
//!   and with per-caller limits.
//! - **reports** (`reports.rs`): what a tool's progress reports and log lines cost a call;
//! - **a baseline host** (`mcp/versus.rs`, with `BENCH_BASELINE_HOST=path`): a text-only
//!   call through an older `host` binary against this one, over `host mcp` on stdio.
//!
//! Reports medians (and p90) and ratios; the last line has the key figures as `key=value`.
//! `BENCH=calls just bench` runs the first section alone (host, raw and process calls,
//! reports, the baseline host).
//! No thresholds: the figures are for reading. `BENCH_ITERATIONS` sets the number of host and
//! raw calls (2000); `BENCH_PROFILE=<component>` only calls that component in a loop for
//! `BENCH_SECONDS` (10), for a profiler such as `perf record`.

mod baseline;
mod components;
mod fairness;
mod mcp;
mod memory;
mod oauth;
mod parallel;
mod profile;
mod reports;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use toolhost::{CallContext, ComponentConfig, Runtime, RuntimeConfig, Toolbox};
use toolhost_tests::components::{CALCULATOR, CLOCK, FILES, WEATHER};

const ARGUMENTS: &str = r#"{"a": 1, "b": 2}"#;

fn main() -> anyhow::Result<()> {
    if std::env::var_os(memory::CHILD).is_some() {
        return memory::child();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Ok(name) = std::env::var("BENCH_PROFILE") {
        let seconds = env_number("BENCH_SECONDS", 10);
        return rt.block_on(profile::run(&name, Duration::from_secs(seconds as u64)));
    }
    rt.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let iterations = env_number("BENCH_ITERATIONS", 2000);
    let load_at_start = load_average();
    // `BENCH=mcp just bench`: only the MCP section.
    if std::env::var("BENCH").as_deref() == Ok("mcp") {
        return mcp::report(iterations).await;
    }
    // `BENCH=fairness just bench`: only the two-caller section.
    if std::env::var("BENCH").as_deref() == Ok("fairness") {
        let mut summary = Summary::default();
        fairness::report(iterations, &mut summary).await?;
        println!("{}", summary.line());
        return Ok(());
    }
    // `BENCH=oauth just bench`: only the access-token section.
    if std::env::var("BENCH").as_deref() == Ok("oauth") {
        let mut summary = Summary::default();
        oauth::report(iterations, &mut summary).await?;
        println!("{}", summary.line());
        return Ok(());
    }
    let cache = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })?;
    let mut summary = Summary::default();

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
    let (paced, spared) = paced_calls(&toolbox, &context, iterations).await?;
    let paced = Stats::of(paced);

    let raw =
        Stats::of(baseline::raw_calls(runtime.engine(), CALCULATOR, ARGUMENTS, iterations).await?);
    let process = Stats::of(baseline::process_calls(
        ARGUMENTS,
        (iterations / 10).max(50),
    )?);

    println!(
        "toolhost benchmark ({iterations} calls each; process: {} spawns; {} cores; load \
         average {load_at_start} at the start)",
        process.count,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!();
    println!("{:<44} {:>12} {:>12}", "", "median", "p90");
    host.row("host call (fresh instance, limits on)");
    paced.row("  the same, the host idle before each call");
    println!(
        "    ({spared} of {} found their instance made)",
        paced.count
    );
    raw.row("raw call (one instance kept alive)");
    process.row("process spawned per call");
    println!();
    let host_over_raw = ratio(host.median, raw.median);
    println!("host call / raw call:        {host_over_raw:>8.1}x");
    let paced_over_raw = ratio(paced.median, raw.median);
    println!("paced host call / raw call:  {paced_over_raw:>8.1}x");
    println!(
        "process per call / host call: {:>7.1}x",
        ratio(process.median, host.median)
    );
    println!(
        "host call overhead over raw:  {:>8}",
        fmt(host.median.saturating_sub(raw.median))
    );
    summary.add("host_over_raw", format!("{host_over_raw:.1}"));
    summary.add("host_call_us", micros(host.median));
    summary.add("raw_call_us", micros(raw.median));
    summary.add("paced_over_raw", format!("{paced_over_raw:.1}"));
    summary.add("paced_call_us", micros(paced.median));
    summary.add(
        "process_over_host",
        format!("{:.0}", ratio(process.median, host.median)),
    );
    reports::report(&runtime, iterations, &mut summary).await?;
    mcp::versus::report(iterations, &mut summary).await?;
    // `BENCH=calls just bench`: only the calls above.
    if std::env::var("BENCH").as_deref() == Ok("calls") {
        println!("{}", summary.line());
        return Ok(());
    }
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

    let loaded = components::report(&runtime, (iterations / 10).max(50), &mut summary).await?;
    parallel::report(&loaded, &mut summary).await?;
    memory::report(cache.path(), &mut summary)?;
    mcp::report(iterations).await?;
    oauth::report(iterations, &mut summary).await?;
    fairness::report(iterations, &mut summary).await?;

    println!();
    println!(
        "load average at the end: {} (other work on the machine shows in every figure)",
        load_average()
    );
    println!("{}", summary.line());
    Ok(())
}

/// Calls as they come from a model's turn or an MCP client: each after the host was idle for
/// 200 us, in which the last call's store is dropped and the next call's instance made (a
/// spare instance). Between a model's tool calls there are seconds; an MCP client's next call
/// comes at least a round trip after the answer (about 40 us over stdio here). The
/// back-to-back loop above leaves no such moment: its calls pay for that work too. Also
/// returns how many calls found their instance made.
async fn paced_calls(
    toolbox: &Toolbox,
    context: &CallContext,
    iterations: usize,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let component = toolbox
        .components()
        .next()
        .expect("the toolbox has the calculator");
    let mut samples = Vec::with_capacity(iterations);
    let mut spared = 0;
    for _ in 0..iterations {
        // Not a tokio timer: those tick in milliseconds. This thread runs no other task.
        std::thread::sleep(Duration::from_micros(200));
        spared += usize::from(component.has_spare_instance());
        let started = Instant::now();
        let output = toolbox.call("add", ARGUMENTS, context).await?;
        samples.push(started.elapsed());
        assert_eq!(output.text, "3.0");
    }
    Ok((samples, spared))
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

/// The key figures of the run, printed last as `key=value` pairs.
#[derive(Default)]
pub struct Summary {
    pairs: Vec<(String, String)>,
}

impl Summary {
    pub fn add(&mut self, key: &str, value: impl std::fmt::Display) {
        self.pairs.push((key.to_owned(), value.to_string()));
    }

    fn line(&self) -> String {
        let mut line = String::new();
        for (key, value) in &self.pairs {
            let _ = write!(
                line,
                "{}{key}={value}",
                if line.is_empty() { "" } else { " " }
            );
        }
        line
    }
}

/// The 1-minute load average, from /proc (Linux).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

pub struct Stats {
    count: usize,
    median: Duration,
    p90: Duration,
}

impl Stats {
    pub fn of(mut samples: Vec<Duration>) -> Self {
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

/// The median of `samples`.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// Microseconds, rounded, for the summary line.
pub fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

pub fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} us")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// The CPU time of the calling thread so far (Linux).
pub fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .map(Duration::from_nanos)
}

/// The minor page faults of the calling thread so far (Linux).
pub fn thread_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(7)?.parse().ok()
}

/// The CPU time of the whole process so far (Linux; in clock ticks of 10 ms).
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

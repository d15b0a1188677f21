//! The calculator's `add` through the host (back to back, and paced as calls come from a
//! model or an MCP client), against a raw call into an instance kept alive and a process
//! spawned per call.

use std::time::{Duration, Instant};

use toolhost::{CallContext, ComponentConfig, Toolbox};
use toolhost_tests::components::CALCULATOR;

use crate::{Bench, Stats, baseline, fmt, micros, ratio};

pub const ARGUMENTS: &str = r#"{"a": 1, "b": 2}"#;

/// Prints the calls and their ratios.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let iterations = bench.iterations;
    let warm_up = bench.scaled(100, 5);
    let toolbox = Toolbox::builder(&bench.runtime)
        .component(ComponentConfig::new(CALCULATOR))
        .build()
        .await?;
    let context = CallContext::default();
    let mut host = Vec::with_capacity(iterations);
    for i in 0..iterations + warm_up {
        let started = Instant::now();
        let output = toolbox.call("add", ARGUMENTS, &context).await?;
        if i >= warm_up {
            host.push(started.elapsed());
        }
        anyhow::ensure!(output.text == "3.0", "add answered {:?}", output.text);
    }
    let host = Stats::of(host);
    let (paced, spared) = paced_calls(&toolbox, &context, iterations).await?;
    let paced = Stats::of(paced);
    let raw = baseline::raw_calls(bench.runtime.engine(), CALCULATOR, ARGUMENTS, iterations);
    let raw = Stats::of(raw.await?);
    let spawns = (iterations / 10).max(bench.scaled(50, 3));
    let process = Stats::of(baseline::process_calls(ARGUMENTS, spawns)?);

    println!();
    println!(
        "calls ({iterations} each; process: {} spawns)",
        process.count
    );
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
    let process_over_host = ratio(process.median, host.median);
    println!("process per call / host call: {process_over_host:>7.1}x");
    println!(
        "host call overhead over raw:  {:>8}",
        fmt(host.median.saturating_sub(raw.median))
    );
    let summary = &mut bench.summary;
    summary.add("host_over_raw", format!("{host_over_raw:.1}"));
    summary.add("host_call_us", micros(host.median));
    summary.add("raw_call_us", micros(raw.median));
    summary.add("paced_over_raw", format!("{paced_over_raw:.1}"));
    summary.add("paced_call_us", micros(paced.median));
    summary.add("process_over_host", format!("{process_over_host:.0}"));
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
        anyhow::ensure!(output.text == "3.0", "add answered {:?}", output.text);
    }
    Ok((samples, spared))
}

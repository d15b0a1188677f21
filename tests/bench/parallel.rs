//! Calls in parallel: throughput with 1, 2, 4 and 16 calls in flight, and a full pool (more
//! calls in flight than instance slots: they wait for a slot, and all succeed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use toolhost::{CallContext, Runtime, RuntimeConfig, Toolbox};

use crate::components::Loaded;
use crate::{Bench, Summary, fmt, process_cpu, ratio};

const IN_FLIGHT: [usize; 4] = [1, 2, 4, 16];

/// Prints the throughput of the calculator and the Python component, then the full-pool run.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    anyhow::ensure!(
        !bench.loaded.is_empty(),
        "it calls the components the components section loaded: run both (BENCH=components,parallel)"
    );
    // Seconds per measurement, for the calculator and for Python.
    let [rust_seconds, python_seconds] = bench.scaled([1.0, 2.0], [0.05, 0.1]);
    let (loaded, summary) = (&bench.loaded, &mut bench.summary);
    println!();
    println!(
        "parallel calls: throughput with N calls in flight, each a task on the bench's tokio \
         runtime ({} worker threads)",
        tokio::runtime::Handle::current().metrics().num_workers()
    );
    println!(
        "and the process's CPU time per call (the same at every N when nothing contends; a \
         busy machine lowers the throughput, not this)"
    );
    println!(
        "{:<32} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "component, in flight", "1", "2", "4", "16", "1 -> 2"
    );
    let mut scaling = Vec::new();
    let mut contention: f64 = 0.0;
    for (name, seconds) in [
        ("calculator", rust_seconds),
        ("text-python", python_seconds),
    ] {
        let component = find(loaded, name)?;
        let (one_to_two, cpu_ratio) = row(name, component, seconds).await?;
        contention = contention.max(cpu_ratio);
        let key = if name == "calculator" {
            "rust"
        } else {
            "python"
        };
        summary.add(
            &format!("{key}_parallel_1_to_2"),
            format!("{one_to_two:.2}"),
        );
        scaling.push(one_to_two);
    }
    // Spare instances are made on the other core: the same component without them tells the
    // calls' contention with each other from the spares' own work.
    let one_to_two = without_spares(find(loaded, "text-python")?, python_seconds).await?;
    summary.add(
        "python_no_spares_parallel_1_to_2",
        format!("{one_to_two:.2}"),
    );
    if let Some(worst) = scaling.iter().copied().reduce(f64::min) {
        summary.add("parallel_1_to_2", format!("{worst:.2}"));
        summary.add("parallel_cpu_per_call_2_over_1", format!("{contention:.2}"));
    }
    full_pool(loaded, summary).await
}

/// [`row`] for `component` loaded in a runtime that makes no spare instances.
async fn without_spares(component: &Loaded, seconds: f64) -> anyhow::Result<f64> {
    let runtime = Runtime::new(RuntimeConfig {
        spare_instances: 0,
        ..RuntimeConfig::default()
    })?;
    let unspared = Loaded {
        toolbox: Arc::new(loaded_in(&runtime, component).await?),
        ..component.clone()
    };
    let label = format!("{}, no spares", component.name);
    Ok(row(&label, &unspared, seconds).await?.0)
}

/// Prints the throughput and CPU time per call of `component` at each number of calls in
/// flight, each for `seconds`; returns the ratios from 1 to 2 of the throughput and of the
/// CPU time per call.
async fn row(name: &str, component: &Loaded, seconds: f64) -> anyhow::Result<(f64, f64)> {
    let mut rates = Vec::new();
    let mut cpu = Vec::new();
    for in_flight in IN_FLIGHT {
        let run = Duration::from_secs_f64(seconds);
        // Warm as many instance slots as will be used before measuring.
        throughput(component, in_flight, run / 5).await?;
        let (rate, cpu_per_call) = throughput(component, in_flight, run).await?;
        rates.push(rate);
        cpu.push(cpu_per_call);
    }
    let one_to_two = rates[1] / rates[0];
    println!(
        "{:<32} {:>10} {:>10} {:>10} {:>10} {:>7.2}x",
        format!("{name}, calls/s"),
        format!("{:.0}", rates[0]),
        format!("{:.0}", rates[1]),
        format!("{:.0}", rates[2]),
        format!("{:.0}", rates[3]),
        one_to_two
    );
    println!(
        "{:<32} {:>10} {:>10} {:>10} {:>10}",
        "  CPU per call",
        fmt(cpu[0]),
        fmt(cpu[1]),
        fmt(cpu[2]),
        fmt(cpu[3]),
    );
    Ok((one_to_two, ratio(cpu[1], cpu[0])))
}

/// Calls per second with `in_flight` calls at all times, for about `run`, and the process's
/// CPU time per call.
async fn throughput(
    component: &Loaded,
    in_flight: usize,
    run: Duration,
) -> anyhow::Result<(f64, Duration)> {
    let cpu_before = process_cpu();
    let started = Instant::now();
    let deadline = started + run;
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let toolbox = component.toolbox.clone();
            let tool = component.tool.clone();
            let arguments = component.arguments.clone();
            tokio::spawn(async move {
                let context = CallContext::default();
                let mut calls = 0u64;
                while Instant::now() < deadline {
                    toolbox.call(&tool, &arguments, &context).await?;
                    calls += 1;
                }
                anyhow::Ok(calls)
            })
        })
        .collect();
    let mut calls = 0;
    for task in tasks {
        calls += task.await??;
    }
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    let cpu = process_cpu()
        .zip(cpu_before)
        .map_or(Duration::ZERO, |(after, before)| {
            after.saturating_sub(before) / u32::try_from(calls.max(1)).unwrap_or(u32::MAX)
        });
    Ok((rate, cpu))
}

/// A runtime with 4 instance slots and 4 times as many calls in flight: the calls beyond the
/// slots wait for one (their timeout counting) instead of failing. Each call (Python text
/// statistics over 60 KB of text) computes for longer than an epoch tick, so it yields and
/// the calls overlap.
async fn full_pool(loaded: &[Loaded], summary: &mut Summary) -> anyhow::Result<()> {
    const SLOTS: u32 = 4;
    const CALLS: usize = 16;
    let component = find(loaded, "text-python")?;
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: SLOTS,
        ..RuntimeConfig::default()
    })?;
    let toolbox = loaded_in(&runtime, component).await?;
    let source = toolbox
        .components()
        .next()
        .cloned()
        .context("the toolbox has the component")?;
    let text = "It was the best of times, it was the worst of times. ".repeat(1200);
    let arguments = serde_json::json!({ "text": text }).to_string();
    let started = Instant::now();
    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let source = source.clone();
            let arguments = arguments.clone();
            tokio::spawn(async move {
                let context = CallContext::default();
                let (result, phases) = source
                    .call_profiled("text_stats", &arguments, &context)
                    .await;
                result.map(|_| phases.queued)
            })
        })
        .collect();
    let mut succeeded = 0;
    let mut waits = Vec::new();
    let mut failures = Vec::new();
    for call in calls {
        match call.await? {
            Ok(waited) => {
                succeeded += 1;
                waits.push(waited);
            }
            Err(error) => failures.push(error.to_string()),
        }
    }
    let waited = waits.iter().filter(|w| !w.is_zero()).count();
    println!();
    println!(
        "full pool: {CALLS} calls in flight (text-python text_stats), {SLOTS} instance slots: \
         {succeeded} of {CALLS} succeeded in {}; {waited} waited for a slot, the longest {}",
        fmt(started.elapsed()),
        fmt(waits.iter().copied().max().unwrap_or_default())
    );
    for failure in failures.iter().take(3) {
        println!("  failed: {failure}");
    }
    summary.add("full_pool_ok", format!("{succeeded}/{CALLS}"));
    Ok(())
}

/// The loaded example component `name`.
fn find<'a>(loaded: &'a [Loaded], name: &str) -> anyhow::Result<&'a Loaded> {
    loaded
        .iter()
        .find(|c| c.name == name)
        .with_context(|| format!("the components section loaded no {name}"))
}

/// `component` loaded again in `runtime`, its code ready.
async fn loaded_in(runtime: &Runtime, component: &Loaded) -> anyhow::Result<Toolbox> {
    let toolbox = Toolbox::builder(runtime)
        .component(component.config.clone())
        .build()
        .await?;
    toolbox.prepare().await?;
    Ok(toolbox)
}

//! `BENCH_PROFILE=<component> just bench`: calls one example component in a loop and nothing
//! else, for a profiler (`perf record -g -- target/release/deps/calls-* --bench`), then prints
//! the phases of a call and the CPU time and page faults per call of the loop.

use std::time::{Duration, Instant};

use toolhost::{CallContext, CallPhases, ComponentConfig, Runtime, RuntimeConfig, Toolbox};
use toolhost_tests::conformance::subjects;

use super::{fmt, median, thread_cpu, thread_faults};

pub async fn run(name: &str, seconds: Duration) -> anyhow::Result<()> {
    let Some(subject) = subjects().into_iter().find(|s| s.name == name) else {
        let names: Vec<String> = subjects().into_iter().map(|s| s.name).collect();
        anyhow::bail!(
            "no example component {name}; there are {}",
            names.join(", ")
        );
    };
    let cases = subject.cases().map_err(anyhow::Error::msg)?;
    let Some(case) = cases.ok.first() else {
        anyhow::bail!("{name} has no `ok` case to call");
    };
    let mut config = ComponentConfig::new(&subject.wasm);
    config.grants = subject.grants(&cases);
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let toolbox = Toolbox::builder(&runtime).component(config).build().await?;
    let arguments = case.arguments.to_string();
    let context = CallContext::default();

    let mut phases = Vec::new();
    if let Some(component) = toolbox.components().next() {
        for _ in 0..100 {
            let (result, call) = component
                .call_profiled(&case.tool, &arguments, &context)
                .await;
            result?;
            phases.push(call);
        }
    }
    let of = |phase: fn(&CallPhases) -> Duration| fmt(median(phases.iter().map(phase).collect()));
    println!(
        "{name} {}: store {}, instantiate {}, init {}, call {} (in wasm {}, host functions {}), \
         teardown {}; host {}",
        case.tool,
        of(|p| p.store),
        of(|p| p.instantiate),
        of(|p| p.init),
        of(|p| p.call),
        of(|p| p.in_wasm),
        of(|p| p.host_calls),
        of(|p| p.teardown),
        of(CallPhases::host),
    );

    let (cpu_before, faults_before) = (thread_cpu(), thread_faults());
    let started = Instant::now();
    let mut calls = 0u32;
    while started.elapsed() < seconds {
        toolbox.call(&case.tool, &arguments, &context).await?;
        calls += 1;
    }
    let wall = started.elapsed();
    let cpu = thread_cpu()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let faults = thread_faults().zip(faults_before).map(|(a, b)| a - b);
    println!(
        "{calls} calls: {} each, {} of CPU each, {} page faults each",
        fmt(wall / calls.max(1)),
        cpu.map_or_else(|| "?".to_owned(), |cpu| fmt(cpu / calls.max(1))),
        faults.map_or_else(
            || "?".to_owned(),
            |f| format!("{:.1}", f as f64 / f64::from(calls.max(1)))
        ),
    );
    Ok(())
}

//! Per example tool component (every language): size, the first load (compiling), a load from
//! the compile cache, and the cost of a call through the host.

use std::time::{Duration, Instant};

use toolhost::sandbox::format_bytes;
use toolhost::{
    CallContext, CompileSource, ComponentConfig, LoadedComponent, Runtime, RuntimeConfig, Toolbox,
};
use toolhost_tests::conformance::subjects;

use super::{Stats, fmt};

/// Prints one row per component of `example-tools/dist/`.
pub async fn report(calls: usize) -> anyhow::Result<()> {
    println!();
    println!(
        "per component (release host; the call is the first `ok` case of its conformance.toml)"
    );
    println!(
        "{:<14} {:>10} {:>14} {:>14} {:>14} {:>12}",
        "component", "size", "first compile", "cached load", "call median", "call p90"
    );
    for subject in subjects() {
        if !subject.wasm.exists() {
            println!("{:<14} not built (just tools)", subject.name);
            continue;
        }
        let cases = subject.cases().map_err(anyhow::Error::msg)?;
        let cache = tempfile::tempdir()?;
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: Some(cache.path().to_owned()),
            ..RuntimeConfig::default()
        })?;
        let config = || {
            let mut config = ComponentConfig::new(&subject.wasm);
            config.grants = subject.grants(&cases);
            config
        };
        let first = LoadedComponent::load(&runtime, config()).await?;
        let compile = match first.compile_source() {
            CompileSource::Compiled { took } => took,
            CompileSource::Cache => anyhow::bail!("{}: the empty cache had it", subject.name),
        };
        let mut loads = Vec::new();
        for _ in 0..5 {
            loads.push(LoadedComponent::load(&runtime, config()).await?.load_time());
        }
        let loads = Stats::of(loads);

        let toolbox = Toolbox::builder(&runtime)
            .component(config())
            .build()
            .await?;
        let (median, p90) = match cases.ok.first() {
            Some(case) => {
                let arguments = case.arguments.to_string();
                let context = CallContext::default();
                let mut samples = Vec::with_capacity(calls);
                for i in 0..calls + 10 {
                    let started = Instant::now();
                    toolbox.call(&case.tool, &arguments, &context).await?;
                    if i >= 10 {
                        samples.push(started.elapsed());
                    }
                }
                let stats = Stats::of(samples);
                (fmt(stats.median), fmt(stats.p90))
            }
            None => ("(no ok case)".to_owned(), String::new()),
        };
        println!(
            "{:<14} {:>10} {:>14} {:>14} {:>14} {:>12}",
            subject.name,
            format_bytes(std::fs::metadata(&subject.wasm)?.len()),
            seconds(compile),
            fmt(loads.median),
            median,
            p90
        );
    }
    Ok(())
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

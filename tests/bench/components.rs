//! Per example tool component (every language): size, the first load (compiling), a load from
//! the compile cache, the cost of a call through the host, and where a fresh-instance call's
//! time goes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use toolhost::units::format_bytes;
use toolhost::{
    CallContext, CallPhases, CompileSource, ComponentConfig, LoadedComponent, Runtime,
    RuntimeConfig, Toolbox,
};
use toolhost_tests::conformance::subjects;

use super::{Stats, Summary, fmt, median, micros, thread_faults};

/// A loaded example component and the call its first `ok` case makes.
#[derive(Clone)]
pub struct Loaded {
    pub name: String,
    pub toolbox: Arc<Toolbox>,
    pub config: ComponentConfig,
    pub tool: String,
    pub arguments: String,
}

/// The language of an example component, for the summary's keys.
fn language(name: &str) -> &str {
    match name {
        "calculator" => "rust",
        "checksum-c" => "c",
        "wordcount-go" => "go",
        "json-js" => "js",
        "text-python" => "python",
        other => other,
    }
}

/// Prints one row per component of `example-tools/dist/`, then where the time of a call goes.
/// The components are compiled into `runtime`'s cache, and returned loaded.
pub async fn report(
    runtime: &Runtime,
    calls: usize,
    summary: &mut Summary,
) -> anyhow::Result<Vec<Loaded>> {
    println!();
    println!(
        "per component (release host; the call is the first `ok` case of its conformance.toml)"
    );
    println!(
        "{:<14} {:>10} {:>14} {:>14} {:>14} {:>12}",
        "component", "size", "first compile", "cached load", "call median", "call p90"
    );
    let mut loaded = Vec::new();
    for subject in subjects() {
        if !subject.wasm.exists() {
            println!("{:<14} not built (just tools)", subject.name);
            continue;
        }
        let cases = subject.cases().map_err(anyhow::Error::msg)?;
        let config = || {
            let mut config = ComponentConfig::new(&subject.wasm);
            config.grants = subject.grants(&cases);
            config
        };
        // The first compile, into a cache of its own: the run's cache may have the component
        // already (the start measurement loads the calculator).
        let fresh = tempfile::tempdir()?;
        let compiling = Runtime::new(RuntimeConfig {
            cache_dir: Some(fresh.path().to_owned()),
            ..RuntimeConfig::default()
        })?;
        let first = LoadedComponent::load(&compiling, config()).await?;
        let compile = match first.compile_source() {
            CompileSource::Compiled { took } => took,
            CompileSource::Cache => anyhow::bail!("{}: the empty cache had it", subject.name),
        };
        drop((first, compiling));
        LoadedComponent::load(runtime, config()).await?;
        let mut loads = Vec::new();
        for _ in 0..5 {
            loads.push(LoadedComponent::load(runtime, config()).await?.load_time());
        }
        let loads = Stats::of(loads);

        let toolbox = Toolbox::builder(runtime)
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
                loaded.push(Loaded {
                    name: subject.name.clone(),
                    toolbox: Arc::new(toolbox),
                    config: config(),
                    tool: case.tool.clone(),
                    arguments,
                });
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
    phases(&loaded, calls, summary).await?;
    Ok(loaded)
}

/// Where a fresh-instance call's time goes, per component: medians of `calls` profiled calls.
async fn phases(loaded: &[Loaded], calls: usize, summary: &mut Summary) -> anyhow::Result<()> {
    println!();
    println!(
        "where a fresh-instance call goes (medians of {calls} calls). host = store + \
         instantiate + teardown + the call outside the component's code; init and in wasm \
         are the component's own code, the host functions and wasmtime library calls it makes \
         included (host fns); faults: page faults per call, counted in the phase they hit"
    );
    println!(
        "{:<14} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "component",
        "store",
        "instantiate",
        "init",
        "call",
        "in wasm",
        "host fns",
        "teardown",
        "host",
        "faults"
    );
    for component in loaded {
        let Some(source) = component.toolbox.components().next() else {
            continue;
        };
        let context = CallContext::default();
        let mut all: Vec<CallPhases> = Vec::with_capacity(calls);
        let faults_before = thread_faults();
        for _ in 0..calls {
            let (result, phases) = source
                .call_profiled(&component.tool, &component.arguments, &context)
                .await;
            result?;
            all.push(phases);
        }
        let faults = thread_faults()
            .zip(faults_before)
            .map(|(after, before)| format!("{:.0}", (after - before) as f64 / calls as f64));
        let of = |phase: fn(&CallPhases) -> Duration| median(all.iter().map(phase).collect());
        let host = of(CallPhases::host);
        println!(
            "{:<14} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
            component.name,
            fmt(of(|p| p.store)),
            fmt(of(|p| p.instantiate)),
            fmt(of(|p| p.init)),
            fmt(of(|p| p.call)),
            fmt(of(|p| p.in_wasm)),
            fmt(of(|p| p.host_calls)),
            fmt(of(|p| p.teardown)),
            fmt(host),
            faults.unwrap_or_else(|| "?".to_owned()),
        );
        let language = language(&component.name);
        if ["rust", "c", "go", "js", "python"].contains(&language) {
            summary.add(&format!("{language}_host_us"), micros(host));
            summary.add(&format!("{language}_init_us"), micros(of(|p| p.init)));
            summary.add(&format!("{language}_in_wasm_us"), micros(of(|p| p.in_wasm)));
        }
    }
    Ok(())
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

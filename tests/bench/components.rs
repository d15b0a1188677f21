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

use crate::{
    Bench, Stats, Summary, fmt, median, micros, require_example_components, thread_faults,
};

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
/// The components are compiled into the run's cache, and kept loaded in `bench.loaded`.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    require_example_components()?;
    let calls = (bench.iterations / 10).max(bench.scaled(50, 3));
    let (loads, warm_up) = (bench.scaled(5, 1), bench.scaled(10, 2));
    let (runtime, smoke) = (&bench.runtime, bench.smoke());
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
        let cases = subject.cases().map_err(anyhow::Error::msg)?;
        let config = || {
            let mut config = ComponentConfig::new(&subject.wasm);
            config.grants = subject.grants(&cases);
            config
        };
        let size = std::fs::metadata(&subject.wasm)?.len();
        // A smoke run compiles only the small ones afresh: the big ones take a minute each.
        let compile = if smoke && size > SMOKE_COMPILE_SIZE {
            "(smoke run)".to_owned()
        } else {
            seconds(first_compile(&subject.name, config()).await?)
        };
        LoadedComponent::load(runtime, config()).await?;
        let loads = {
            let mut times = Vec::new();
            for _ in 0..loads {
                times.push(LoadedComponent::load(runtime, config()).await?.load_time());
            }
            Stats::of(times)
        };

        let toolbox = Toolbox::builder(runtime)
            .component(config())
            .build()
            .await?;
        let (median, p90) = match cases.ok.first() {
            Some(case) => {
                let arguments = case.arguments.to_string();
                let context = CallContext::default();
                let mut samples = Vec::with_capacity(calls);
                for i in 0..calls + warm_up {
                    let started = Instant::now();
                    toolbox.call(&case.tool, &arguments, &context).await?;
                    if i >= warm_up {
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
            format_bytes(size),
            compile,
            fmt(loads.median),
            median,
            p90
        );
    }
    phases(&loaded, calls, &mut bench.summary).await?;
    bench.loaded = loaded;
    Ok(())
}

/// The largest component a smoke run compiles afresh.
const SMOKE_COMPILE_SIZE: u64 = 1 << 20;

/// How long the first compile of `config`'s component takes, into a cache of its own (the
/// run's cache may have it already).
async fn first_compile(name: &str, config: ComponentConfig) -> anyhow::Result<Duration> {
    let fresh = tempfile::tempdir()?;
    let compiling = Runtime::new(RuntimeConfig {
        cache_dir: Some(fresh.path().to_owned()),
        ..RuntimeConfig::default()
    })?;
    match LoadedComponent::load(&compiling, config)
        .await?
        .compile_source()
    {
        CompileSource::Compiled { took } => Ok(took),
        CompileSource::Cache => anyhow::bail!("{name}: the empty cache had it"),
    }
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

//! Resident memory, measured in a child process (this binary again) so that nothing the
//! benchmark did before counts: a host with the example components loaded and idle, the
//! increment per call in flight, and the growth over 100,000 calls.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use toolhost::{
    CallContext, ComponentConfig, LoadedComponent, Manifest, Runtime, RuntimeConfig, SourceOptions,
    Toolbox,
};
use toolhost_tests::conformance::subjects;
use toolhost_tests::repo_root;

use crate::{Bench, require_example_components};

/// Set (to the compile cache's directory) when this process is the child.
pub const CHILD: &str = "TOOLHOST_BENCH_MEMORY_CHILD";
/// The calculator and the Python calls the child makes for the growth, as `N,M`.
const CALLS: &str = "TOOLHOST_BENCH_MEMORY_CALLS";

const IN_FLIGHT: usize = 16;

/// Runs the child, with the run's compile cache (the example components compiled into it
/// first, so that the child compiles nothing), and prints what it measured.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    require_example_components()?;
    for subject in subjects() {
        LoadedComponent::load(&bench.runtime, ComponentConfig::new(&subject.wasm)).await?;
    }
    let calculator_calls = bench.scaled(100_000, 200);
    let python_calls = bench.scaled(2_000, 10);
    let output = Command::new(std::env::current_exe()?)
        .env(CHILD, bench.cache_dir())
        .env(CALLS, format!("{calculator_calls},{python_calls}"))
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "the memory child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout)?;
    let value = |key: &str| -> anyhow::Result<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| anyhow::anyhow!("the memory child reported no {key}:\n{text}"))
    };
    let mib = |kib: f64| format!("{:.1} MiB", kib / 1024.0);
    let components = value("components")?;
    let loaded = value("loaded_kib")?;
    let prepared = value("prepared_kib")?;
    let idle = value("idle_kib")?;
    println!();
    println!(
        "memory (resident, a fresh process with a warm compile cache; the pool keeps the pages \
         a call touched resident in its slot for the next call)"
    );
    println!(
        "  {components} example components loaded (tools from the cache): {}",
        mib(loaded)
    );
    let summary = &mut bench.summary;
    println!(
        "  their code loaded:                               {}",
        mib(prepared)
    );
    println!(
        "  each called once, then idle:                     {}",
        mib(idle)
    );
    for name in ["calculator", "python"] {
        let per_call = value(&format!("{name}_per_call_kib"))?;
        println!(
            "  {IN_FLIGHT} {name} calls in flight: {per_call:.0} KiB more per call in flight (peak)"
        );
        summary.add(
            &format!("{name}_per_call_in_flight_kib"),
            format!("{per_call:.0}"),
        );
    }
    let growth = value("growth_kib")?;
    println!(
        "  growth over {calculator_calls} calculator and {python_calls} Python calls, two at a \
         time (after the above): {growth:+.0} KiB (from {} to {}); calculator {:+.0} KiB, \
         Python {:+.0} KiB; of it private (not the components' code and data images mapped \
         from the cache) {:+.0} KiB",
        mib(value("before_kib")?),
        mib(value("after_kib")?),
        value("growth_calculator_kib")?,
        value("growth_text-python_kib")?,
        value("anon_growth_kib")?,
    );
    summary.add("idle_rss_mib", format!("{:.0}", idle / 1024.0));
    summary.add("growth_100k_calls_kib", format!("{growth:.0}"));
    Ok(())
}

/// The child: loads the example components and measures.
pub fn child() -> anyhow::Result<()> {
    let cache = std::env::var_os(CHILD).map(PathBuf::from);
    let counts: Vec<usize> = std::env::var(CALLS)
        .context("the parent sets the number of calls")?
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let [calculator_calls, python_calls] = counts[..] else {
        anyhow::bail!("{CALLS} is not N,M");
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: cache,
            ..RuntimeConfig::default()
        })?;
        let (configs, calls) = configs()?;
        println!("components={}", configs.len());
        let toolbox = Arc::new(
            Toolbox::builder(&runtime)
                .components(configs)
                .build()
                .await?,
        );
        println!("loaded_kib={}", status("VmRSS")?);
        toolbox.prepare().await?;
        println!("prepared_kib={}", status("VmRSS")?);
        let context = CallContext::default();
        for (tool, arguments) in calls.values() {
            toolbox.call(tool, arguments, &context).await?;
        }
        println!("idle_kib={}", status("VmRSS")?);

        let call_of = |name: &str| {
            calls
                .get(name)
                .with_context(|| format!("{name} has no `ok` case in its conformance.toml"))
        };
        for (key, name) in [("calculator", "calculator"), ("python", "text-python")] {
            let (tool, arguments) = call_of(name)?;
            let before = status("VmRSS")?;
            reset_peak()?;
            in_flight(&toolbox, tool, arguments, IN_FLIGHT, IN_FLIGHT).await?;
            let peak = status("VmHWM")?;
            println!(
                "{key}_per_call_kib={}",
                peak.saturating_sub(before) as f64 / IN_FLIGHT as f64
            );
        }

        let before = status("VmRSS")?;
        let anon_before = status("RssAnon")?;
        let started = Instant::now();
        for (name, count) in [
            ("calculator", calculator_calls),
            ("text-python", python_calls),
        ] {
            let (tool, arguments) = call_of(name)?;
            let before = status("VmRSS")?;
            in_flight(&toolbox, tool, arguments, 2, count).await?;
            println!(
                "growth_{name}_kib={}",
                status("VmRSS")? as i64 - before as i64
            );
        }
        let after = status("VmRSS")?;
        println!(
            "anon_growth_kib={}",
            status("RssAnon")? as i64 - anon_before as i64
        );
        println!("before_kib={before}");
        println!("after_kib={after}");
        println!("growth_kib={}", after as i64 - before as i64);
        println!("growth_took_s={:.1}", started.elapsed().as_secs_f64());
        anyhow::Ok(())
    })
}

/// The call each component's first `ok` case makes (tool, arguments), by component.
type Calls = BTreeMap<String, (String, String)>;

/// What the child loads: every example component with the grants of its conformance cases
/// and the example manifest's options; and the call each makes.
fn configs() -> anyhow::Result<(Vec<ComponentConfig>, Calls)> {
    let mut configs = Vec::new();
    let mut calls = Calls::new();
    let mut options = manifest_options()?;
    for subject in subjects() {
        let cases = subject.cases().map_err(anyhow::Error::msg)?;
        let mut config = ComponentConfig::new(&subject.wasm);
        config.grants = subject.grants(&cases);
        config.options = options
            .remove(&std::fs::canonicalize(&subject.wasm)?)
            .with_context(|| {
                format!(
                    "example-tools/toolhost.toml has no component at {}; add it",
                    subject.wasm.display()
                )
            })?;
        configs.push(config);
        if let Some(case) = cases.ok.first() {
            calls.insert(
                subject.name,
                (case.tool.clone(), case.arguments.to_string()),
            );
        }
    }
    Ok((configs, calls))
}

/// The options (such as `exclude`) the example manifest gives each component, by its file:
/// the memory measured is that of the tools the manifest offers, and the manifest is kept
/// right by its loader (an `exclude` naming a tool the component lacks is refused).
fn manifest_options() -> anyhow::Result<HashMap<PathBuf, SourceOptions>> {
    let manifest = Manifest::load(&repo_root().join("example-tools/toolhost.toml"))?;
    ComponentConfig::from_manifest(&manifest)
        .into_iter()
        .map(|config| Ok((std::fs::canonicalize(&config.path)?, config.options)))
        .collect()
}

/// Makes `total` calls, `in_flight` at a time.
async fn in_flight(
    toolbox: &Arc<Toolbox>,
    tool: &str,
    arguments: &str,
    in_flight: usize,
    total: usize,
) -> anyhow::Result<()> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let (toolbox, next) = (toolbox.clone(), next.clone());
            let (tool, arguments) = (tool.to_owned(), arguments.to_owned());
            tokio::spawn(async move {
                let context = CallContext::default();
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < total {
                    toolbox.call(&tool, &arguments, &context).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// A field of /proc/self/status in KiB (Linux).
fn status(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("/proc/self/status has no {field}"))
}

/// Starts measuring the peak resident memory (VmHWM) afresh.
fn reset_peak() -> anyhow::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")?;
    Ok(())
}

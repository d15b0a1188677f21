//! Resident memory, measured in a child process (this binary again) so that nothing the
//! benchmark did before counts: a host with the eight example components loaded and idle, the
//! increment per call in flight, and the growth over 100,000 calls.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use toolhost::{CallContext, ComponentConfig, Runtime, RuntimeConfig, Toolbox};
use toolhost_tests::conformance::subjects;

use super::Summary;

/// Set (to the compile cache's directory) when this process is the child.
pub const CHILD: &str = "TOOLHOST_BENCH_MEMORY_CHILD";

const IN_FLIGHT: usize = 16;
const CALCULATOR_CALLS: usize = 100_000;
const PYTHON_CALLS: usize = 2_000;

/// Runs the child, with `cache` (where the example components are compiled already), and
/// prints what it measured.
pub fn report(cache: &Path, summary: &mut Summary) -> anyhow::Result<()> {
    let output = Command::new(std::env::current_exe()?)
        .env(CHILD, cache)
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
        "  growth over {CALCULATOR_CALLS} calculator and {PYTHON_CALLS} Python calls, two at a \
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
    let cache = std::env::var_os(CHILD).map(std::path::PathBuf::from);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: cache,
            ..RuntimeConfig::default()
        })?;
        let mut configs = Vec::new();
        let mut calls = Vec::new();
        for subject in subjects().into_iter().filter(|s| s.wasm.exists()) {
            let cases = subject.cases().map_err(anyhow::Error::msg)?;
            let mut config = ComponentConfig::new(&subject.wasm);
            config.grants = subject.grants(&cases);
            // Two components have a test-only tool of this name, as in the example manifest.
            config.options.exclude.insert("isolation_check".to_owned());
            configs.push(config);
            if let Some(case) = cases.ok.first() {
                calls.push((subject.name, case.tool.clone(), case.arguments.to_string()));
            }
        }
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
        for (_, tool, arguments) in &calls {
            toolbox.call(tool, arguments, &context).await?;
        }
        println!("idle_kib={}", status("VmRSS")?);

        for (key, name) in [("calculator", "calculator"), ("python", "text-python")] {
            let Some((_, tool, arguments)) = calls.iter().find(|(n, ..)| n == name) else {
                continue;
            };
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
            ("calculator", CALCULATOR_CALLS),
            ("text-python", PYTHON_CALLS),
        ] {
            if let Some((_, tool, arguments)) = calls.iter().find(|(n, ..)| n == name) {
                let before = status("VmRSS")?;
                in_flight(&toolbox, tool, arguments, 2, count).await?;
                println!(
                    "growth_{name}_kib={}",
                    status("VmRSS")? as i64 - before as i64
                );
            }
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

//! What reporting costs a call (tool contract 0.2's `report`), with an observer attached as
//! `host mcp` attaches one: the misbehave guest's `report` tool reporting progress 1,000
//! times through the SDK (which passes only news to the host), calling the WIT import itself
//! 1,000 times (as a tool without the SDK would), and reporting progress and a log line
//! 1,000 times each; each against the same tool reporting nothing, alternating with it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use toolhost::sandbox::{CallObserver, LogLevel, Observer, Progress};
use toolhost::{CallContext, ComponentConfig, Toolbox};
use toolhost_tests::components::MISBEHAVE;

use crate::{Bench, Stats, fmt, ratio};

/// Counts the reports it is given, as an MCP client's forwarding would take them.
#[derive(Default)]
struct Counter(AtomicUsize);

impl CallObserver for Counter {
    fn progress(&self, _: &str, _: &Progress) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn log(&self, _: &str, _: LogLevel, _: &str) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// One kind of reporting call against silent calls alternating with it.
struct Pair {
    silent: Stats,
    loud: Stats,
    /// Reports that crossed into the host per reporting call.
    crossings: u64,
    /// Reports passed on to the observer per reporting call (the rate bound's doing).
    passed_on: u64,
}

impl Pair {
    fn ratio(&self) -> f64 {
        ratio(self.loud.median, self.silent.median)
    }

    /// What one crossing into the host costs: the reporting call's extra time over the
    /// silent one's, per crossing (the component's own work for the reports included).
    fn per_crossing(&self) -> Duration {
        let extra = self.loud.median.saturating_sub(self.silent.median);
        extra / u32::try_from(self.crossings.max(1)).unwrap_or(u32::MAX)
    }

    fn print(&self, label: &str) {
        println!();
        self.silent.row("a call that reports nothing");
        self.loud.row(&format!("  {label}"));
        println!(
            "    {:.2}x the silent call; {} crossings into the host, {} each; {} passed on",
            self.ratio(),
            self.crossings,
            fmt(self.per_crossing()),
            self.passed_on,
        );
    }
}

/// Prints what reporting costs a call.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let toolbox = Toolbox::builder(&bench.runtime)
        .component(ComponentConfig::new(MISBEHAVE))
        .build()
        .await?;
    let observer = Arc::new(Counter::default());
    let context = CallContext {
        observer: Some(Observer(observer.clone())),
        ..CallContext::default()
    };
    let rounds = (bench.iterations / 10).max(bench.scaled(50, 3));
    let sdk = pair(
        &toolbox,
        &context,
        rounds,
        r#"{"times": 1000, "log": false}"#,
    )
    .await?;
    sdk.print("progress 1000x (SDK)");
    let direct = r#"{"times": 1000, "log": false, "direct": true}"#;
    let direct = pair(&toolbox, &context, rounds, direct).await?;
    direct.print("progress 1000x (the WIT import itself)");
    let logging = pair(&toolbox, &context, rounds, r#"{"times": 1000}"#).await?;
    logging.print("progress (SDK) and a log line 1000x each");
    println!(
        "progress 1000x / silent:      {:>8.2}x (SDK), {:.2}x (WIT import)",
        sdk.ratio(),
        direct.ratio()
    );
    let summary = &mut bench.summary;
    summary.add("progress_1000_over_silent", format!("{:.2}", sdk.ratio()));
    summary.add(
        "progress_wit_1000_over_silent",
        format!("{:.2}", direct.ratio()),
    );
    let ns = |d: Duration| d.as_nanos();
    summary.add("progress_crossing_ns", ns(direct.per_crossing()));
    Ok(())
}

/// Calls `report` with `arguments` and silently, alternating, `rounds` times each, so that
/// both meet the same conditions (a heavier call before a light one slows the light one).
async fn pair(
    toolbox: &Toolbox,
    context: &CallContext,
    rounds: usize,
    arguments: &str,
) -> anyhow::Result<Pair> {
    let (mut silent, mut loud) = (Vec::new(), Vec::new());
    let (mut crossings, mut passed_on) = (0, 0);
    for _ in 0..rounds {
        let started = Instant::now();
        toolbox.call("report", r#"{"times": 0}"#, context).await?;
        silent.push(started.elapsed());
        let started = Instant::now();
        let output = toolbox.call("report", arguments, context).await?;
        loud.push(started.elapsed());
        crossings = output.reports.progress + output.reports.log_lines;
        passed_on = output.reports.passed_on;
    }
    Ok(Pair {
        silent: Stats::of(silent),
        loud: Stats::of(loud),
        crossings,
        passed_on,
    })
}

//! `BENCH_BASELINE_HOST=path`: a text-only call through another `host` binary (an older
//! build) against this one, side by side in one run. The rest of the benchmark measures the
//! library in this process, which cannot hold two versions of it; two binaries are compared
//! where both are whole: each serves the calculator over `host mcp` on stdio, and the same
//! raw JSON-RPC client calls `add` on each in turn, in interleaved rounds (the first round
//! is warm-up), so that both meet the same machine. The floor (a server that answers at once)
//! runs in the same rounds: what is above it is the host's part of a call.
//!
//! `BENCH_BASELINE_COMPONENT=path` is the calculator the baseline serves (this build's by
//! default), for a host that cannot load this build's component (one from before contract
//! 0.2 loads only 0.1 components); this host then serves that component too, so that the
//! difference of the hosts alone shows next to that of hosts and components together.
//!
//! A smoke run without `BENCH_BASELINE_HOST` compares this host with itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::host_binary;

use super::FLOOR;
use super::client::Lines;
use crate::{Bench, Stats, Summary, fmt, micros, ratio};

/// One server of the comparison.
struct Contender {
    label: String,
    server: Lines,
    samples: Vec<Duration>,
    /// Keeps the server's compile cache until the end.
    _cache: Option<tempfile::TempDir>,
}

impl Contender {
    async fn host(label: String, host: &Path, component: &str) -> anyhow::Result<Self> {
        let cache = tempfile::tempdir()?;
        let cache_dir = cache.path().to_str().context("a UTF-8 temp path")?;
        let program = host.to_str().context("a UTF-8 path")?;
        let mut server = Lines::spawn(program, &["--cache-dir", cache_dir, "mcp", component])
            .await
            .with_context(|| format!("{label}: `{program} mcp {component}` did not start"))?;
        server.wait_for_tools().await.with_context(|| {
            format!("{label}: `{program} mcp {component}` did not load its tools")
        })?;
        Ok(Self {
            label,
            server,
            samples: Vec::new(),
            _cache: Some(cache),
        })
    }

    async fn floor() -> anyhow::Result<Self> {
        Ok(Self {
            label: "floor (answers at once)".to_owned(),
            server: Lines::spawn(FLOOR, &[]).await?,
            samples: Vec::new(),
            _cache: None,
        })
    }
}

/// Prints the comparison if `BENCH_BASELINE_HOST` names a host binary (or in a smoke run).
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let this = host_binary();
    let named = std::env::var_os("BENCH_BASELINE_HOST").map(PathBuf::from);
    let Some(baseline) = named.or_else(|| bench.scaled(None, Some(this.clone()))) else {
        println!();
        println!("(no baseline host: BENCH_BASELINE_HOST=path compares this one with it)");
        return Ok(());
    };
    anyhow::ensure!(
        baseline.is_file(),
        "BENCH_BASELINE_HOST={} is not a file: name a `host` binary (such as an older release \
         build)",
        baseline.display()
    );
    let component = std::env::var("BENCH_BASELINE_COMPONENT").unwrap_or(CALCULATOR.to_owned());
    let mut contenders = vec![
        Contender::host("this host".to_owned(), &this, CALCULATOR).await?,
        Contender::host("baseline host".to_owned(), &baseline, &component).await?,
    ];
    if component != CALCULATOR {
        let label = "this host, the baseline's component".to_owned();
        contenders.push(Contender::host(label, &this, &component).await?);
    }
    contenders.push(Contender::floor().await?);

    let rounds = bench.scaled(20, 2);
    let per_round = (bench.iterations / rounds).max(10);
    for round in 0..=rounds {
        // Each round starts with another server, so that none always follows the same one.
        let n = contenders.len();
        for i in 0..n {
            let contender = &mut contenders[(round + i) % n];
            for _ in 0..per_round {
                let took = contender.server.call().await?;
                if round > 0 {
                    contender.samples.push(took);
                }
            }
        }
    }
    print(
        &baseline,
        &component,
        rounds,
        per_round,
        contenders,
        &mut bench.summary,
    );
    Ok(())
}

fn print(
    baseline: &Path,
    component: &str,
    rounds: usize,
    per_round: usize,
    contenders: Vec<Contender>,
    summary: &mut Summary,
) {
    let stats: Vec<(String, Stats)> = contenders
        .into_iter()
        .map(|c| (c.label, Stats::of(c.samples)))
        .collect();
    let floor = stats.last().map_or(Duration::ZERO, |(_, s)| s.median);
    println!();
    println!(
        "a text-only call (calculator `add`) over host mcp stdio, this host against {}; {rounds} \
         interleaved rounds of {per_round} calls each",
        baseline.display()
    );
    if component != CALCULATOR {
        println!("  (the baseline serves {component})");
    }
    println!(
        "{:<44} {:>12} {:>12} {:>14}",
        "", "median", "p90", "above floor"
    );
    for (label, stats) in &stats {
        println!(
            "{label:<44} {:>12} {:>12} {:>14}",
            fmt(stats.median),
            fmt(stats.p90),
            fmt(stats.median.saturating_sub(floor))
        );
    }
    let (this, base) = (&stats[0].1, &stats[1].1);
    let whole = ratio(this.median, base.median);
    let above = ratio(
        this.median.saturating_sub(floor),
        base.median.saturating_sub(floor),
    );
    println!("this host / baseline host:    {whole:>8.2}x (above the floor: {above:.2}x)");
    summary.add("versus_baseline", format!("{whole:.2}"));
    summary.add("versus_baseline_above_floor", format!("{above:.2}"));
    summary.add("versus_this_us", micros(this.median));
    summary.add("versus_baseline_us", micros(base.median));
}

//! The start of a host: loading four example tools with an empty compile cache (compiling
//! them), then again and again with the cache it filled.

use std::time::{Duration, Instant};

use toolhost::{ComponentConfig, Runtime, RuntimeConfig, Toolbox};
use toolhost_tests::components::{CALCULATOR, CLOCK, FILES, WEATHER};

use crate::{Bench, Stats, fmt, ratio};

/// The tools of the four components.
const TOOLS: usize = 8;

/// Prints the cold and the warm start.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    // A cache of its own: the other sections fill the run's.
    let cache = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })?;
    let cold = time_load(&runtime).await?;
    let mut warm = Vec::new();
    for _ in 0..bench.scaled(20, 2) {
        warm.push(time_load(&runtime).await?);
    }
    let warm = Stats::of(warm);
    println!();
    println!("start: load calculator, clock, files and weather");
    println!(
        "{:<44} {:>12}",
        "  empty compile cache (compiles)",
        fmt(cold)
    );
    println!(
        "{:<44} {:>12} {:>12}",
        "  warm compile cache",
        fmt(warm.median),
        fmt(warm.p90)
    );
    let cold_over_warm = ratio(cold, warm.median);
    println!("cold start / warm start:      {cold_over_warm:>8.1}x");
    bench
        .summary
        .add("cold_over_warm_start", format!("{cold_over_warm:.0}"));
    Ok(())
}

async fn time_load(runtime: &Runtime) -> anyhow::Result<Duration> {
    let configs = [CALCULATOR, CLOCK, FILES, WEATHER]
        .map(ComponentConfig::new)
        .to_vec();
    let started = Instant::now();
    let toolbox = Toolbox::builder(runtime)
        .components(configs)
        .build()
        .await?;
    let took = started.elapsed();
    let names = toolbox.names();
    anyhow::ensure!(
        names.len() == TOOLS,
        "the four components offer {TOOLS} tools, not {names:?}"
    );
    Ok(took)
}

//! `just eval`: asks every request of tests/eval/suite.toml of the model (the default local
//! one unless the flags say otherwise) with the whole example manifest, and prints the score
//! per category of the development half and of the held-out half side by side, the totals,
//! the median time per request, and the scores recorded before (tests/eval/scores.toml: the
//! held-out half before and after a change). See tests/support/eval/ for the scoring.
//!
//! ```text
//! eval [--half dev|held_out] [--only CATEGORY[,CATEGORY]] [--case N[,N]] [--json FILE]
//!      [--max-rounds N] [--system TEXT] [--temperature T] [--tool-limit N|all] [--rank]
//! ```
//!
//! While changing the local model's rules, run `--half dev`: the held-out half measures a
//! change only as long as it was not made by looking at it.
//!
//! `--rank` asks no model: it prints the tools selection offers each request, and how often
//! one that answers it is among them. Every run ends with the time selection takes over 500
//! tools.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use toolhost::agent::{AgentConfig, RunOptions, ToolIndex, ToolLimit, offer};
use toolhost::llm::local::SmallModelRules;
use toolhost::llm::{LocalFormat, ModelRules};
use toolhost::{Host, ToolSpec};
use toolhost_tests::eval::{
    Case, Half, Recorded, Setup, Suite, Verdict, line, report, synthetic_tools,
};

#[derive(Default)]
struct Flags {
    half: Option<Half>,
    only: Vec<String>,
    cases: Vec<usize>,
    json: Option<PathBuf>,
    agent: AgentConfig,
    rank: bool,
}

fn flags() -> anyhow::Result<Flags> {
    let mut flags = Flags::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--half" => flags.half = Some(value()?.parse().map_err(anyhow::Error::msg)?),
            "--only" => flags.only = value()?.split(',').map(str::to_owned).collect(),
            "--case" => {
                for n in value()?.split(',') {
                    flags.cases.push(n.parse().context("--case takes numbers")?);
                }
            }
            "--json" => flags.json = Some(value()?.into()),
            "--max-rounds" => flags.agent.max_rounds = Some(value()?.parse()?),
            "--system" => flags.agent.system = Some(value()?),
            "--temperature" => flags.agent.temperature = Some(value()?.parse()?),
            "--tool-limit" => {
                flags.agent.tool_limit = Some(value()?.parse().map_err(anyhow::Error::msg)?);
            }
            "--rank" => flags.rank = true,
            "-h" | "--help" => {
                println!(
                    "eval [--half dev|held_out] [--only CATEGORY,..] [--case N,..] [--json FILE] \
                     [--max-rounds N] [--system TEXT] [--temperature T] [--tool-limit N|all] [--rank]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown flag {other}; see --help"),
        }
    }
    Ok(flags)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

impl Flags {
    fn wants(&self, number: usize, case: &Case) -> bool {
        self.half.is_none_or(|half| half == case.half)
            && (self.only.is_empty() || self.only.contains(&case.category))
            && (self.cases.is_empty() || self.cases.contains(&number))
    }
}

/// What selection offers each request, without a model (with the local model's hints).
async fn rank(flags: &Flags, suite: &Suite, setup: &Setup) -> anyhow::Result<()> {
    let host = Host::builder()
        .manifest(&setup.manifest)
        .agent(flags.agent.clone())
        .build()
        .await?;
    let limit = match host.agent_options().tool_limit {
        ToolLimit::Top(k) => k,
        ToolLimit::All => usize::MAX,
    };
    let specs = host.specs();
    let index = ToolIndex::with_rules(&specs, Arc::new(SmallModelRules::new(LocalFormat::OpenAi)));
    let mut found = 0;
    let mut wanted = 0;
    let mut offered_total = 0;
    for (i, case) in suite.cases.iter().enumerate() {
        if !flags.wants(i + 1, case) {
            continue;
        }
        wanted += 1;
        let ranked = index.rank_text(&case.request);
        let offered: Vec<&str> = offer(ranked.clone(), limit)
            .iter()
            .map(|&(at, _)| index.name(at))
            .collect();
        let hit = offered
            .iter()
            .any(|name| case.tools.iter().any(|t| t == name));
        found += usize::from(hit);
        let shown: Vec<String> = ranked
            .iter()
            .take(5)
            .map(|&(at, score)| format!("{} {score:.1}", index.name(at)))
            .collect();
        println!(
            "{} {:>2} {:?}\n      offered: {}; ranked: {}",
            if hit { "ok  " } else { "MISS" },
            i + 1,
            case.request,
            offered.join(", "),
            shown.join(", ")
        );
        offered_total += offered.len();
    }
    println!(
        "an answering tool is offered for {found}/{wanted} requests (at most {limit} tools, \
         {:.1} on average)",
        offered_total as f32 / wanted.max(1) as f32
    );
    Ok(())
}

/// The time ranking takes over `n` tools (the loaded ones and made-up ones), per request of
/// the suite, with the model's `rules`.
fn time_selection(
    loaded: &[ToolSpec],
    rules: Arc<dyn ModelRules>,
    suite: &Suite,
    n: usize,
) -> String {
    let mut specs = loaded.to_vec();
    specs.extend(synthetic_tools(n.saturating_sub(loaded.len())));
    let built = Instant::now();
    let index = ToolIndex::with_rules(&specs, rules);
    let build = built.elapsed();
    let mut times = Vec::new();
    for _ in 0..20 {
        for case in &suite.cases {
            let started = Instant::now();
            let offered: Vec<&str> = index
                .rank_text(&case.request)
                .into_iter()
                .take(3)
                .map(|(at, _)| index.name(at))
                .collect();
            std::hint::black_box(offered);
            times.push(started.elapsed());
        }
    }
    times.sort();
    format!(
        "selection over {} tools: median {:.0} µs, slowest {:.0} µs per request; index built once in {:.1} ms ({} build)",
        specs.len(),
        times[times.len() / 2].as_secs_f64() * 1e6,
        times[times.len() - 1].as_secs_f64() * 1e6,
        build.as_secs_f64() * 1e3,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let flags = flags()?;
    let suite = Suite::load();
    let setup = Setup::start().await;
    if flags.rank {
        rank(&flags, &suite, &setup).await?;
        return Ok(());
    }
    let started = Instant::now();
    let host = Host::builder()
        .manifest(&setup.manifest)
        .agent(flags.agent.clone())
        .connect_model(true)
        .build()
        .await
        .context("loading the example manifest and the model")?;
    let agent = host.agent().await?;
    println!(
        "{} tools (offered: {}), {}; set up in {:.1} s; load average {}",
        host.toolbox().catalog().len(),
        host.agent_options().tool_limit,
        agent.provider().describe(),
        started.elapsed().as_secs_f64(),
        load_average()
    );
    let options = RunOptions::default();
    let mut verdicts: Vec<Verdict> = Vec::new();
    for (index, case) in suite.cases.iter().enumerate() {
        let number = index + 1;
        if !flags.wants(number, case) {
            continue;
        }
        let verdict = toolhost_tests::eval::run_case(&agent, &options, &setup, case).await;
        print!("{}", line(number, &verdict));
        verdicts.push(verdict);
    }
    println!();
    print!("{}", report(&verdicts));
    println!(
        "whole run {:.0} s; load average {}",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    print!("{}", Recorded::load()?.table());
    println!(
        "{}",
        time_selection(&host.specs(), agent.provider().rules(), &suite, 500)
    );
    if let Some(path) = &flags.json {
        std::fs::write(path, serde_json::to_string_pretty(&verdicts)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

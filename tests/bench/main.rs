//! `just bench`: what a sandboxed tool call costs, measured side by side in one run.
//!
//! The sections, in the order they run ([`SECTIONS`]; `BENCH=calls,mcp just bench` runs
//! those alone):
//!
//! - **calls** (`calls.rs`): `Toolbox::call` on the calculator's `add` (argument validation
//!   against the schema, a fresh store with grants and limits, a fresh instance from the
//!   pooling allocator, the call, the result check), back to back and paced; the same export
//!   called on one instance kept alive with no limits (the floor of a call into wasm); a
//!   process spawned per call;
//! - **reports** (`reports.rs`): what a tool's progress reports and log lines cost a call;
//! - **versus** (`mcp/versus.rs`, with `BENCH_BASELINE_HOST=path`): a text-only call through
//!   an older `host` binary against this one, over `host mcp` on stdio;
//! - **start** (`start.rs`): loading four example tools with an empty compile cache, then
//!   with a warm one;
//! - **components** (`components.rs`) of `example-tools/dist/` (every language): size, first
//!   compile, a load from the cache, a call, and where a fresh-instance call's time goes;
//! - **parallel** (`parallel.rs`): throughput with 1, 2, 4 and 16 calls in flight, and a full
//!   pool (more calls than instance slots: they wait, and all succeed);
//! - **memory** (`memory.rs`), in a child process: the eight example components loaded and
//!   idle, the increment per call in flight, and the growth over 100,000 calls;
//! - **mcp** (`mcp/`): `host mcp` per call over stdio and HTTP against a minimal server, its
//!   start time and memory, and how soon a cancelled call frees its instance;
//! - **oauth** (`oauth.rs`): a call with a validated (cached) JWT access token against one with
//!   no auth, over `host mcp --http`;
//! - **fairness** (`fairness.rs`): a quiet caller's latency while another floods, without and
//!   with per-caller limits;
//! - **tasks** (`tasks.rs`): a call run as a task (the create, then `tasks/get` until the
//!   result), and one `tasks/get` of a task still working (a poll), each against a plain
//!   call, with the tasks in memory and in Redis.
//! - **code_mode** (`code_mode.rs`): one program per language (a fresh JavaScript runner,
//!   then a fresh Python one, one nested call) next to a plain call, and a multi-step task's
//!   model turns and request bytes with and without code mode, in both wire formats.
//! - **telemetry** (`telemetry.rs`): a call with telemetry off, with metrics and unsampled
//!   traces, and with every call traced and exported over OTLP, side by side.
//!
//! A new section is a module with an `async fn report(bench: &mut Bench)` and a line in
//! [`SECTIONS`].
//!
//! Reports medians (and p90) and ratios; the last line has the key figures as `key=value`.
//! No thresholds: the figures are for reading. A section that cannot measure what it says
//! (a component not built, a server that lists no tools) fails the run.
//!
//! `BENCH_SMOKE=1` is the smoke run `just test` makes (on the debug build): every section
//! with a few iterations, figures printed but meaningless, so that a change that breaks the
//! benchmark shows at once. `BENCH_ITERATIONS` sets the number of host and raw calls (2000);
//! `BENCH_PROFILE=<component>` only calls that component in a loop for `BENCH_SECONDS` (10),
//! for a profiler such as `perf record`.

mod baseline;
mod calls;
mod code_mode;
mod components;
mod fairness;
mod mcp;
mod memory;
mod oauth;
mod over_http;
mod parallel;
mod profile;
mod reports;
mod start;
mod tasks;
mod telemetry;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::LocalBoxFuture;
use toolhost::{Runtime, RuntimeConfig};
use toolhost_tests::conformance::subjects;
use toolhost_tests::target_dir;

use components::Loaded;

/// What the sections share.
pub struct Bench {
    /// Host and raw calls per measurement; the other sections scale from it.
    pub iterations: usize,
    /// A smoke run: a few iterations of everything.
    smoke: bool,
    /// The run's runtime, its compile cache in `cache_dir`.
    pub runtime: Runtime,
    cache_dir: PathBuf,
    /// Holds `cache_dir` when it is the run's own.
    _cache: Option<tempfile::TempDir>,
    /// The example components the components section loaded, for the parallel section.
    pub loaded: Vec<Loaded>,
    /// The key figures, printed last.
    pub summary: Summary,
}

impl Bench {
    /// `full` in a full run, `smoke` in a smoke run.
    pub fn scaled<T>(&self, full: T, smoke: T) -> T {
        if self.smoke { smoke } else { full }
    }

    /// Whether this is a smoke run.
    pub fn smoke(&self) -> bool {
        self.smoke
    }

    /// The run's compile cache.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }
}

/// A section of the benchmark: its name for `BENCH=`, and what runs it.
pub struct Section {
    name: &'static str,
    run: for<'a> fn(&'a mut Bench) -> LocalBoxFuture<'a, anyhow::Result<()>>,
}

/// Every section, in the order a run makes them.
const SECTIONS: &[Section] = &[
    Section {
        name: "calls",
        run: |bench| Box::pin(calls::report(bench)),
    },
    Section {
        name: "reports",
        run: |bench| Box::pin(reports::report(bench)),
    },
    Section {
        name: "versus",
        run: |bench| Box::pin(mcp::versus::report(bench)),
    },
    Section {
        name: "start",
        run: |bench| Box::pin(start::report(bench)),
    },
    Section {
        name: "components",
        run: |bench| Box::pin(components::report(bench)),
    },
    Section {
        name: "parallel",
        run: |bench| Box::pin(parallel::report(bench)),
    },
    Section {
        name: "memory",
        run: |bench| Box::pin(memory::report(bench)),
    },
    Section {
        name: "mcp",
        run: |bench| Box::pin(mcp::report(bench)),
    },
    Section {
        name: "oauth",
        run: |bench| Box::pin(oauth::report(bench)),
    },
    Section {
        name: "fairness",
        run: |bench| Box::pin(fairness::report(bench)),
    },
    Section {
        name: "tasks",
        run: |bench| Box::pin(tasks::report(bench)),
    },
    Section {
        name: "code_mode",
        run: |bench| Box::pin(code_mode::report(bench)),
    },
    Section {
        name: "telemetry",
        run: |bench| Box::pin(telemetry::report(bench)),
    },
];

fn main() -> anyhow::Result<()> {
    if std::env::var_os(memory::CHILD).is_some() {
        return memory::child();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Ok(name) = std::env::var("BENCH_PROFILE") {
        let seconds = env_number("BENCH_SECONDS", 10);
        return rt.block_on(profile::run(&name, Duration::from_secs(seconds as u64)));
    }
    rt.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let smoke = std::env::var_os("BENCH_SMOKE").is_some_and(|v| v != "0");
    let sections = chosen_sections()?;
    // A full run compiles into a cache of its own. A smoke run uses the one the tests filled
    // (`just test` runs it after them): the sections that measure compiling still do, into
    // empty caches of their own, and the rest need not compile the big components again.
    let (cache_dir, cache) = if smoke {
        (target_dir().join("test-compile-cache"), None)
    } else {
        let cache = tempfile::tempdir()?;
        (cache.path().to_owned(), Some(cache))
    };
    let mut bench = Bench {
        iterations: env_number("BENCH_ITERATIONS", if smoke { 20 } else { 2000 }),
        smoke,
        runtime: Runtime::new(RuntimeConfig {
            cache_dir: Some(cache_dir.clone()),
            ..RuntimeConfig::default()
        })?,
        cache_dir,
        _cache: cache,
        loaded: Vec::new(),
        summary: Summary::default(),
    };
    println!(
        "toolhost benchmark: {} ({} host and raw calls; {} cores; load average {} at the start)",
        if smoke {
            "SMOKE RUN, a few iterations of every section: the figures mean nothing"
        } else {
            "release build"
        },
        bench.iterations,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
    );
    for section in sections {
        (section.run)(&mut bench)
            .await
            .map_err(|error| error.context(format!("the bench's {} section", section.name)))?;
    }
    if smoke {
        // The profiling mode too, briefly.
        profile::run("calculator", Duration::from_millis(100)).await?;
    }
    println!();
    println!(
        "load average at the end: {} (other work on the machine shows in every figure)",
        load_average()
    );
    println!("{}", bench.summary.line());
    Ok(())
}

/// The sections `BENCH` names (comma-separated), or all of them.
fn chosen_sections() -> anyhow::Result<Vec<&'static Section>> {
    let Ok(names) = std::env::var("BENCH") else {
        return Ok(SECTIONS.iter().collect());
    };
    names
        .split(',')
        .map(|name| {
            SECTIONS
                .iter()
                .find(|section| section.name == name.trim())
                .ok_or_else(|| {
                    let known: Vec<&str> = SECTIONS.iter().map(|s| s.name).collect();
                    anyhow::anyhow!(
                        "BENCH={names}: there is no section {name:?}; name some of {} \
                         (comma-separated), or unset BENCH for all",
                        known.join(", ")
                    )
                })
        })
        .collect()
}

/// Fails unless every example component is built: a section that skipped the missing ones
/// would report figures of fewer components than it says.
pub fn require_example_components() -> anyhow::Result<()> {
    let missing: Vec<String> = subjects()
        .into_iter()
        .filter(|subject| !subject.wasm.exists())
        .map(|subject| subject.wasm.display().to_string())
        .collect();
    anyhow::ensure!(
        missing.is_empty(),
        "the example components {} are not built; run `just tools`",
        missing.join(", ")
    );
    Ok(())
}

/// The key figures of the run, printed last as `key=value` pairs.
#[derive(Default)]
pub struct Summary {
    pairs: Vec<(String, String)>,
}

impl Summary {
    pub fn add(&mut self, key: &str, value: impl std::fmt::Display) {
        self.pairs.push((key.to_owned(), value.to_string()));
    }

    fn line(&self) -> String {
        let mut line = String::new();
        for (key, value) in &self.pairs {
            let _ = write!(
                line,
                "{}{key}={value}",
                if line.is_empty() { "" } else { " " }
            );
        }
        line
    }
}

/// The 1-minute load average, from /proc (Linux).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

pub struct Stats {
    count: usize,
    median: Duration,
    p90: Duration,
}

impl Stats {
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Self {
            count: samples.len(),
            median: at(0.5),
            p90: at(0.9),
        }
    }

    fn row(&self, label: &str) {
        println!("{label:<44} {:>12} {:>12}", fmt(self.median), fmt(self.p90));
    }
}

/// The median of `samples`.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// Microseconds, rounded, for the summary line.
pub fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

pub fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} us")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// The CPU time of the calling thread so far (Linux).
pub fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .map(Duration::from_nanos)
}

/// The minor page faults of the calling thread so far (Linux).
pub fn thread_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(7)?.parse().ok()
}

/// The CPU time of the whole process so far (Linux; in clock ticks of 10 ms).
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

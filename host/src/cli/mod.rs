//! The `host` command line: argument definitions and the commands.

mod approve;
#[cfg(feature = "mcp-client")]
mod auth;
mod call;
mod check;
#[cfg(feature = "mcp-client")]
mod conformance;
mod form;
mod input;
mod inspect;
#[cfg(feature = "oci")]
mod lock;
#[cfg(feature = "mcp-server")]
mod mcp;
mod new;
mod output;
mod progress;
#[cfg(feature = "oci")]
mod pull;
#[cfg(feature = "oci")]
mod push;
mod run;
mod session;
#[cfg(feature = "oci")]
mod sign;
mod telemetry;
mod tools;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args as ClapArgs, Parser, Subcommand};
use toolhost::sandbox::{DirGrant, EnvGrant, HostPattern, LimitsConfig};
use toolhost::units::{ByteSize, HumanDuration};
use toolhost::{ComponentConfig, Grants, HostBuilder, Runtime, RuntimeConfig};

use telemetry::Traces;

pub use output::{is_broken_pipe, print_error};

/// How a command ended, as its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It did what was asked (0).
    Success,
    /// The tool call or the run failed (1).
    Failure,
    /// The command could not be carried out: bad usage, a manifest or component that cannot
    /// be loaded, a model that cannot be reached (2).
    Error,
    /// Interrupted by Ctrl-C (130).
    Interrupted,
    /// Stopped by SIGTERM (143).
    Terminated,
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(match status {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
            ExitStatus::Interrupted => 130,
            ExitStatus::Terminated => 143,
        })
    }
}

/// Run LLM tools as sandboxed WebAssembly components.
///
/// Each tool is a WebAssembly component (built from Rust, Python, JavaScript, C, Go, ...) that
/// runs with only the capabilities it is granted: no files, no environment variables and no
/// network unless you say so.
#[derive(Debug, Parser)]
#[command(name = "host", version, propagate_version = true, max_term_width = 100)]
pub struct Args {
    #[command(subcommand)]
    command: Command,

    /// Where compiled components are cached [default: ~/.cache/toolhost/components]
    #[arg(
        long,
        global = true,
        env = "TOOLHOST_COMPONENT_CACHE",
        value_name = "DIR"
    )]
    cache_dir: Option<PathBuf>,

    /// Compile every component at every start, without the cache
    #[arg(long, global = true)]
    no_cache: bool,

    /// Log more (-v: info, -vv: debug); RUST_LOG overrides it
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what a component offers: its tools, their descriptions and argument schemas, the
    /// capabilities they request, and the interfaces it imports
    Inspect(inspect::InspectArgs),
    /// Run one tool without a model and print its result
    ///
    /// Examples:
    ///   host call calculator.wasm square_root '{"x": 2}'
    ///   host call files.wasm list_files '{"path": "/data"}' --dir ./data::/data
    ///   host call weather.wasm current_weather '{"city": "Paris"}' --allow-http wttr.in
    ///   host call example-tools/toolhost.toml add '{"a": 1, "b": 2}'
    #[command(verbatim_doc_comment)]
    Call(Box<call::CallArgs>),
    /// List the components and tools a manifest loads, with what each is granted
    Tools(tools::ToolsArgs),
    /// Check a component before sharing it, and print the checklist; exit status 1 when a
    /// check fails
    ///
    /// For the component: it loads, and its `describe` is valid (names legal and unique,
    /// schemas valid JSON Schema). For each tool: its description and arguments are described;
    /// a call with example arguments made from its input schema returns; the result fits its
    /// output schema; arguments that are not JSON, miss a required field or have a field of the
    /// wrong type come back as invalid-arguments saying what to send; and it uses nothing it
    /// did not request. Nothing is granted unless the grant flags say so.
    ///
    /// Examples:
    ///   host check dist/calculator.wasm
    ///   host check dist/files.wasm --dir ./testdata::/data
    ///   host check dist/weather.wasm --json     # for CI
    #[command(verbatim_doc_comment)]
    Check(Box<check::CheckArgs>),
    /// Write a new tool project: one tool, its build script, a test and a README
    ///
    /// The project builds with one command (`./build.sh`, into dist/NAME.wasm) using the
    /// toolchains `just setup` installs, and passes `host check` as it is; it needs nothing of
    /// toolhost's repository.
    ///
    /// Examples:
    ///   host new --lang rust my-tool
    ///   host new --lang python my-tool && cd my-tool && ./test.sh
    #[command(verbatim_doc_comment)]
    New(new::NewArgs),
    /// Ask a model one question; it may call the manifest's tools, which run sandboxed
    ///
    /// The answer streams to stdout; tool calls and results go to stderr. Without a [model]
    /// section or --model, the local model (llama-server with Gemma 3 270M) is started and
    /// stopped with the command.
    ///
    /// Examples:
    ///   host run -m example-tools/toolhost.toml "What is the square root of 475695037565?"
    ///   host run --model openai:gpt-4o-mini "What time is it in Tokyo?"
    ///   host run --model openai:qwen3 --base-url http://127.0.0.1:11434/v1 "..."
    #[command(verbatim_doc_comment)]
    Run(Box<run::RunArgs>),
    /// Chat with a model that may call the manifest's tools; the conversation is kept
    Chat(Box<run::ChatArgs>),
    /// Serve the tools over MCP, to any MCP client: stdio by default, Streamable HTTP with
    /// --http
    ///
    /// On stdio, stdout carries only JSON-RPC; logs and the tools' output go to stderr (and,
    /// line by line, to the client as logging notifications). SIGTERM stops taking calls,
    /// lets those running finish (up to --shutdown-timeout) and exits 0: a stop asked for and
    /// done cleanly (other commands exit 143 on SIGTERM).
    ///
    /// Examples:
    ///   host mcp example-tools/toolhost.toml
    ///   host mcp example-tools/toolhost.toml --http 127.0.0.1:8080
    ///   host mcp files.wasm --dir ./data::/data --allow-http api.example.com
    #[command(verbatim_doc_comment)]
    #[cfg(feature = "mcp-server")]
    Mcp(Box<mcp::McpArgs>),
    /// Fetch a component from an OCI registry into the cache, verified against its digest
    /// (and its signature with --key); afterwards it works with the registry stopped
    ///
    /// Examples:
    ///   host pull oci://registry.example.com/tools/calculator:1
    ///   host pull oci://127.0.0.1:5000/tools/calculator:1 --key keys/acme.pub
    #[command(verbatim_doc_comment)]
    #[cfg(feature = "oci")]
    Pull(pull::PullArgs),
    /// Upload a component to an OCI registry (CNCF wasm artifact layout: oras and wkg read it)
    ///
    /// Credentials: ~/.docker/config.json (`docker login`, `oras login`), or
    /// TOOLHOST_REGISTRY=HOST[:PORT] with TOOLHOST_REGISTRY_USERNAME and
    /// TOOLHOST_REGISTRY_PASSWORD.
    ///
    /// Example:
    ///   host push example-tools/dist/calculator.wasm oci://registry.example.com/tools/calculator:1
    #[command(verbatim_doc_comment)]
    #[cfg(feature = "oci")]
    Push(push::PushArgs),
    /// Sign a component in a registry the way `cosign sign --key` does
    #[cfg(feature = "oci")]
    Sign(sign::SignArgs),
    /// Pin every oci:// component of a manifest to its digest, in toolhost.lock beside it
    #[cfg(feature = "oci")]
    Lock(lock::LockArgs),
    /// Log in to the manifest's MCP servers that ask for authorization (OAuth), see the
    /// logins, log out
    ///
    /// Examples:
    ///   host auth login notes -m toolhost.toml
    ///   host auth status -m toolhost.toml
    ///   host auth logout notes -m toolhost.toml
    #[command(verbatim_doc_comment)]
    #[cfg(feature = "mcp-client")]
    Auth(auth::AuthArgs),
    /// The client under test of the MCP conformance suite's client leg (for the suite)
    #[command(hide = true)]
    #[cfg(feature = "mcp-client")]
    ConformanceClient(conformance::ConformanceClientArgs),
}

impl Command {
    /// Whether this is `host mcp`, which drains on SIGTERM and logs the tools' output.
    fn is_mcp(&self) -> bool {
        #[cfg(feature = "mcp-server")]
        if matches!(self, Command::Mcp(_)) {
            return true;
        }
        false
    }
}

/// Runs the command `args` names.
pub async fn run(args: Args) -> anyhow::Result<ExitStatus> {
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: if args.no_cache {
            None
        } else {
            args.cache_dir.or_else(toolhost::default_cache_dir)
        },
        on_compile: Some(progress::compile_progress()),
        ..RuntimeConfig::default()
    })?;
    // `host mcp` drains on SIGTERM itself: calls in flight finish, up to a deadline.
    let drains_on_sigterm = args.command.is_mcp();
    let work = async {
        match args.command {
            Command::Inspect(command) => command.run(&runtime).await,
            Command::Call(command) => command.run(&runtime).await,
            Command::Tools(command) => command.run(&runtime).await,
            Command::Check(command) => command.run(&runtime).await,
            Command::New(command) => command.run(),
            Command::Run(command) => command.run(&runtime).await,
            Command::Chat(command) => command.run(&runtime).await,
            #[cfg(feature = "mcp-server")]
            Command::Mcp(command) => command.run(&runtime).await,
            #[cfg(feature = "oci")]
            Command::Pull(command) => command.run().await,
            #[cfg(feature = "oci")]
            Command::Push(command) => command.run().await,
            #[cfg(feature = "oci")]
            Command::Sign(command) => command.run().await,
            #[cfg(feature = "oci")]
            Command::Lock(command) => command.run().await,
            #[cfg(feature = "mcp-client")]
            Command::Auth(command) => command.run().await,
            #[cfg(feature = "mcp-client")]
            Command::ConformanceClient(command) => command.run(&runtime).await,
        }
    };
    // On Ctrl-C or SIGTERM the work is dropped, which stops a local model server and the
    // MCP servers with it (their process groups are killed).
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = work => result,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted");
            Ok(ExitStatus::Interrupted)
        }
        _ = terminate.recv(), if !drains_on_sigterm => {
            eprintln!("terminated");
            Ok(ExitStatus::Terminated)
        }
    }
}

/// The most rmcp's OAuth module may log (its debug lines carry codes and tokens).
const NO_SECRETS_IN_LOGS: &str = "rmcp::transport::auth=info";

/// What of toolhost's spans and events is exported as traces (when export is on): its spans
/// (info) and the phases of a call (debug, under `toolhost::phase`), none of another crate's.
const EXPORTED: &str = "off,toolhost=info,toolhost::phase=debug";

/// Logs go to stderr, so stdout carries only results. Tool output is logged at info level.
/// Spans go out over OTLP too when the `OTEL_EXPORTER_OTLP_*` variables ask for it (see
/// [`Traces::start`]); the exports run on `runtime`, and the returned value sends what is
/// left when dropped.
pub fn init_logging(
    args: &Args,
    runtime: tokio::runtime::Handle,
) -> anyhow::Result<Option<Traces>> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _};

    // Dependencies only speak up for errors unless asked: their warnings (a refused
    // connection of a tool, say) are reported by toolhost itself where they matter.
    let mut default = match args.verbose {
        0 => "error,toolhost=warn,host=warn",
        1 => "warn,toolhost=info,host=info",
        _ => "info,toolhost=debug,host=debug",
    }
    .to_owned();
    // A server has no other place to show the tools' output and rmcp's warnings.
    if args.command.is_mcp() && args.verbose == 0 {
        default.push_str(",rmcp=warn,toolhost::tool_output=info");
    }
    // rmcp's OAuth module writes authorization codes and token responses at debug level:
    // never shown, whatever RUST_LOG says, so no secret reaches a log.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default))
        .add_directive(NO_SECRETS_IN_LOGS.parse().expect("a valid directive"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colours for a terminal only: not in a log file or an MCP client's log pane.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let registry = tracing_subscriber::registry().with(logs);
    match Traces::start(runtime)? {
        Some((traces, layer)) => {
            registry
                .with(layer.with_filter(EnvFilter::new(EXPORTED)))
                .init();
            Ok(Some(traces))
        }
        None => {
            registry.init();
            Ok(None)
        }
    }
}

/// Grants given on the command line.
#[derive(Debug, Clone, Default, ClapArgs)]
#[command(next_help_heading = "Grants (nothing is granted unless given here)")]
pub struct GrantArgs {
    /// Let the tool read a host directory, seen by the tool as GUEST (default: the same path)
    #[arg(long = "dir", value_name = "HOST[::GUEST]", value_parser = |s: &str| DirGrant::parse(s, false))]
    dirs: Vec<DirGrant>,

    /// Let the tool read and write a host directory
    #[arg(long = "dir-rw", value_name = "HOST[::GUEST]", value_parser = |s: &str| DirGrant::parse(s, true))]
    dirs_rw: Vec<DirGrant>,

    /// Pass an environment variable: NAME takes the host's value, NAME=VALUE sets one
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    env: Vec<EnvGrant>,

    /// Allow outgoing HTTP to a host: example.com, example.com:8080, *.example.com
    #[arg(long = "allow-http", value_name = "HOST")]
    http: Vec<HostPattern>,

    /// Allow raw TCP/UDP connections to HOST:PORT
    #[arg(long = "socket", value_name = "HOST:PORT")]
    sockets: Vec<HostPattern>,

    /// Resolve the tool's relative paths in this granted directory (its guest path)
    #[arg(long = "workdir", value_name = "GUEST_DIR")]
    workdir: Option<String>,
}

impl GrantArgs {
    fn to_grants(&self) -> Grants {
        Grants {
            dirs: self.dirs.iter().chain(&self.dirs_rw).cloned().collect(),
            env: self.env.clone(),
            http: self.http.clone(),
            sockets: self.sockets.clone(),
            workdir: self.workdir.clone(),
        }
    }
}

/// `--http HOST`, the name `--allow-http` had before `host mcp --http ADDR` gave `--http` its
/// one meaning (an address to listen on). Hidden; `host call` and `host check` still take it,
/// with a warning, so that scripts written for it keep working.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct OldHttpFlag {
    #[arg(long = "http", id = "old_http", value_name = "HOST", hide = true)]
    http: Vec<HostPattern>,
}

impl OldHttpFlag {
    /// `grants` with the hosts given as `--http`, after a warning that names the new flag.
    fn added_to(&self, grants: &GrantArgs) -> GrantArgs {
        let mut grants = grants.clone();
        if !self.http.is_empty() {
            eprintln!("warning: `--http HOST` is deprecated here; use `--allow-http HOST`");
            grants.http.extend(self.http.iter().cloned());
        }
        grants
    }
}

/// Limits given on the command line.
#[derive(Debug, Clone, Default, ClapArgs)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Memory limit, like 64MiB [default: 128MiB]
    #[arg(long, value_name = "SIZE")]
    memory: Option<ByteSize>,
    /// CPU time limit, like 2s [default: 10s]
    #[arg(long, value_name = "DURATION")]
    cpu_time: Option<HumanDuration>,
    /// Wall-clock limit, waiting included, like 30s [default: 30s]
    #[arg(long, value_name = "DURATION")]
    timeout: Option<HumanDuration>,
    /// Largest result, like 1MiB [default: 1MiB]
    #[arg(long, value_name = "SIZE")]
    max_result: Option<ByteSize>,
}

impl LimitArgs {
    fn config(&self) -> LimitsConfig {
        LimitsConfig {
            memory: self.memory,
            cpu_time: self.cpu_time,
            timeout: self.timeout,
            max_result: self.max_result,
            max_log: None,
        }
    }
}

/// Whether `path` names a manifest rather than a component.
fn is_manifest(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "toml")
}

/// What `host call` and `host mcp` serve: a manifest's tools, or one component's with the
/// grants of the command line (which a manifest does not take: its grants are in it).
fn tools_of(host: HostBuilder, target: &Path, grants: &GrantArgs) -> anyhow::Result<HostBuilder> {
    if is_manifest(target) {
        if !grants.to_grants().is_empty() {
            anyhow::bail!(
                "grant flags apply to a single component; with a manifest, put the grants in {}",
                target.display()
            );
        }
        Ok(host.manifest(target))
    } else {
        let mut config = ComponentConfig::new(target);
        config.grants = grants.to_grants();
        Ok(host.component(config))
    }
}

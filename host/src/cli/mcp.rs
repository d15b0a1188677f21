//! `host mcp`: serve the tools of a manifest (or of one component) over MCP, on stdio or
//! Streamable HTTP.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use toolhost::mcp::server::auth::ResourceServerConfig;
use toolhost::mcp::server::{self, HttpServerOptions, McpServer, StdioOptions};
use toolhost::units::{ByteSize, HumanDuration};
use toolhost::{Host, Manifest, McpConfig, PerCallerLimits, Runtime, TasksSection};

use super::telemetry::Telemetry;
use super::{ExitStatus, GrantArgs, LimitArgs, is_manifest, tools_of};

// `--http ADDR` is the address to listen on; the outgoing-HTTP grant is `--allow-http`, as in
// every command.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// A manifest (.toml), or a single component (.wasm or oci://REGISTRY/REPO:TAG) with the
    /// grants given here
    #[arg(default_value = "toolhost.toml")]
    target: PathBuf,

    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8080 (port 0
    /// takes a free one; the address is printed on stderr)
    #[arg(long = "http", id = "listen", value_name = "ADDR")]
    listen: Option<SocketAddr>,

    /// Accept this Host header too (HOST or HOST:PORT); loopback names are always accepted
    #[arg(long = "allowed-host", value_name = "HOST", requires = "listen")]
    allowed_hosts: Vec<String>,

    /// Accept this browser Origin too (scheme://host:port, `:*` for any port)
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "listen")]
    allowed_origins: Vec<String>,

    /// Require `Authorization: Bearer <token>`, the token being the value of this
    /// environment variable; needed to listen on an address other than loopback
    #[arg(long = "token-env", value_name = "VAR", requires = "listen")]
    token_env: Option<String>,

    /// Take OAuth access tokens from this authorization server (its issuer URL) instead of a
    /// static token: a resource server, as the manifest's [mcp.auth] (which these flags
    /// override)
    #[arg(long, value_name = "URL", requires = "listen")]
    auth_issuer: Option<url::Url>,

    /// With --auth-issuer: this server's resource URI, the URL clients reach /mcp at (a
    /// token's `aud` must name it)
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    auth_resource: Option<url::Url>,

    /// With --auth-issuer: a scope every token must grant (repeatable)
    #[arg(long = "auth-scope", value_name = "SCOPE", requires = "auth_issuer")]
    auth_scopes: Vec<String>,

    /// Serve HTTP without sessions (every POST stands alone; no standalone SSE stream)
    #[arg(long, requires = "listen")]
    stateless: bool,

    /// The largest request, like 4MiB (over HTTP, a larger declared body is refused with 413
    /// before it is read)
    #[arg(long, value_name = "SIZE", default_value = "4MiB")]
    max_request: ByteSize,

    /// HTTP: how long a client may take to send a request's headers, then its body, and how
    /// long an idle connection stays open; a body cut off gets 408
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        requires = "listen"
    )]
    read_timeout: HumanDuration,

    /// HTTP: the most connections served at once; past it a request gets 503 (GET /health
    /// still answers)
    #[arg(long, value_name = "N", default_value_t = 512, requires = "listen")]
    max_connections: usize,

    /// HTTP: the most sessions kept at once; past it `initialize` gets 503
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "listen")]
    max_sessions: usize,

    /// HTTP: how long a session may stay idle before it ends (its client gets 404 and starts
    /// a new one)
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "2m",
        requires = "listen"
    )]
    session_idle_timeout: HumanDuration,

    /// stdio: how many answers may wait for the client to read them before the server stops
    /// reading requests
    #[arg(
        long,
        value_name = "N",
        default_value_t = 256,
        conflicts_with = "listen"
    )]
    max_pending: usize,

    /// How long to wait for the tools to load (a first start compiles components, which may
    /// take minutes) before serving; past it, the server answers at once with no tools and
    /// announces them when loaded (notifications/tools/list_changed)
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    ready_wait: HumanDuration,

    /// On SIGTERM, how long calls in flight may take to finish before they are cancelled
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    shutdown_timeout: HumanDuration,

    /// The secret (a file of at least 32 bytes) that seals the state of calls that ask for
    /// input (revision 2026-07-28); replicas behind a balancer need the same one. Random per
    /// process when absent
    #[arg(long, value_name = "FILE")]
    state_key: Option<PathBuf>,

    /// Keep the tasks (calls that outlive their request) in the Redis at this URL
    /// (`redis://127.0.0.1:6379/0`), which replicas share, over the manifest's [mcp.tasks]
    /// store; in this process's memory when neither says
    #[arg(long, value_name = "URL")]
    task_store: Option<String>,

    /// Let this key of a request's `_meta` reach the tool's call context (repeatable; adds
    /// to the manifest's [mcp] pass_meta)
    #[arg(long = "pass-meta", value_name = "KEY")]
    pass_meta: Vec<String>,

    /// HTTP: the requests a second each caller may make, sustained (over the manifest's
    /// [mcp.per_caller] rate); past it, a request waits for its turn (up to 0.5 s), then
    /// gets 429 with Retry-After
    #[arg(long, value_name = "N", requires = "listen")]
    caller_rate: Option<NonZeroU32>,

    /// HTTP: how many requests a caller may make at once after a quiet spell (over
    /// [mcp.per_caller] burst; the rate when not set)
    #[arg(long, value_name = "N", requires = "listen")]
    caller_burst: Option<NonZeroU32>,

    /// HTTP: how many tool calls of one caller may run at once (over [mcp.per_caller]
    /// calls); past it, a call waits for one to end (up to 0.5 s), then gets 429
    #[arg(long, value_name = "N", requires = "listen")]
    caller_calls: Option<NonZeroU32>,

    /// Code mode: serve one more tool, run_code, whose program (in the runner's language,
    /// JavaScript or Python) calls the served tools (over the manifest's [code_mode] enabled)
    #[cfg(feature = "code-mode")]
    #[arg(long)]
    code_mode: bool,

    /// The code runner of code mode, whose language the program is written in (dist/runner-py.wasm
    /// for Python) [default: the manifest's [code_mode] runner, else dist/runner-js.wasm next to
    /// the manifest]
    #[cfg(feature = "code-mode")]
    #[arg(long, value_name = "FILE")]
    code_runner: Option<PathBuf>,

    #[command(flatten)]
    grants: GrantArgs,

    #[command(flatten)]
    limits: LimitArgs,
}

impl McpArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        // Before anything records: the library takes its instruments once. Over HTTP for
        // `/metrics`; on stdio only when they are pushed over OTLP.
        let telemetry = if self.listen.is_some() || Telemetry::pushes() {
            Telemetry::start(tokio::runtime::Handle::current())?
        } else {
            None
        };
        let token = match &self.token_env {
            Some(var) => Some(read_token(var)?),
            None => None,
        };
        let mut host = Host::builder()
            .runtime(runtime.clone())
            .limits(self.limits.config())
            .mcp(McpConfig {
                pass_meta: self.pass_meta.iter().cloned().collect(),
                per_caller: PerCallerLimits {
                    rate: self.caller_rate,
                    burst: self.caller_burst,
                    calls: self.caller_calls,
                },
                tasks: TasksSection {
                    store: self.task_store.clone(),
                    ..TasksSection::default()
                },
                ..McpConfig::default()
            });
        let auth = self.resource_server()?;
        #[cfg(feature = "code-mode")]
        if self.code_mode {
            host = host.code_mode(true);
        }
        #[cfg(feature = "code-mode")]
        if let Some(runner) = &self.code_runner {
            host = host.code_runner(runner);
        }
        host = tools_of(host, &self.target, &self.grants)?;
        // Watched from now: a SIGTERM while the tools load stops serving as soon as it starts.
        let terminated = server::terminated();
        let (server, failed) = start(host, self.ready_wait.0).await?;
        if let Some(file) = &self.state_key {
            let secret = read_state_key(file)?;
            server
                .use_state_key(&secret)
                .map_err(|problem| anyhow::anyhow!("--state-key {}: {problem}", file.display()))?;
        }
        // Serving stops on SIGTERM, or when the tools fail to load after it began.
        let stop = async {
            tokio::select! {
                () = terminated => {}
                _ = failed.notified() => {}
            }
        };
        let max_request = usize::try_from(self.max_request.0).unwrap_or(usize::MAX);
        let grace = self.shutdown_timeout.0;
        match self.listen {
            None => {
                if server.is_loaded() {
                    tracing::info!("serving {} tools on stdio", server.tool_count());
                }
                let options = StdioOptions {
                    max_message: max_request,
                    shutdown_grace: grace,
                    max_pending: self.max_pending,
                };
                server::serve_stdio(server, options, stop).await?;
            }
            Some(address) => {
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address}"))?;
                let bound = listener.local_addr()?;
                let options = HttpServerOptions {
                    allowed_hosts: self.allowed_hosts,
                    allowed_origins: self.allowed_origins,
                    token,
                    auth,
                    stateless: self.stateless,
                    max_body: max_request,
                    read_timeout: self.read_timeout.0,
                    max_connections: self.max_connections,
                    max_sessions: self.max_sessions,
                    session_idle_timeout: self.session_idle_timeout.0,
                    shutdown_grace: grace,
                    metrics: telemetry.as_ref().map(Telemetry::metrics_page),
                };
                if !bound.ip().is_loopback() && options.allowed_hosts.is_empty() {
                    eprintln!(
                        "note: only requests with a loopback or {} Host header are accepted; \
                         add the names clients use with --allowed-host",
                        bound.ip()
                    );
                }
                // Printed whatever the log level: it is how a caller learns a port-0 address.
                if server.is_loaded() {
                    eprintln!(
                        "serving {} tools over MCP at http://{bound}/mcp",
                        server.tool_count()
                    );
                } else {
                    eprintln!(
                        "serving over MCP at http://{bound}/mcp (the tools are still loading)"
                    );
                }
                server::serve_http(server, listener, options, stop).await?;
            }
        }
        match failed.take() {
            Some(error) => Err(error),
            // Stopped as asked (the client closed stdin, or SIGTERM): 0.
            None => Ok(ExitStatus::Success),
        }
    }
}

impl McpArgs {
    /// The access tokens to accept: the flags', else the manifest's `[mcp.auth]`, if any.
    fn resource_server(&self) -> anyhow::Result<Option<ResourceServerConfig>> {
        if let Some(issuer) = &self.auth_issuer {
            let Some(resource) = &self.auth_resource else {
                bail!(
                    "--auth-issuer needs --auth-resource: the URL clients reach this server's \
                     /mcp at, which its tokens must name"
                );
            };
            let mut config = ResourceServerConfig::new(issuer.clone(), resource.clone());
            config.scopes.clone_from(&self.auth_scopes);
            return config.checked().map(Some);
        }
        if self.listen.is_none() || !is_manifest(&self.target) {
            return Ok(None);
        }
        let manifest = Manifest::load(&self.target)?;
        let Some(section) = &manifest.mcp.auth else {
            return Ok(None);
        };
        let config = ResourceServerConfig::from_section(section)
            .with_context(|| format!("in {}", self.target.display()))?;
        Ok(Some(config))
    }
}

/// Starts loading `host`'s tools, and serves them once loaded, or after `wait` whatever
/// remains to load (compiling big components on a first start takes minutes, and an MCP
/// client gives up long before): the server then announces the tools when they are loaded.
/// A failure within `wait` is returned; one after it ends serving, through the
/// [`LoadFailure`].
async fn start(
    host: toolhost::HostBuilder,
    wait: std::time::Duration,
) -> anyhow::Result<(McpServer, Arc<LoadFailure>)> {
    let failed = Arc::new(LoadFailure::default());
    let mut build = tokio::spawn(host.build());
    let Ok(joined) = tokio::time::timeout(wait, &mut build).await else {
        tracing::info!("the tools are still loading: serving now, announcing them later");
        let server = McpServer::loading();
        let (loading, failure) = (server.clone(), failed.clone());
        tokio::spawn(async move {
            match build.await {
                Ok(Ok(host)) => loading.loaded(Arc::new(host)).await,
                Ok(Err(error)) => failure.set(error.into()),
                Err(error) => failure.set(error.into()),
            }
        });
        return Ok((server, failed));
    };
    let host = joined.context("loading the tools stopped")??;
    Ok((McpServer::new(Arc::new(host)), failed))
}

/// The secret in `file`: a regular file of at most 4 KiB.
fn read_state_key(file: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let metadata = std::fs::metadata(file)
        .with_context(|| format!("--state-key {}: cannot read it", file.display()))?;
    if !metadata.is_file() || metadata.len() > 4096 {
        anyhow::bail!(
            "--state-key {}: not a regular file of at most 4 KiB; make one with `head -c 32 \
             /dev/urandom > state.key`",
            file.display()
        );
    }
    std::fs::read(file).with_context(|| format!("--state-key {}: cannot read it", file.display()))
}

/// A failure to load the tools after serving began, which ends serving.
#[derive(Default)]
struct LoadFailure {
    error: std::sync::Mutex<Option<anyhow::Error>>,
    notify: tokio::sync::Notify,
}

impl LoadFailure {
    fn set(&self, error: anyhow::Error) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
        self.notify.notify_one();
    }

    fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }

    fn take(&self) -> Option<anyhow::Error> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

fn read_token(var: &str) -> anyhow::Result<String> {
    match std::env::var(var) {
        Ok(token) if !token.trim().is_empty() => Ok(token.trim().to_owned()),
        Ok(_) => {
            bail!("the environment variable {var} (--token-env) is empty; put the token in it")
        }
        Err(_) => {
            bail!("the environment variable {var} (--token-env) is not set; put the token in it")
        }
    }
}

//! `host mcp`: serve the tools of a manifest (or of one component) over MCP, on stdio or
//! Streamable HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use toolhost::mcp::server::{self, HttpOptions, McpServer, StdioOptions};
use toolhost::units::{ByteSize, HumanDuration};
use toolhost::{Host, McpConfig, Runtime};

use super::{ExitStatus, GrantArgs, LimitArgs, tools_of};

#[derive(Debug, Args)]
// `--http` serves over HTTP here; the outgoing-HTTP grant of `host call` is `--allow-http`.
#[command(mut_arg("http", |arg| arg.long("allow-http")))]
pub struct McpArgs {
    /// A manifest (.toml), or a single component (.wasm) with the grants given here
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

    /// Serve HTTP without sessions (every POST stands alone; no standalone SSE stream)
    #[arg(long, requires = "listen")]
    stateless: bool,

    /// The largest request, like 4MiB
    #[arg(long, value_name = "SIZE", default_value = "4MiB")]
    max_request: ByteSize,

    /// On SIGTERM, how long calls in flight may take to finish before they are cancelled
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    shutdown_timeout: HumanDuration,

    /// Let this key of a request's `_meta` reach the tool's call context (repeatable; adds
    /// to the manifest's [mcp] pass_meta)
    #[arg(long = "pass-meta", value_name = "KEY")]
    pass_meta: Vec<String>,

    #[command(flatten)]
    grants: GrantArgs,

    #[command(flatten)]
    limits: LimitArgs,
}

impl McpArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let token = match &self.token_env {
            Some(var) => Some(read_token(var)?),
            None => None,
        };
        let mut host = Host::builder()
            .runtime(runtime.clone())
            .limits(self.limits.config())
            .mcp(McpConfig {
                pass_meta: self.pass_meta.iter().cloned().collect(),
            });
        host = tools_of(host, &self.target, &self.grants)?;
        let server = McpServer::new(Arc::new(host.build().await?));
        let max_request = usize::try_from(self.max_request.0).unwrap_or(usize::MAX);
        let grace = self.shutdown_timeout.0;
        match self.listen {
            None => {
                tracing::info!("serving {} tools on stdio", server.tool_count());
                let options = StdioOptions {
                    max_message: max_request,
                    shutdown_grace: grace,
                };
                server::serve_stdio(server, options, server::terminated()).await?;
            }
            Some(address) => {
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address}"))?;
                let bound = listener.local_addr()?;
                let options = HttpOptions {
                    allowed_hosts: self.allowed_hosts,
                    allowed_origins: self.allowed_origins,
                    token,
                    stateless: self.stateless,
                    max_body: max_request,
                    shutdown_grace: grace,
                };
                if !bound.ip().is_loopback() && options.allowed_hosts.is_empty() {
                    eprintln!(
                        "note: only requests with a loopback or {} Host header are accepted; \
                         add the names clients use with --allowed-host",
                        bound.ip()
                    );
                }
                // Printed whatever the log level: it is how a caller learns a port-0 address.
                eprintln!(
                    "serving {} tools over MCP at http://{bound}/mcp",
                    server.tool_count()
                );
                server::serve_http(server, listener, options, server::terminated()).await?;
            }
        }
        Ok(ExitStatus::Success)
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

//! `host tools`: what a manifest loads, with grants next to what the tools request, and the
//! tools that are not sandboxed (MCP servers, native functions) said to be so.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};
#[cfg(feature = "mcp-client")]
use toolhost::mcp::client::{McpClient, McpTransport};
use toolhost::units::format_bytes;
use toolhost::{Catalog, Host, LoadedComponent, Origin, Runtime, ToolSource, Toolbox};

use super::ExitStatus;
use super::inspect::{add_pulled, load_summary};
use super::output::{one_line, print, print_json};

#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// The manifest
    #[arg(default_value = "toolhost.toml")]
    manifest: PathBuf,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

impl ToolsArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let host = Host::builder()
            .runtime(runtime.clone())
            .manifest(&self.manifest)
            .build()
            .await?;
        let toolbox = host.toolbox();
        let catalog = toolbox.catalog();
        let offered = |origin: &Origin| offered(&catalog, origin);
        let native: Vec<&std::sync::Arc<dyn ToolSource>> = toolbox
            .sources()
            .filter(|source| matches!(source.origin(), Origin::Native { .. }))
            .collect();
        if self.json {
            let components: Vec<Value> = toolbox
                .components()
                .map(|c| to_json(c, &offered(c.origin())))
                .collect();
            let servers = servers_json(toolbox, &offered);
            let native: Vec<Value> = native
                .iter()
                .map(|source| {
                    json!({
                        "name": source.origin().name(),
                        "sandboxed": false,
                        "tools": source.tools(),
                        "offered": offered(source.origin()),
                    })
                })
                .collect();
            let skipped: Vec<Value> = toolbox
                .skipped()
                .iter()
                .map(|skipped| json!({ "name": skipped.name, "error": one_line(&skipped.error) }))
                .collect();
            print_json(&json!({
                "components": components,
                "mcp_servers": servers,
                "native": native,
                "skipped": skipped,
            }))?;
        } else {
            let mut text: Vec<String> = toolbox
                .components()
                .map(|c| to_text(c, &offered(c.origin())))
                .collect();
            text.extend(servers_text(toolbox, &offered));
            text.extend(native.iter().map(|source| {
                format!(
                    "{}  native functions of the embedding application, run in its process: \
                     not sandboxed\n  tools:     {}\n",
                    source.origin().name(),
                    offered(source.origin()).join(", ")
                )
            }));
            text.extend(toolbox.skipped().iter().map(|skipped| {
                format!(
                    "{}  NOT LOADED (required = false): {}\n",
                    skipped.name,
                    one_line(&skipped.error)
                )
            }));
            print(&text.join("\n"))?;
        }
        host.shutdown().await;
        Ok(ExitStatus::Success)
    }
}

/// The names the model sees of a source's tools (its `prefix` and `tools` lists apply).
fn offered(catalog: &Catalog, origin: &Origin) -> Vec<String> {
    catalog
        .iter()
        .filter(|spec| catalog.origin(&spec.name) == Some(origin))
        .map(|spec| spec.name.clone())
        .collect()
}

/// The toolbox's MCP servers as JSON.
#[cfg(feature = "mcp-client")]
fn servers_json(toolbox: &Toolbox, offered: &dyn Fn(&Origin) -> Vec<String>) -> Vec<Value> {
    toolbox
        .mcp_servers()
        .map(|server| server_json(server, &offered(server.origin())))
        .collect()
}

/// The toolbox's MCP servers as text.
#[cfg(feature = "mcp-client")]
fn servers_text(toolbox: &Toolbox, offered: &dyn Fn(&Origin) -> Vec<String>) -> Vec<String> {
    toolbox
        .mcp_servers()
        .map(|server| server_text(server, &offered(server.origin())))
        .collect()
}

/// Without the `mcp-client` feature a toolbox has no MCP servers.
#[cfg(not(feature = "mcp-client"))]
fn servers_json(_: &Toolbox, _: &dyn Fn(&Origin) -> Vec<String>) -> Vec<Value> {
    Vec::new()
}

/// Without the `mcp-client` feature a toolbox has no MCP servers.
#[cfg(not(feature = "mcp-client"))]
fn servers_text(_: &Toolbox, _: &dyn Fn(&Origin) -> Vec<String>) -> Vec<String> {
    Vec::new()
}

/// How an MCP server is reached, for people.
#[cfg(feature = "mcp-client")]
fn transport_kind(server: &McpClient) -> &'static str {
    match server.config().transport {
        McpTransport::Stdio { .. } => "stdio",
        McpTransport::Http { .. } => "Streamable HTTP",
    }
}

/// What an MCP server runs as, for the `not sandboxed` line.
#[cfg(feature = "mcp-client")]
fn authority(server: &McpClient) -> &'static str {
    match server.config().transport {
        McpTransport::Stdio { .. } => {
            "a process of the user running the host, with that user's files and network"
        }
        McpTransport::Http { .. } => "a server of its own; it does whatever it does",
    }
}

#[cfg(feature = "mcp-client")]
fn server_text(server: &McpClient, offered: &[String]) -> String {
    let config = server.config();
    let identity = server
        .identity()
        .map(|id| format!("; {} {}, MCP {}", id.name, id.version, id.protocol_version))
        .unwrap_or_default();
    format!(
        "{}  MCP server {} ({}{identity})\n  tools:     {}\n  sandbox:   none, not sandboxed: {}\n  limits:    timeout {}, result {}\n",
        config.name,
        config.endpoint(),
        transport_kind(server),
        offered.join(", "),
        authority(server),
        humantime::format_duration(config.timeout),
        format_bytes(config.max_result as u64),
    )
}

#[cfg(feature = "mcp-client")]
fn server_json(server: &McpClient, offered: &[String]) -> Value {
    let config = server.config();
    json!({
        "name": config.name,
        "endpoint": config.endpoint(),
        "transport": match config.transport {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
        },
        "server": server.identity(),
        "sandboxed": false,
        "tools": server.tools(),
        "offered": offered,
        "timeout_ms": config.timeout.as_secs_f64() * 1000.0,
        "max_result": config.max_result,
    })
}

fn to_json(component: &LoadedComponent, offered: &[String]) -> Value {
    let grants = component.grants();
    let requested: Vec<Value> = component
        .tools()
        .flat_map(|tool| {
            tool.requested.iter().map(|request| {
                json!({
                    "tool": tool.name,
                    "capability": request.capability,
                    "reason": request.reason,
                    "granted": grants.covers(&request.capability),
                })
            })
        })
        .collect();
    let mut json = json!({
        "name": component.name(),
        "path": component.path(),
        "sha256": component.sha256(),
        "compile": component.compile_source(),
        "tools": component.tools().collect::<Vec<_>>(),
        "offered": offered,
        "grants": grants,
        "requested": requested,
        "limits": component.limits(),
    });
    add_pulled(component, &mut json);
    json
}

fn to_text(component: &LoadedComponent, offered: &[String]) -> String {
    let mut out = String::new();
    let grants = component.grants();
    let _ = writeln!(
        out,
        "{}  {} ({})",
        component.name(),
        component.path().display(),
        load_summary(component)
    );
    let _ = writeln!(out, "  tools:     {}", offered.join(", "));

    let mut granted: Vec<String> = Vec::new();
    granted.extend(grants.dirs.iter().map(|d| {
        let mode = if d.write { "read-write" } else { "read-only" };
        format!("dir {} as {} ({mode})", d.host.display(), d.guest)
    }));
    granted.extend(grants.env.iter().map(|e| format!("env {e}")));
    granted.extend(grants.http.iter().map(|h| format!("http {h}")));
    granted.extend(grants.sockets.iter().map(|s| format!("socket {s}")));
    if granted.is_empty() {
        let _ = writeln!(out, "  granted:   nothing");
    } else {
        let _ = writeln!(out, "  granted:   {}", granted.join("\n             "));
    }

    let requests: Vec<String> = component
        .tools()
        .flat_map(|tool| {
            tool.requested.iter().map(|request| {
                let status = if grants.covers(&request.capability) {
                    "granted"
                } else {
                    "NOT granted"
                };
                let reason = if request.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", request.reason)
                };
                format!("{} [{status}] by {}{reason}", request.capability, tool.name)
            })
        })
        .collect();
    if !requests.is_empty() {
        let _ = writeln!(out, "  requested: {}", requests.join("\n             "));
    }

    let limits = component.limits();
    let _ = writeln!(
        out,
        "  limits:    memory {}, CPU {}, timeout {}, result {}",
        format_bytes(limits.memory),
        humantime::format_duration(limits.cpu_time),
        humantime::format_duration(limits.timeout),
        format_bytes(limits.max_result as u64),
    );
    out
}

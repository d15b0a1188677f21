//! `host tools`: what a manifest loads, with grants next to what the tools request.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};
use toolhost::sandbox::format_bytes;
use toolhost::{Host, LoadedComponent, Runtime, ToolSource as _};

use super::ExitStatus;
use super::inspect::load_summary;
use super::output::{print, print_json};

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
        // The names the model sees (a source's `prefix` and `tools` lists apply).
        let offered = |component: &LoadedComponent| -> Vec<String> {
            catalog
                .iter()
                .filter(|spec| catalog.origin(&spec.name) == Some(component.origin()))
                .map(|spec| spec.name.clone())
                .collect()
        };
        if self.json {
            let components: Vec<Value> = toolbox
                .components()
                .map(|c| to_json(c, &offered(c)))
                .collect();
            print_json(&json!({ "components": components }))?;
        } else {
            let text: Vec<String> = toolbox
                .components()
                .map(|c| to_text(c, &offered(c)))
                .collect();
            print(&text.join("\n"))?;
        }
        Ok(ExitStatus::Success)
    }
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
    json!({
        "name": component.name(),
        "path": component.path(),
        "sha256": component.sha256(),
        "compile": component.compile_source(),
        "tools": component.tools().collect::<Vec<_>>(),
        "offered": offered,
        "grants": grants,
        "requested": requested,
        "limits": component.limits(),
    })
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

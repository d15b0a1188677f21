//! `host call`: run one tool without a model.

use std::io::Read as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;
use toolhost::{CallContext, Host, Runtime, ToolOutput};

use super::output::{print_json, println};
use super::{ExitStatus, GrantArgs, LimitArgs, OldHttpFlag, tools_of};

#[derive(Debug, Args)]
pub struct CallArgs {
    /// A component (.wasm or oci://REGISTRY/REPO:TAG), or a manifest (.toml) that loads the tool
    target: PathBuf,

    /// The tool to run
    tool: String,

    /// The arguments, a JSON object; `-` reads them from stdin
    #[arg(default_value = "{}")]
    arguments: String,

    #[command(flatten)]
    grants: GrantArgs,

    #[command(flatten)]
    old_http: OldHttpFlag,

    #[command(flatten)]
    limits: LimitArgs,

    /// Pass KEY=VALUE to the tool in its call context (never shown to a model); repeatable
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    context: Vec<(String, String)>,

    /// Print the result or the error as JSON, with the tool's output and the duration
    #[arg(long)]
    json: bool,
}

pub(super) fn parse_key_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("`{text}` is not KEY=VALUE"))
}

impl CallArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let mut host = Host::builder()
            .runtime(runtime.clone())
            .limits(self.limits.config());
        host = tools_of(host, &self.target, &self.old_http.added_to(&self.grants))?;
        let host = host.build().await?;
        let arguments = if self.arguments == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the arguments from stdin")?;
            text
        } else {
            self.arguments.clone()
        };
        let context = CallContext {
            call_id: "cli".to_owned(),
            values: self.context.iter().cloned().collect(),
            observer: Some(super::progress::tool_reports()),
            ..CallContext::default()
        };
        let result = host
            .call(&self.tool, &arguments, &context)
            .await
            .and_then(|output| output.finished(&self.tool, "`host call`"));
        host.shutdown().await;
        if self.json {
            let value = match &result {
                Ok(output) => json!({ "ok": true, "tool": self.tool, "output": output }),
                Err(error) => json!({
                    "ok": false,
                    "tool": self.tool,
                    "error": { "kind": error.kind(), "message": error.to_string() },
                }),
            };
            print_json(&value)?;
        } else {
            match &result {
                Ok(output) => print_output(output)?,
                Err(error) => eprintln!("error: {error}"),
            }
        }
        Ok(if result.is_ok() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        })
    }
}

/// The result on stdout; what the tool printed on stderr, marked as the tool's.
fn print_output(output: &ToolOutput) -> std::io::Result<()> {
    for (stream, log) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        for line in log.text.lines() {
            eprintln!("[tool {stream}] {line}");
        }
        if log.dropped > 0 {
            eprintln!("[tool {stream}] ... {} more bytes dropped", log.dropped);
        }
    }
    for image in output.images() {
        eprintln!(
            "[tool image] {}, {} (in --json output)",
            image.mime_type,
            toolhost::units::format_bytes(image.size() as u64)
        );
    }
    println(&output.text)
}

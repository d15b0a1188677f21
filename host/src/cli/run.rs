//! `host run` and `host chat`: the tool-calling loop against a model.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolhost::agent::{
    Agent, AgentConfig, AgentError, AgentEvent, Conversation, RunOptions, RunResult, ToolLimit,
    ToolSelection,
};
use toolhost::llm::{ModelConfig, ToolChoice};
use toolhost::{Host, HostError, Runtime};

use super::ExitStatus;
use super::output::{print, print_json, println};

/// Where the tools and the model come from, and how to run the loop.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The manifest: tools, grants, limits and the [model] section
    #[arg(
        short,
        long,
        value_name = "FILE",
        env = "TOOLHOST_MANIFEST",
        default_value = "toolhost.toml"
    )]
    manifest: PathBuf,

    /// The model: local, openai[:NAME] or anthropic[:NAME] (over the manifest's [model])
    #[arg(long, value_name = "PROVIDER[:NAME]", help_heading = "Model")]
    model: Option<String>,

    /// The server's base URL: any OpenAI-compatible server (llama.cpp, vLLM, Ollama's /v1,
    /// LM Studio, ...) or an Anthropic-compatible one
    #[arg(long, value_name = "URL", help_heading = "Model")]
    base_url: Option<String>,

    /// Sampling temperature [default: 0 for the local model, else the server's]
    #[arg(long, help_heading = "Model")]
    temperature: Option<f32>,

    /// The most tokens per model turn
    #[arg(long, help_heading = "Model")]
    max_tokens: Option<u32>,

    /// The most model turns per run [default: 10]
    #[arg(long, help_heading = "Model")]
    max_rounds: Option<usize>,

    /// A system prompt
    #[arg(long, help_heading = "Model")]
    system: Option<String>,

    /// Wait for whole answers instead of streaming them
    #[arg(long, help_heading = "Model")]
    no_stream: bool,

    /// Offer only these tools (comma-separated or repeated) [default: every loaded tool]
    #[arg(
        long = "tools",
        value_name = "NAME",
        value_delimiter = ',',
        help_heading = "Tools"
    )]
    tools: Vec<String>,

    /// How many tools each request offers: all, or the N that best fit the conversation
    /// [default: 3 for the local model, else all; the manifest's [model] tools]
    #[arg(long, value_name = "N|all", help_heading = "Tools")]
    tool_limit: Option<ToolLimit>,

    /// Whether and which tool the model must call: auto, none, required, or a tool's name
    #[arg(
        long,
        value_name = "CHOICE",
        default_value = "auto",
        help_heading = "Tools"
    )]
    tool_choice: ToolChoice,

    /// Pass KEY=VALUE to every tool call (a tenant, a user); never shown to the model
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = super::call::parse_key_value, help_heading = "Tools")]
    context: Vec<(String, String)>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to ask
    prompt: String,

    #[command(flatten)]
    model: ModelArgs,

    /// Print the whole result as JSON (answer, every tool call with its arguments, result and
    /// duration) instead of streaming the answer
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
}

impl ModelArgs {
    /// The model the flags name, over the manifest's.
    fn model_config(&self) -> anyhow::Result<ModelConfig> {
        let mut flags = ModelConfig {
            base_url: self.base_url.clone(),
            ..ModelConfig::default()
        };
        if let Some(model) = &self.model {
            let (provider, name) =
                ModelConfig::parse_model_flag(model).map_err(anyhow::Error::msg)?;
            flags.provider = Some(provider);
            flags.name = name;
        }
        Ok(flags)
    }

    /// The loop settings the flags give, over the manifest's.
    fn agent_config(&self) -> AgentConfig {
        AgentConfig {
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            max_rounds: self.max_rounds,
            system: self.system.clone(),
            stream: self.no_stream.then_some(false),
            tools: self.tool_limit,
        }
    }

    /// Loads the tools and connects the model, at the same time.
    async fn agent(&self, runtime: &Runtime) -> anyhow::Result<(Agent, RunOptions)> {
        let host = Host::builder()
            .runtime(runtime.clone())
            .manifest(&self.manifest)
            .model(self.model_config()?)
            .agent(self.agent_config())
            .connect_model(true)
            .build()
            .await
            .map_err(|error| match error {
                HostError::Model(error) => {
                    anyhow::Error::new(error).context("cannot connect to the model")
                }
                other => other.into(),
            })?;
        let catalog = host.toolbox().catalog();
        for name in &self.tools {
            if catalog.get(name).is_none() {
                bail!(
                    "--tools {name}: no loaded tool has that name; loaded: {}",
                    catalog.names().join(", ")
                );
            }
        }
        let agent = host.agent().await?;
        tracing::info!(model = %agent.provider().describe(), "connected");
        let options = RunOptions {
            tools: if self.tools.is_empty() {
                ToolSelection::All
            } else {
                ToolSelection::Only(self.tools.iter().cloned().collect())
            },
            tool_choice: self.tool_choice.clone(),
            context: self.context.iter().cloned().collect(),
            ..RunOptions::default()
        };
        Ok((agent, options))
    }
}

/// Shows a run as it goes: the answer streams to stdout, tool activity to stderr. The first
/// failure to write stdout (a closed pipe) is kept, and ends the command.
#[derive(Default)]
struct Display {
    streamed: bool,
    broken: Option<std::io::Error>,
}

impl Display {
    fn show(&mut self, event: AgentEvent<'_>) {
        match event {
            AgentEvent::Text(text) => {
                self.streamed = true;
                if self.broken.is_none()
                    && let Err(error) = print(text)
                {
                    self.broken = Some(error);
                }
            }
            AgentEvent::ToolStarted { call } => eprintln!("→ {} {}", call.name, call.arguments),
            AgentEvent::ToolFinished { execution } => eprintln!(
                "← {} {} ({:.1} ms)",
                execution.name,
                execution.output,
                execution.duration.as_secs_f64() * 1000.0
            ),
        }
    }

    /// Ends the answer: prints it when it did not stream, and a newline.
    fn finish(self, result: &RunResult) -> std::io::Result<()> {
        if let Some(error) = self.broken {
            return Err(error);
        }
        if self.streamed {
            println("")
        } else {
            println(&result.text)
        }
    }
}

/// A failed run as JSON: the error, and the tool calls made until then.
fn error_json(error: &AgentError) -> serde_json::Value {
    json!({
        "ok": false,
        "error": { "kind": error.kind(), "message": chain(error) },
        "executions": error.executions(),
    })
}

/// `error` and its causes on one line.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn print_error(error: AgentError) {
    let error = anyhow::Error::from(error);
    eprintln!("error: {error}");
    for cause in error.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
}

impl RunArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let (agent, options) = self.model.agent(runtime).await?;
        let mut conversation = Conversation::new();
        conversation.push_user(&self.prompt);
        if self.json {
            let result = agent.run(&mut conversation, &options, &mut |_| {}).await;
            return match result {
                Ok(result) => {
                    print_json(&json!({ "ok": true, "result": result }))?;
                    Ok(ExitStatus::Success)
                }
                Err(error) => {
                    print_json(&error_json(&error))?;
                    print_error(error);
                    Ok(ExitStatus::Failure)
                }
            };
        }
        let mut display = Display::default();
        let result = agent
            .run(&mut conversation, &options, &mut |event| {
                display.show(event)
            })
            .await;
        match result {
            Ok(result) => {
                display.finish(&result)?;
                Ok(ExitStatus::Success)
            }
            Err(error) => {
                print_error(error);
                Ok(ExitStatus::Failure)
            }
        }
    }
}

impl ChatArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let (agent, options) = self.model.agent(runtime).await?;
        let interactive = std::io::stdin().is_terminal();
        if interactive {
            eprintln!(
                "chatting with {} and {} tools; /reset forgets, /exit (or Ctrl-D) quits",
                agent.provider().describe(),
                agent.toolbox().catalog().len()
            );
        }
        let mut conversation = Conversation::new();
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        loop {
            if interactive {
                eprint!("> ");
            }
            let Some(line) = lines.next_line().await? else {
                break;
            };
            match line.trim() {
                "" => continue,
                "/exit" | "/quit" => break,
                "/reset" => {
                    conversation = Conversation::new();
                    continue;
                }
                text => conversation.push_user(text),
            }
            let mut display = Display::default();
            match agent
                .run(&mut conversation, &options, &mut |event| {
                    display.show(event)
                })
                .await
            {
                Ok(result) => display.finish(&result)?,
                Err(error) => print_error(error),
            }
        }
        Ok(ExitStatus::Success)
    }
}

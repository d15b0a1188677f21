//! `host run` and `host chat`: the tool-calling loop against a model.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use serde_json::json;
use toolhost::agent::{
    Agent, AgentConfig, AgentError, AgentEvent, Conversation, Outcome, RunOptions, RunResult,
    ToolLimit, ToolSelection,
};
use toolhost::llm::{ModelConfig, ToolChoice};
use toolhost::{Host, Runtime};

use super::ExitStatus;
use super::approve::{Approver, run_to_end};
use super::input::Input;
use super::output::{one_line, print, print_error, print_json, println};
use super::session::Session;

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

    /// Approve every tool call that needs approval, without asking (by default the terminal
    /// asks; with no terminal, such calls are rejected)
    #[arg(short, long, help_heading = "Tools")]
    yes: bool,

    /// Append one JSON line per tool call to FILE (created 0600), over the manifest's
    /// [audit] path
    #[arg(long, value_name = "FILE", help_heading = "Tools")]
    audit: Option<PathBuf>,

    /// Code mode: offer the model one tool, run_code, whose program (in the runner's
    /// language, JavaScript or Python) calls the tools (over the manifest's [code_mode] enabled)
    #[cfg(feature = "code-mode")]
    #[arg(long, help_heading = "Tools")]
    code_mode: bool,

    /// The code runner of code mode, whose language the program is written in (dist/runner-py.wasm
    /// for Python) [default: the manifest's [code_mode] runner, else dist/runner-js.wasm next to
    /// the manifest]
    #[cfg(feature = "code-mode")]
    #[arg(long, value_name = "FILE", help_heading = "Tools")]
    code_runner: Option<PathBuf>,
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

    /// Keep the conversation in FILE: resume it if it exists, save it after every turn
    #[arg(long, value_name = "FILE")]
    session: Option<PathBuf>,
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
            tool_limit: self.tool_limit,
            ..AgentConfig::default()
        }
    }

    /// Loads the tools and connects the model, at the same time. The host is returned to be
    /// shut down at the end (it stops the MCP servers).
    async fn agent(&self, runtime: &Runtime) -> anyhow::Result<(Host, Agent, RunOptions)> {
        let mut builder = Host::builder()
            .runtime(runtime.clone())
            .manifest(&self.manifest)
            .model(self.model_config()?)
            .agent(self.agent_config())
            .connect_model(true);
        if let Some(audit) = &self.audit {
            builder = builder.audit(audit);
        }
        #[cfg(feature = "code-mode")]
        if self.code_mode {
            builder = builder.code_mode(true);
        }
        #[cfg(feature = "code-mode")]
        if let Some(runner) = &self.code_runner {
            builder = builder.code_runner(runner);
        }
        let host = builder.build().await?;
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
            observer: Some(super::progress::tool_reports()),
            ..host.run_options()
        };
        Ok((host, agent, options))
    }
}

/// Shows a run as it goes: the answer streams to stdout, tool activity to stderr. The first
/// failure to write stdout (a closed pipe) is kept, and ends the command.
#[derive(Default)]
struct RunView {
    streamed: bool,
    broken: Option<std::io::Error>,
}

impl RunView {
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
            AgentEvent::ToolFinished { execution } => {
                match (&execution.outcome, &execution.repeat_of) {
                    (Outcome::Rejected { .. }, _) => {
                        eprintln!("← {} not run: {}", execution.name, execution.output)
                    }
                    (_, Some(earlier)) => eprintln!(
                        "← {} {} (the same call as {earlier}: not run again)",
                        execution.name, execution.output
                    ),
                    _ => eprintln!(
                        "← {} {} ({:.1} ms)",
                        execution.name,
                        execution.output,
                        execution.duration.as_secs_f64() * 1000.0
                    ),
                }
            }
            AgentEvent::InvalidCall { call } => {
                eprintln!("✗ {} {}: {}", call.name, call.arguments, call.message)
            }
            _ => {}
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
        "error": { "kind": error.kind(), "message": one_line(error) },
        "executions": error.executions(),
        "invalid_calls": error.invalid_calls(),
    })
}

impl RunArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let (host, agent, options) = self.model.agent(runtime).await?;
        let status = self.run_with(agent, options).await;
        host.shutdown().await;
        status
    }

    async fn run_with(&self, agent: Agent, options: RunOptions) -> anyhow::Result<ExitStatus> {
        let mut input = Input::new();
        let approver = Approver::new(self.model.yes, &input);
        let mut conversation = Conversation::new();
        conversation.push_user(&self.prompt);
        let mut no_pause = |_: &Conversation| Ok(());
        if self.json {
            let result = run_to_end(
                &agent,
                &mut conversation,
                &options,
                approver,
                &mut input,
                &mut |_| {},
                &mut no_pause,
            )
            .await?;
            return match result {
                Ok(result) => {
                    print_json(&json!({ "ok": true, "result": result }))?;
                    Ok(ExitStatus::Success)
                }
                Err(error) => {
                    print_json(&error_json(&error))?;
                    print_error(&error);
                    Ok(ExitStatus::Failure)
                }
            };
        }
        let mut display = RunView::default();
        let result = run_to_end(
            &agent,
            &mut conversation,
            &options,
            approver,
            &mut input,
            &mut |event| display.show(event),
            &mut no_pause,
        )
        .await?;
        match result {
            Ok(result) => {
                display.finish(&result)?;
                Ok(ExitStatus::Success)
            }
            Err(error) => {
                print_error(&error);
                Ok(ExitStatus::Failure)
            }
        }
    }
}

impl ChatArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        let session = self.session.clone().map(Session::new);
        // A damaged session is reported before anything is loaded or started.
        let saved = match &session {
            Some(session) => session.load()?,
            None => None,
        };
        let (host, agent, options) = self.model.agent(runtime).await?;
        let status = Self::chat(session, saved, agent, options, self.model.yes).await;
        host.shutdown().await;
        status
    }

    async fn chat(
        session: Option<Session>,
        saved: Option<Conversation>,
        agent: Agent,
        options: RunOptions,
        yes: bool,
    ) -> anyhow::Result<ExitStatus> {
        let mut input = Input::new();
        let interactive = input.is_terminal();
        let approver = Approver::new(yes, &input);
        if interactive {
            eprintln!(
                "chatting with {} and {} tools; /reset forgets, /exit (or Ctrl-D) quits",
                agent.provider().describe(),
                agent.toolbox().catalog().len()
            );
        }
        let resumed = saved.is_some();
        let mut conversation = saved.unwrap_or_default();
        if resumed && interactive {
            eprintln!(
                "resumed the conversation saved in the session ({} messages)",
                conversation.messages().len()
            );
        }
        let mut save = |conversation: &Conversation| match &session {
            Some(session) => session.save(conversation),
            None => Ok(()),
        };
        // A run that was waiting for approval when the session was saved goes on first.
        let mut pending_run = conversation.paused_run().is_some();
        loop {
            if !pending_run {
                if interactive {
                    eprint!("> ");
                }
                let Some(line) = input.line().await? else {
                    break;
                };
                match line.trim() {
                    "" => continue,
                    "/exit" | "/quit" => break,
                    "/reset" => {
                        conversation = Conversation::new();
                        save(&conversation)?;
                        continue;
                    }
                    text => conversation.push_user(text),
                }
            }
            pending_run = false;
            let mut display = RunView::default();
            let result = run_to_end(
                &agent,
                &mut conversation,
                &options,
                approver,
                &mut input,
                &mut |event| display.show(event),
                &mut save,
            )
            .await?;
            match result {
                Ok(result) => display.finish(&result)?,
                Err(error) => {
                    print_error(&error);
                    // Calls the failed run left unanswered would fail every later turn.
                    conversation.close_pending("the run stopped before this call ran");
                }
            }
            save(&conversation)?;
        }
        Ok(ExitStatus::Success)
    }
}

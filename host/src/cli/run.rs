//! `host run` and `host chat`: the tool-calling loop against a model.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolhost::agent::{Agent, AgentEvent, AgentOptions, Conversation, RunOptions, ToolSelection};
use toolhost::llm::{ModelConfig, ToolChoice};
use toolhost::{Manifest, Runtime, Toolbox};

use super::progress::compile_progress;

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

/// The loaded tools, the connected model, and the options of every run.
struct Session {
    agent: Agent,
    options: RunOptions,
    /// Keeps the local model server alive.
    _model: toolhost::llm::ConnectedModel,
}

impl ModelArgs {
    fn model_config(&self, manifest: &Manifest) -> anyhow::Result<ModelConfig> {
        let mut flags = ModelConfig {
            base_url: self.base_url.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            max_rounds: self.max_rounds,
            system: self.system.clone(),
            stream: self.no_stream.then_some(false),
            ..ModelConfig::default()
        };
        if let Some(model) = &self.model {
            let (provider, name) =
                ModelConfig::parse_model_flag(model).map_err(anyhow::Error::msg)?;
            flags.provider = Some(provider);
            flags.name = name;
        }
        let base = if flags.provider.is_some() && flags.provider != manifest.model.provider {
            // Another provider than the manifest's: its URL, key and name do not apply.
            ModelConfig {
                temperature: manifest.model.temperature,
                max_rounds: manifest.model.max_rounds,
                system: manifest.model.system.clone(),
                ..ModelConfig::default()
            }
        } else {
            manifest.model.clone()
        };
        Ok(base.merged(flags))
    }

    async fn session(&self, runtime: &Runtime, stream: bool) -> anyhow::Result<Session> {
        if !self.manifest.exists() {
            bail!(
                "there is no manifest at {}; pass one with --manifest (for the example tools: \
                 --manifest example-tools/toolhost.toml)",
                self.manifest.display()
            );
        }
        let manifest = Manifest::load(&self.manifest)?;
        let config = self.model_config(&manifest)?;
        let toolbox = Toolbox::load(
            runtime,
            manifest.component_configs(),
            Some(compile_progress()),
        );
        let (toolbox, model) = tokio::join!(toolbox, config.connect());
        let toolbox = toolbox?;
        let model = model.context("cannot connect to the model")?;
        for name in &self.tools {
            if toolbox.spec(name).is_none() {
                bail!(
                    "--tools {name}: no loaded tool has that name; loaded: {}",
                    toolbox.names().join(", ")
                );
            }
        }
        let options = AgentOptions {
            max_rounds: config
                .max_rounds
                .unwrap_or(AgentOptions::default().max_rounds),
            system: config.system.clone(),
            temperature: config.effective_temperature(),
            max_tokens: config.effective_max_tokens(),
            stream: stream && config.stream.unwrap_or(true),
            return_direct: manifest.return_direct_tools(),
            ..AgentOptions::default()
        };
        let run_options = RunOptions {
            tools: if self.tools.is_empty() {
                ToolSelection::All
            } else {
                ToolSelection::Only(self.tools.iter().cloned().collect())
            },
            tool_choice: self.tool_choice.clone(),
            context: self.context.iter().cloned().collect(),
        };
        tracing::info!(model = %model.provider.describe(), "connected");
        Ok(Session {
            agent: Agent::new(model.provider.clone(), Arc::new(toolbox), options),
            options: run_options,
            _model: model,
        })
    }
}

/// Prints the answer to stdout as it streams, and tool activity to stderr.
fn show(event: AgentEvent<'_>) {
    match event {
        AgentEvent::Text(text) => {
            print!("{text}");
            let _ = std::io::stdout().flush();
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

impl RunArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitCode> {
        let session = self.model.session(runtime, !self.json).await?;
        let mut conversation = Conversation::new();
        conversation.push_user(&self.prompt);
        let mut streamed = false;
        let mut events = |event: AgentEvent<'_>| {
            if self.json {
                return;
            }
            streamed |= matches!(event, AgentEvent::Text(_));
            show(event);
        };
        let result = session
            .agent
            .run(&mut conversation, &session.options, &mut events)
            .await;
        match result {
            Ok(result) if self.json => {
                println!("{}", serde_json::to_string_pretty(&result)?);
                Ok(ExitCode::SUCCESS)
            }
            Ok(result) => {
                if !streamed {
                    print!("{}", result.text);
                }
                println!();
                Ok(ExitCode::SUCCESS)
            }
            Err(error) => {
                let error = anyhow::Error::from(error);
                eprintln!("error: {error}");
                for cause in error.chain().skip(1) {
                    eprintln!("  caused by: {cause}");
                }
                Ok(ExitCode::from(1))
            }
        }
    }
}

impl ChatArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitCode> {
        let session = self.model.session(runtime, true).await?;
        let interactive = std::io::stdin().is_terminal();
        if interactive {
            eprintln!(
                "chatting with {} and {} tools; /reset forgets, /exit (or Ctrl-D) quits",
                session.agent.toolbox().components().len(),
                session.agent.toolbox().names().len()
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
            let mut streamed = false;
            let mut events = |event: AgentEvent<'_>| {
                streamed |= matches!(event, AgentEvent::Text(_));
                show(event);
            };
            match session
                .agent
                .run(&mut conversation, &session.options, &mut events)
                .await
            {
                Ok(result) => {
                    if !streamed {
                        print!("{}", result.text);
                    }
                    println!();
                }
                Err(error) => {
                    let error = anyhow::Error::from(error);
                    eprintln!("error: {error:#}");
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

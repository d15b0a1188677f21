//! Tests of the tool-calling loop and the providers: a scripted model server on 127.0.0.1
//! speaking both wire formats drives every loop rule deterministically; fault tests break the
//! server on purpose; end-to-end tests run the real local llama-server with Gemma 3 270M.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod captured;
mod cli;
mod faults;
mod host;
mod local;
mod readme;
mod rules;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use toolhost::agent::{Agent, AgentEvent, AgentOptions, Conversation, RunOptions, RunResult};
use toolhost::llm::{AnthropicProvider, HttpOptions, OpenAiProvider, Provider};
use toolhost::sandbox::{HumanDuration, LimitsConfig};
use toolhost::{ComponentConfig, Toolbox};
use toolhost_tests::components::{CALCULATOR, MISBEHAVE};
use toolhost_tests::model::{Format, ScriptedModel, Turn};
use toolhost_tests::runtime;

/// Both formats, streamed and not.
pub const MODES: [(Format, bool); 4] = [
    (Format::OpenAi, false),
    (Format::OpenAi, true),
    (Format::Anthropic, false),
    (Format::Anthropic, true),
];

/// Retries quick enough for tests.
pub fn http_options() -> HttpOptions {
    HttpOptions {
        timeout: Duration::from_secs(20),
        idle_timeout: Duration::from_secs(5),
        max_retries: 3,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(500),
    }
}

/// A provider for `model`'s format.
pub fn provider(format: Format, base_url: &str, options: HttpOptions) -> Arc<dyn Provider> {
    match format {
        Format::OpenAi => {
            Arc::new(OpenAiProvider::new(base_url, "scripted", None, options).unwrap())
        }
        Format::Anthropic => Arc::new(
            AnthropicProvider::new(base_url, "scripted", Some("test-key".into()), options).unwrap(),
        ),
    }
}

/// The calculator and the misbehaving tools, with a short CPU budget.
pub async fn toolbox() -> Arc<Toolbox> {
    let mut misbehave = ComponentConfig::new(MISBEHAVE);
    misbehave.limits = LimitsConfig {
        cpu_time: Some(HumanDuration(Duration::from_millis(300))),
        ..LimitsConfig::default()
    }
    .apply(misbehave.limits);
    let configs = vec![ComponentConfig::new(CALCULATOR), misbehave];
    Arc::new(
        Toolbox::builder(&runtime())
            .components(configs)
            .build()
            .await
            .unwrap(),
    )
}

/// A scripted model of `format` with `turns`, and an agent talking to it.
pub async fn scripted(
    format: Format,
    stream: bool,
    turns: Vec<Turn>,
    options: AgentOptions,
) -> (ScriptedModel, Agent) {
    let model = ScriptedModel::start(format, turns).await;
    let options = AgentOptions { stream, ..options };
    let agent = Agent::new(
        provider(format, &model.base_url(), http_options()),
        toolbox().await,
        options,
    );
    (model, agent)
}

/// Runs `prompt` on `agent` and collects the events' text.
pub async fn ask(
    agent: &Agent,
    prompt: &str,
    options: &RunOptions,
) -> (Result<RunResult, toolhost::agent::AgentError>, String) {
    let mut conversation = Conversation::new();
    conversation.push_user(prompt);
    let mut streamed = String::new();
    let mut events = |event: AgentEvent<'_>| {
        if let AgentEvent::Text(text) = event {
            streamed.push_str(text);
        }
    };
    let result = agent.run(&mut conversation, options, &mut events).await;
    (result, streamed)
}

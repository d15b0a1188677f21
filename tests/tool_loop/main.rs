//! The tool-calling loop and the providers, from the library and through `host run` and
//! `host chat`: a scripted model server on 127.0.0.1 speaking both wire formats drives every
//! loop rule deterministically; fault tests break the server on purpose; end-to-end tests run
//! the real local llama-server with Gemma 3 270M.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod approval;
mod approve_cli;
mod asking;
mod audit;
mod bounds;
mod captured;
mod cli;
mod code_mode;
mod eval;
mod faults;
mod faults_more;
mod guards;
mod host;
mod local;
mod policies;
mod readme;
mod refusals;
mod rules;
mod tls;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use toolhost::agent::{Agent, AgentEvent, AgentOptions, Conversation, RunOptions, RunResult};
use toolhost::llm::{AnthropicProvider, HttpOptions, OpenAiProvider, Provider};
use toolhost::sandbox::LimitsConfig;
use toolhost::units::HumanDuration;
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
        ..HttpOptions::default()
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

/// What a request body sent to a scripted model carried, read the way its format writes it.
pub mod sent {
    use serde_json::Value;
    use toolhost_tests::model::Format;

    /// The names of the tools offered (empty when none were).
    pub fn tools(format: Format, body: &Value) -> Vec<String> {
        let Some(tools) = body.get("tools").and_then(Value::as_array) else {
            return Vec::new();
        };
        tools
            .iter()
            .map(|tool| {
                let name = match format {
                    Format::OpenAi => &tool["function"]["name"],
                    Format::Anthropic => &tool["name"],
                };
                name.as_str().unwrap().to_owned()
            })
            .collect()
    }

    /// The tool choice sent, in a form common to both formats: `auto`, `none`, `required`,
    /// the name of a forced tool, or `absent`.
    pub fn tool_choice(format: Format, body: &Value) -> String {
        let Some(choice) = body.get("tool_choice") else {
            return "absent".into();
        };
        match format {
            Format::OpenAi => match choice {
                Value::String(choice) => choice.clone(),
                forced => forced["function"]["name"].as_str().unwrap().to_owned(),
            },
            Format::Anthropic => match choice["type"].as_str().unwrap() {
                "any" => "required".into(),
                "tool" => choice["name"].as_str().unwrap().to_owned(),
                other => other.to_owned(),
            },
        }
    }

    /// Every tool result in the request: (call id, content, is_error).
    pub fn results(format: Format, body: &Value) -> Vec<(String, String, bool)> {
        let messages = body["messages"].as_array().unwrap();
        match format {
            Format::OpenAi => messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| {
                    let content = m["content"].as_str().unwrap().to_owned();
                    (
                        m["tool_call_id"].as_str().unwrap().to_owned(),
                        content,
                        false,
                    )
                })
                .collect(),
            Format::Anthropic => messages
                .iter()
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|block| block["type"] == "tool_result")
                .map(|block| {
                    (
                        block["tool_use_id"].as_str().unwrap().to_owned(),
                        block["content"].as_str().unwrap().to_owned(),
                        block["is_error"] == true,
                    )
                })
                .collect(),
        }
    }
}

//! The tool-calling loop: offer the loaded tools to a model, run the calls it asks for in the
//! sandbox, send the results back, repeat until it answers.
//!
//! [`Host::agent`](crate::Host::agent) gives an agent with a manifest's settings applied;
//! one can also be put together from a provider and a toolbox:
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::agent::{Agent, AgentOptions, Conversation, RunOptions};
//! use toolhost::llm::{HttpOptions, OpenAiProvider};
//! # async fn example(toolbox: toolhost::Toolbox) -> anyhow::Result<()> {
//! let model = OpenAiProvider::new("http://127.0.0.1:8080/v1", "gemma", None, HttpOptions::default())?;
//! let agent = Agent::new(Arc::new(model), Arc::new(toolbox), AgentOptions::default());
//! let mut conversation = Conversation::new();
//! conversation.push_user("What is the square root of 475695037565?");
//! let result = agent.run(&mut conversation, &RunOptions::default(), &mut |_| {}).await?;
//! println!("{} ({} tool calls)", result.text, result.executions.len());
//! # Ok(()) }
//! ```
//!
//! [`Agent::run`] is the whole loop. [`Agent::step`] is one model request that returns the
//! tool calls without running them, for a caller that runs tools itself and submits results
//! with [`Conversation::submit`] (Spring AI's user-controlled execution, Genkit's
//! `returnToolRequests`).

mod config;
mod conversation;
mod execute;
mod guard;
mod select;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use tracing::Instrument;

pub use config::AgentConfig;
pub use conversation::Conversation;
pub use execute::{Outcome, ToolExecution};
pub use select::{ToolIndex, ToolLimit};

use guard::Guard;

use crate::llm::{
    ChatRequest, FinishReason, Message, Provider, ProviderError, ToolCall, ToolChoice,
    ToolDefinition, Usage, arguments_object,
};
use crate::{CallContext, ToolSpec, Toolbox};

/// What to do when the model calls a tool that does not exist (or was not offered).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownTool {
    /// Send the model an error result that lists the available tools, and go on.
    #[default]
    ReportToModel,
    /// End the run with [`AgentError::UnknownTool`].
    Fail,
}

/// How an [`Agent`] runs, for every request.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOptions {
    /// The most model turns in one run. Default 10.
    pub max_rounds: usize,
    /// A system prompt, put ahead of the conversation.
    pub system: Option<String>,
    /// Sampling temperature; the server's default when `None`.
    pub temperature: Option<f32>,
    /// The most tokens per model turn.
    pub max_tokens: Option<u32>,
    /// Whether to stream answers (text deltas reach [`AgentEvent::Text`]). Default on.
    pub stream: bool,
    /// What to do with calls of unknown tools.
    pub unknown_tool: UnknownTool,
    /// Tools whose result is the run's answer: when every call of a turn is one of these and
    /// succeeds, the run ends with the results, without another model request.
    pub return_direct: BTreeSet<String>,
    /// How many of the tools a request offers: all (the default), or the best few for the
    /// conversation (the local model's default; see [`ToolIndex`]).
    pub tool_limit: ToolLimit,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            max_rounds: 10,
            system: None,
            temperature: None,
            max_tokens: None,
            stream: true,
            unknown_tool: UnknownTool::default(),
            return_direct: BTreeSet::new(),
            tool_limit: ToolLimit::All,
        }
    }
}

/// Chooses the tools offered with a request, given the conversation.
pub type ToolFilter = Arc<dyn Fn(&ToolSpec, &[Message]) -> bool + Send + Sync>;

/// Which of the loaded tools a request offers.
#[derive(Clone, Default)]
pub enum ToolSelection {
    /// All of them.
    #[default]
    All,
    /// These, by name.
    Only(BTreeSet<String>),
    /// Those the filter accepts; it sees the conversation, so it can choose per request.
    Filter(ToolFilter),
}

impl std::fmt::Debug for ToolSelection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::All => f.write_str("All"),
            Self::Only(names) => f.debug_tuple("Only").field(names).finish(),
            Self::Filter(_) => f.write_str("Filter(..)"),
        }
    }
}

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Which tools to offer. [`ToolSelection::Only`] offers exactly those; with the others,
    /// the tool limit picks among the tools they allow.
    pub tools: ToolSelection,
    /// How many tools a request offers, over the agent's [`AgentOptions::tool_limit`].
    pub tool_limit: Option<ToolLimit>,
    /// Whether and which tool the model must call. A forced choice (a tool's name, or
    /// `required`) applies to the run's first request only; later ones go back to `auto`, so
    /// that the model can answer.
    pub tool_choice: ToolChoice,
    /// Key/value pairs delivered to every tool call of the run (a tenant, a user id); never
    /// shown to the model.
    pub context: BTreeMap<String, String>,
}

/// What a run reports as it goes, for streaming front ends.
#[derive(Debug)]
pub enum AgentEvent<'a> {
    /// A piece of the model's answer.
    Text(&'a str),
    /// A tool call is starting.
    ToolStarted {
        /// The call.
        call: &'a ToolCall,
    },
    /// A tool call is over.
    ToolFinished {
        /// Its record.
        execution: &'a ToolExecution,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnd {
    /// The model answered.
    Answered,
    /// The model hit its token limit while answering; the text is cut off.
    Truncated,
    /// A return-direct tool's result is the answer.
    ReturnDirect,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// The answer.
    pub text: String,
    /// How the run ended.
    pub end: RunEnd,
    /// Every tool call, in order.
    pub executions: Vec<ToolExecution>,
    /// How many model requests were made.
    pub rounds: usize,
    /// Tokens used, summed over the requests that reported them.
    pub usage: Usage,
}

/// What one model request produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The model answered.
    Answer {
        /// The text.
        text: String,
        /// Why it stopped.
        finish: FinishReason,
    },
    /// The model asks for these tool calls (recorded in the conversation, not run).
    ToolCalls(Vec<ToolCall>),
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model request failed.
    #[error("the model request failed")]
    Provider(#[from] ProviderError),

    /// The model kept calling tools.
    #[error(
        "the model was still calling tools after {limit} rounds ({} tool calls); raise the round \
         limit (max_rounds) or make the request more specific",
        executions.len()
    )]
    RoundLimit {
        /// The limit.
        limit: usize,
        /// The tool calls made until then.
        executions: Vec<ToolExecution>,
    },

    /// The model made the same call (same tool, same arguments) again after it failed, and it
    /// failed again.
    #[error(
        "the model called `{tool}` with the same arguments {count} times and it failed each \
         time, so the run was stopped; the last error: {error}"
    )]
    RepeatedFailure {
        /// The tool.
        tool: String,
        /// The arguments, as the model wrote them.
        arguments: String,
        /// The last error (the operator's message).
        error: String,
        /// How many times the call failed.
        count: usize,
        /// The tool calls made until then.
        executions: Vec<ToolExecution>,
    },

    /// A tool call in the history has no result.
    #[error("tool call `{id}` ({name}) has no result; submit one before the next model request")]
    UnansweredToolCall {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
    },

    /// A result names a call that is not pending.
    #[error("there is no pending tool call `{id}` to answer")]
    NoSuchPendingCall {
        /// The id given.
        id: String,
    },

    /// The model called a tool that does not exist ([`UnknownTool::Fail`]).
    #[error("the model called `{name}`, which is not one of the tools offered ({})", available.join(", "))]
    UnknownTool {
        /// The name it used.
        name: String,
        /// The tools offered.
        available: Vec<String>,
    },

    /// The model's turn was cut off by the token limit in the middle of a tool call.
    #[error(
        "the model hit its token limit (max_tokens {}) in the middle of a tool call; raise max_tokens",
        max_tokens.map_or_else(|| "default".to_owned(), |n| n.to_string())
    )]
    Truncated {
        /// The limit that was set.
        max_tokens: Option<u32>,
    },
}

/// The kind of an [`AgentError`], for callers that branch on it and for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentErrorKind {
    /// [`AgentError::Provider`].
    Provider,
    /// [`AgentError::RoundLimit`].
    RoundLimit,
    /// [`AgentError::RepeatedFailure`].
    RepeatedFailure,
    /// [`AgentError::UnansweredToolCall`].
    UnansweredToolCall,
    /// [`AgentError::NoSuchPendingCall`].
    NoSuchPendingCall,
    /// [`AgentError::UnknownTool`].
    UnknownTool,
    /// [`AgentError::Truncated`].
    Truncated,
}

impl AgentError {
    /// The tool calls the run made before it failed this way (none for most kinds).
    pub fn executions(&self) -> &[ToolExecution] {
        match self {
            Self::RoundLimit { executions, .. } | Self::RepeatedFailure { executions, .. } => {
                executions
            }
            _ => &[],
        }
    }

    /// The kind of error.
    pub fn kind(&self) -> AgentErrorKind {
        match self {
            Self::Provider(_) => AgentErrorKind::Provider,
            Self::RoundLimit { .. } => AgentErrorKind::RoundLimit,
            Self::RepeatedFailure { .. } => AgentErrorKind::RepeatedFailure,
            Self::UnansweredToolCall { .. } => AgentErrorKind::UnansweredToolCall,
            Self::NoSuchPendingCall { .. } => AgentErrorKind::NoSuchPendingCall,
            Self::UnknownTool { .. } => AgentErrorKind::UnknownTool,
            Self::Truncated { .. } => AgentErrorKind::Truncated,
        }
    }
}

/// The tool choice of the rounds after the first: a forced choice (a tool, or `required`)
/// applies to the first round only, or the model could never answer.
fn after_first_round(choice: &ToolChoice) -> ToolChoice {
    match choice {
        ToolChoice::Required | ToolChoice::Tool(_) => ToolChoice::Auto,
        other => other.clone(),
    }
}

/// A model, the tools it may call, and how to run the loop.
#[derive(Clone)]
pub struct Agent {
    provider: Arc<dyn Provider>,
    toolbox: Arc<Toolbox>,
    options: AgentOptions,
    index: Arc<select::IndexCache>,
}

impl Agent {
    /// An agent offering `toolbox`'s tools to the model behind `provider`.
    pub fn new(provider: Arc<dyn Provider>, toolbox: Arc<Toolbox>, options: AgentOptions) -> Self {
        Self {
            provider,
            toolbox,
            options,
            index: Arc::default(),
        }
    }

    /// The tools.
    pub fn toolbox(&self) -> &Toolbox {
        &self.toolbox
    }

    /// How it runs.
    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// The model.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// Runs the loop on `conversation` (which should end with the user's message) until the
    /// model answers, a return-direct tool answers, or the round limit is reached. The
    /// conversation keeps every message, so a chat can go on with another user message.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<RunResult, AgentError> {
        let span = tracing::info_span!("agent_run", model = %self.provider.describe());
        async {
            let context = CallContext {
                call_id: String::new(),
                values: options.context.clone(),
            };
            let mut executions: Vec<ToolExecution> = Vec::new();
            let mut usage = Usage::default();
            let mut guard = Guard::default();
            for round in 1..=self.options.max_rounds {
                // After a repeated call the model has what it needs: no tools, so it answers.
                let tools = if guard.take_answer_next() {
                    Vec::new()
                } else {
                    self.offered(conversation.messages(), options)
                };
                let offered: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
                let tool_choice = if round == 1 {
                    options.tool_choice.clone()
                } else {
                    after_first_round(&options.tool_choice)
                };
                let (step, step_usage) = self
                    .request(conversation, tools, tool_choice, round, events)
                    .await?;
                usage = usage + step_usage;
                let calls = match step {
                    Step::Answer { text, finish } => {
                        let end = if finish == FinishReason::Length {
                            RunEnd::Truncated
                        } else {
                            RunEnd::Answered
                        };
                        return Ok(RunResult {
                            text,
                            end,
                            executions,
                            rounds: round,
                            usage,
                        });
                    }
                    Step::ToolCalls(calls) => calls,
                };
                let done = self
                    .execute(
                        conversation,
                        &calls,
                        &offered,
                        &context,
                        round,
                        &guard,
                        events,
                    )
                    .await?;
                if done.iter().any(|e| e.repeat_of.is_some()) {
                    guard.repeated();
                }
                let failed = guard.record(&done);
                let direct = !done.is_empty()
                    && done
                        .iter()
                        .all(|e| e.is_ok() && self.options.return_direct.contains(&e.name));
                executions.extend(done);
                if let Some(failed) = failed {
                    return Err(AgentError::RepeatedFailure {
                        tool: failed.tool,
                        arguments: failed.arguments,
                        error: failed.error,
                        count: failed.count,
                        executions,
                    });
                }
                if direct {
                    let text = executions
                        .iter()
                        .filter(|e| e.round == round)
                        .map(|e| e.output.as_str())
                        .collect::<Vec<_>>()
                        .join("\n");
                    return Ok(RunResult {
                        text,
                        end: RunEnd::ReturnDirect,
                        executions,
                        rounds: round,
                        usage,
                    });
                }
            }
            Err(AgentError::RoundLimit {
                limit: self.options.max_rounds,
                executions,
            })
        }
        .instrument(span)
        .await
    }

    /// One model request on `conversation`. Tool calls are recorded in the conversation but
    /// not run: the caller runs them (or not) and answers each with
    /// [`Conversation::submit`] before the next step.
    pub async fn step(
        &self,
        conversation: &mut Conversation,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Step, AgentError> {
        let round = conversation.turns() + 1;
        let tools = self.offered(conversation.messages(), options);
        Ok(self
            .request(
                conversation,
                tools,
                options.tool_choice.clone(),
                round,
                events,
            )
            .await?
            .0)
    }

    /// Runs `calls` (pending calls of `conversation`, as [`Agent::step`] returned them) in
    /// the sandbox, concurrently, and submits their results: the caller-controlled mode's
    /// way to let toolhost run some or all of the calls it was handed.
    pub async fn run_calls(
        &self,
        conversation: &mut Conversation,
        calls: &[ToolCall],
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Vec<ToolExecution>, AgentError> {
        let offered = self
            .offered(conversation.messages(), options)
            .into_iter()
            .map(|t| t.name)
            .collect();
        let context = CallContext {
            call_id: String::new(),
            values: options.context.clone(),
        };
        let round = conversation.turns();
        let guard = Guard::default();
        self.execute(
            conversation,
            calls,
            &offered,
            &context,
            round,
            &guard,
            events,
        )
        .await
    }

    /// Runs the calls of one turn, except those identical to a call that succeeded earlier in
    /// the run (they get its result), and submits every result, in call order.
    #[allow(clippy::too_many_arguments)]
    async fn execute(
        &self,
        conversation: &mut Conversation,
        calls: &[ToolCall],
        offered: &BTreeSet<String>,
        context: &CallContext,
        round: usize,
        guard: &Guard,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Vec<ToolExecution>, AgentError> {
        let earlier = |call: &ToolCall| {
            offered
                .contains(&call.name)
                .then(|| guard.earlier(&call.name, &call.arguments))
                .flatten()
        };
        let to_run: Vec<ToolCall> = calls
            .iter()
            .filter(|call| earlier(call).is_none())
            .cloned()
            .collect();
        let mut ran = execute::execute_calls(
            &self.toolbox,
            &to_run,
            offered,
            self.options.unknown_tool,
            context,
            round,
            events,
        )
        .await?
        .into_iter();
        let mut done = Vec::with_capacity(calls.len());
        for call in calls {
            match earlier(call) {
                Some(earlier) => {
                    let execution = ToolExecution::repeat(call, earlier, round);
                    events(AgentEvent::ToolFinished {
                        execution: &execution,
                    });
                    done.push(execution);
                }
                None => done.extend(ran.next()),
            }
        }
        for execution in &done {
            let result = if execution.is_ok() {
                Ok(execution.output.clone())
            } else {
                Err(execution.output.clone())
            };
            conversation.submit(&execution.call_id, result)?;
        }
        Ok(done)
    }

    async fn request(
        &self,
        conversation: &mut Conversation,
        tools: Vec<ToolDefinition>,
        tool_choice: ToolChoice,
        round: usize,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<(Step, Usage), AgentError> {
        conversation.check_answered()?;
        let mut messages = Vec::with_capacity(conversation.messages().len() + 1);
        if let Some(system) = &self.options.system
            && !matches!(
                conversation.messages().first(),
                Some(Message::System { .. })
            )
        {
            messages.push(Message::system(system.clone()));
        }
        messages.extend(conversation.messages().iter().cloned());
        let request = ChatRequest {
            messages,
            tool_choice: if tools.is_empty() {
                ToolChoice::Auto
            } else {
                tool_choice
            },
            tools,
            temperature: self.options.temperature,
            max_tokens: self.options.max_tokens,
            stream: self.options.stream,
        };
        let span = tracing::info_span!(
            "model_request",
            round,
            tools = request.tools.len(),
            finish = tracing::field::Empty,
            tool_calls = tracing::field::Empty,
        );
        let started = Instant::now();
        let mut on_text = |text: &str| events(AgentEvent::Text(text));
        let response = self
            .provider
            .chat(&request, &mut on_text)
            .instrument(span.clone())
            .await?;
        span.record("finish", format!("{:?}", response.finish));
        span.record("tool_calls", response.tool_calls.len());
        tracing::debug!(parent: &span, took = ?started.elapsed(), "model answered");
        let usage = response.usage.unwrap_or_default();

        let mut calls = response.tool_calls;
        if response.finish == FinishReason::Length {
            // A call cut off by the token limit has broken arguments: never send it back.
            calls.retain(|call| arguments_object(&call.arguments).is_some());
            if calls.is_empty() && response.text.trim().is_empty() {
                return Err(AgentError::Truncated {
                    max_tokens: self.options.max_tokens,
                });
            }
        }
        if calls.is_empty() {
            conversation.push_assistant(response.text.clone(), Vec::new());
            return Ok((
                Step::Answer {
                    text: response.text,
                    finish: response.finish,
                },
                usage,
            ));
        }
        // The history gets `{}` for arguments that are not a JSON object (providers reject
        // them); the caller gets the model's own text, to report what was wrong with it.
        let echoed: Vec<ToolCall> = calls
            .iter()
            .map(|call| ToolCall {
                arguments: match arguments_object(&call.arguments) {
                    Some(_) if !call.arguments.trim().is_empty() => call.arguments.clone(),
                    _ => "{}".to_owned(),
                },
                ..call.clone()
            })
            .collect();
        let with_ids = conversation.push_assistant(response.text, echoed);
        let calls = calls
            .into_iter()
            .zip(with_ids)
            .map(|(call, echoed)| ToolCall {
                id: echoed.id,
                ..call
            })
            .collect();
        Ok((Step::ToolCalls(calls), usage))
    }

    /// The tools a request offers: those the run's selection allows, and of those, when
    /// there is a tool limit, the best for the conversation, best first.
    fn offered(&self, messages: &[Message], options: &RunOptions) -> Vec<ToolDefinition> {
        let catalog = self.toolbox.catalog();
        let allowed = |spec: &ToolSpec| match &options.tools {
            ToolSelection::All => true,
            ToolSelection::Only(names) => names.contains(&spec.name),
            ToolSelection::Filter(filter) => filter(spec, messages),
        };
        let limit = options.tool_limit.unwrap_or(self.options.tool_limit);
        let specs: Vec<&ToolSpec> = match (limit, &options.tools) {
            (ToolLimit::Top(k), ToolSelection::All | ToolSelection::Filter(_)) => {
                let index = self.index.get(&catalog);
                index
                    .rank(messages)
                    .into_iter()
                    .filter_map(|(at, _)| catalog.get(index.name(at)))
                    .filter(|spec| allowed(spec))
                    .take(k)
                    .collect()
            }
            _ => catalog.iter().filter(|spec| allowed(spec)).collect(),
        };
        if limit != ToolLimit::All {
            tracing::debug!(
                offered = ?specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
                "tools ranked for the request"
            );
        }
        specs
            .into_iter()
            .map(|spec| ToolDefinition {
                name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: spec.input_schema.clone(),
            })
            .collect()
    }
}

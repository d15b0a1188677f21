//! The tool-calling loop: offer the loaded tools to a model, run the calls it asks for in the
//! sandbox, send the results back, repeat until it answers.
//!
//! [`Host::agent`](crate::host::Host::agent) gives an agent with a manifest's settings applied;
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
//!
//! # Asking before acting
//!
//! A call can wait for a person's approval: per tool or by what tools hold
//! ([`AgentOptions::approval`], a manifest's `approval` and `[approval] ask_for`), or as the
//! run's [`RunOptions::needs_approval`] predicate says. The run then pauses:
//! [`Agent::run`] returns a [`RunResult`] whose `end` is [`RunEnd::Paused`] with the
//! `pending` calls, and the conversation holds the paused run. It serializes to JSON
//! (with a format version), so the decision can come from another process:
//!
//! ```no_run
//! # use toolhost::agent::{Agent, Conversation, RunEnd, RunOptions};
//! # async fn example(agent: Agent) -> anyhow::Result<()> {
//! let options = RunOptions::default();
//! let mut conversation = Conversation::new();
//! conversation.push_user("Save a note titled chores saying: fix the door.");
//! let mut result = agent.run(&mut conversation, &options, &mut |_| {}).await?;
//! while result.end == RunEnd::Paused {
//!     let saved = serde_json::to_string(&conversation)?; // keep it anywhere, resume anywhere
//!     let mut conversation = Conversation::from_json(&saved)?;
//!     for call in &result.pending {
//!         if call.tool == "write_note" {
//!             conversation.approve(&call.call_id)?;
//!         } else {
//!             conversation.reject(&call.call_id, "only notes today")?;
//!         }
//!     }
//!     result = agent.resume(&mut conversation, &options, &mut |_| {}).await?;
//! }
//! # Ok(()) }
//! ```
//!
//! Every call can also be written to an audit log ([`Agent::with_audit`], [`AuditLog`]).

mod approval;
mod asking;
mod audit;
mod code;
mod config;
mod conversation;
mod error;
mod execute;
mod guard;
mod plan;
mod record;
mod replay;
mod run;
mod select;
mod state;

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use tracing::Instrument;

pub use approval::{Approval, ApprovalPredicate, ApprovalRules, Decision, PendingCall};
pub use asking::{AskingCall, InputAnswer, MAX_ASKS};
pub use audit::{AuditCaller, AuditLog, AuditRecord, AuditSink, ServedCall};
pub use config::AgentConfig;
pub use conversation::{Conversation, FORMAT_VERSION, FormatError};
pub use error::{AgentError, AgentErrorKind, RunRecord};
pub use record::{InvalidCall, InvalidProblem, Outcome, ToolExecution};
pub use select::{RELATIVE_CUTOFF, ToolIndex, offer};
// The manifest's words for the loop's settings, under the names the loop's users know.
pub use crate::manifest::{ApprovalMode, AskFor, OnError, model::ToolLimit};
pub use state::RunState;

use crate::arguments::Arguments;
use crate::asking::Asker;
#[cfg(feature = "code-mode")]
use crate::code::CodeMode;
use crate::llm::{
    ChatRequest, ChatResponse, FinishReason, Message, ModelRules, Provider, ToolCall, ToolChoice,
    ToolDefinition, Usage,
};
use crate::sandbox::Observer;
use crate::spec::ToolSpec;
use crate::toolbox::Toolbox;

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
    /// Tools whose result is the run's answer: when a call of one of these succeeds, the run
    /// ends with its result (the results of all such calls of the turn, one per line),
    /// without another model request. A manifest's `stop_at`, and its tools marked
    /// `return_direct`.
    pub stop_at: BTreeSet<String>,
    /// Tools whose failure ends the run ([`AgentError::ToolFailed`]) instead of going to the
    /// model as an error result (a manifest's `on_error = "fail_run"`).
    pub fail_run: BTreeSet<String>,
    /// Which calls wait for approval. None by default.
    pub approval: ApprovalRules,
    /// The most calls of one model turn that run at once; all of them when `None`.
    pub max_parallel_calls: Option<NonZeroUsize>,
    /// The most calls one model turn may make: the calls past it do not run, and the model
    /// is told so in their results ([`InvalidProblem::TooManyCalls`]). Default 32.
    pub max_calls_per_turn: usize,
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
            stop_at: BTreeSet::new(),
            fail_run: BTreeSet::new(),
            approval: ApprovalRules::default(),
            max_parallel_calls: None,
            max_calls_per_turn: 32,
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

/// Options of one run. A paused run resumes with the same ones (they are not saved with it).
#[derive(Clone, Default)]
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
    /// Calls this accepts wait for approval, besides those the agent's
    /// [`approval`](AgentOptions::approval) rules name.
    pub needs_approval: Option<ApprovalPredicate>,
    /// Who gets the progress reports and log lines of the run's tool calls while they run.
    pub observer: Option<Observer>,
    /// Who answers what a tool's source asks while a call runs (an MCP server's
    /// elicitation, say). A component that asks ends its call first: the run pauses for
    /// that, whatever this is.
    pub asker: Option<Asker>,
    /// Code mode: the model is offered one tool ([`CodeMode::tool`], `run_code`), whose
    /// description lists the tools this run offers as typed signatures, and whose program
    /// calls them (each call approved, audited and recorded as the model's would be; one that
    /// needs a person's approval is denied unless its tool was approved for the run). Off by
    /// default. (The `code-mode` feature.)
    #[cfg(feature = "code-mode")]
    pub code_mode: Option<Arc<CodeMode>>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("tools", &self.tools)
            .field("tool_limit", &self.tool_limit)
            .field("tool_choice", &self.tool_choice)
            .field("context", &self.context)
            .field(
                "needs_approval",
                &self.needs_approval.as_ref().map(|_| ".."),
            )
            .finish_non_exhaustive()
    }
}

/// What a run reports as it goes, for streaming front ends.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentEvent<'a> {
    /// A piece of the model's answer.
    Text(&'a str),
    /// A tool call is starting.
    ToolStarted {
        /// The call.
        call: &'a ToolCall,
    },
    /// A tool call is over (or was rejected, or answered from an earlier identical call).
    ToolFinished {
        /// Its record.
        execution: &'a ToolExecution,
    },
    /// The model made a call that cannot run.
    InvalidCall {
        /// What was wrong.
        call: &'a InvalidCall,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEnd {
    /// The model answered.
    Answered,
    /// The model hit its token limit while answering; the text is cut off.
    Truncated,
    /// A `stop_at` (or return-direct) tool's result is the answer.
    ReturnDirect,
    /// Calls wait for approval: decide them in the conversation, then [`Agent::resume`].
    Paused,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// The answer (empty when paused).
    pub text: String,
    /// How the run ended.
    pub end: RunEnd,
    /// Every tool call, in order (rejected ones, and ones answered from an earlier identical
    /// call, included).
    pub executions: Vec<ToolExecution>,
    /// The calls that could not run: arguments that are not JSON, tools not offered, calls
    /// cut off by the token limit.
    pub invalid_calls: Vec<InvalidCall>,
    /// When paused: the calls that wait for a decision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingCall>,
    /// When paused: the calls that ask for input before they can finish.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub asking: Vec<AskingCall>,
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

/// What a model request brought back.
struct Reply {
    /// The answer or the calls; `None` when the token limit cut off a tool call and left
    /// nothing else.
    step: Option<Step>,
    usage: Usage,
    /// Calls cut off by the token limit (never sent back to the model).
    cut_off: Vec<ToolCall>,
}

/// A model, the tools it may call, and how to run the loop.
#[derive(Clone)]
pub struct Agent {
    provider: Arc<dyn Provider>,
    toolbox: Arc<Toolbox>,
    options: AgentOptions,
    audit: Option<Arc<dyn AuditSink>>,
    index: Arc<select::IndexCache>,
    /// What the model adds to selection and to its requests ([`Provider::rules`]).
    rules: Arc<dyn ModelRules>,
}

impl Agent {
    /// An agent offering `toolbox`'s tools to the model behind `provider`.
    pub fn new(provider: Arc<dyn Provider>, toolbox: Arc<Toolbox>, options: AgentOptions) -> Self {
        Self {
            rules: provider.rules(),
            provider,
            toolbox,
            options,
            audit: None,
            index: Arc::default(),
        }
    }

    /// The same agent, recording every tool call to `audit` before its result goes back to
    /// the model. A record that cannot be written ends the run ([`AgentError::Audit`]).
    pub fn with_audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(audit);
        self
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

    /// One model request on `conversation`. Tool calls are recorded in the conversation but
    /// not run: the caller runs them (or not) and answers each with
    /// [`Conversation::submit`] before the next step. Calls cut off by the token limit are
    /// reported as [`AgentEvent::InvalidCall`] and left out.
    pub async fn step(
        &self,
        conversation: &mut Conversation,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Step, AgentError> {
        let round = conversation.turns() + 1;
        self.toolbox.refresh().await;
        let tools = self.offered(conversation.messages(), options);
        let reply = self
            .request(
                conversation,
                tools,
                options.tool_choice.clone(),
                round,
                None,
                events,
            )
            .await?;
        let cut_off: Vec<InvalidCall> = reply
            .cut_off
            .iter()
            .map(|call| self.cut_off(call, round))
            .collect();
        for call in &cut_off {
            events(AgentEvent::InvalidCall { call });
        }
        reply.step.ok_or_else(|| AgentError::Truncated {
            max_tokens: self.options.max_tokens,
            record: Box::new(RunRecord {
                executions: Vec::new(),
                invalid_calls: cut_off,
            }),
        })
    }

    /// Asks the model for its next message; turns its answer into the run's next step, the
    /// conversation told what it said. When the loop runs the calls, at most `may_run` of
    /// them run, and the arguments of the rest are not read (see [`reply_of`]).
    async fn request(
        &self,
        conversation: &mut Conversation,
        tools: Vec<ToolDefinition>,
        tool_choice: ToolChoice,
        round: usize,
        may_run: Option<usize>,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Reply, AgentError> {
        conversation.check_answered()?;
        let request = self.chat_request(conversation, tools, tool_choice);
        let span = tracing::info_span!(
            "model_request",
            round,
            tools = request.tools.len(),
            finish = tracing::field::Empty,
            tool_calls = tracing::field::Empty,
        );
        // As the model needs it (the tools it was offered stay as they were for the checks).
        let request = self.rules.adapt(&request).unwrap_or(request);
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
        Ok(reply_of(
            conversation,
            response,
            may_run.unwrap_or(usize::MAX),
        ))
    }

    /// The request for the conversation so far: the system prompt ahead of it (unless it has
    /// its own), `tools` offered with `tool_choice`, the loop's sampling settings.
    fn chat_request(
        &self,
        conversation: &Conversation,
        tools: Vec<ToolDefinition>,
        tool_choice: ToolChoice,
    ) -> ChatRequest {
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
        ChatRequest {
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
            extra: Default::default(),
        }
    }

    /// The record of a call cut off by the token limit.
    fn cut_off(&self, call: &ToolCall, round: usize) -> InvalidCall {
        InvalidCall {
            round,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            problem: InvalidProblem::CutOff,
            message: format!(
                "cut off by the token limit (max_tokens {}); not sent back to the model",
                self.options
                    .max_tokens
                    .map_or_else(|| "default".to_owned(), |n| n.to_string())
            ),
        }
    }

    /// The tools a request offers.
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
                let index = self.index.get(&catalog, &self.rules);
                let ranked = index
                    .rank(messages)
                    .into_iter()
                    .filter_map(|(at, score)| Some((catalog.get(index.name(at))?, score)))
                    .filter(|(spec, _)| allowed(spec))
                    .collect();
                offer(ranked, k).into_iter().map(|(spec, _)| spec).collect()
            }
            _ => catalog.iter().filter(|spec| allowed(spec)).collect(),
        };
        if limit != ToolLimit::All {
            tracing::debug!(
                offered = ?specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
                "tools ranked for the request"
            );
        }
        #[cfg(feature = "code-mode")]
        if let Some(code) = &options.code_mode {
            // One tool, whose description lists the selected ones, best first.
            let spec = code.spec(&specs);
            return vec![ToolDefinition {
                name: spec.name,
                description: spec.description,
                parameters: spec.input_schema,
            }];
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

    /// What the programs of a run with `options` need, in code mode; `may_pause` when a call
    /// of theirs that needs approval may pause the run (else it is denied).
    #[cfg(feature = "code-mode")]
    fn program_turn(
        &self,
        state: &RunState,
        options: &RunOptions,
        may_pause: bool,
    ) -> Option<code::ProgramTurn> {
        code::ProgramTurn::new(
            &self.toolbox,
            options,
            &self.options.approval,
            state.approved_tools().clone(),
            self.audit.clone(),
            state.run_id(),
        )
        .map(|turn| turn.pausing(may_pause))
    }

    /// Without the `code-mode` feature, a run has no programs.
    #[cfg(not(feature = "code-mode"))]
    fn program_turn(&self, _: &RunState, _: &RunOptions, _: bool) -> Option<code::ProgramTurn> {
        None
    }
}
/// The run's next step from the model's `response`, the conversation told what it said:
/// an answer, or tool calls (those cut off by the token limit set apart: their arguments
/// are broken, so they are never sent back).
///
/// Only the first `may_run` calls can run: the arguments of the others are not read, not
/// even to see whether they are JSON (so a message of thousands of calls costs no more than
/// its size), and the history keeps `{}` for them; the loop answers each that it did not run
/// (past the turn's limit).
fn reply_of(conversation: &mut Conversation, response: ChatResponse, may_run: usize) -> Reply {
    let usage = response.usage.unwrap_or_default();
    // Whether each call that may run has arguments that are a JSON object, read once for
    // both uses below; `None` past the limit, unread.
    let mut calls: Vec<(ToolCall, Option<bool>)> = response
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(at, call)| {
            let object = (at < may_run).then(|| Arguments::parse(&call.arguments).is_ok());
            (call, object)
        })
        .collect();
    let mut cut_off = Vec::new();
    if response.finish == FinishReason::Length {
        // A call cut off by the token limit has broken arguments: never send it back. (Only
        // the last call can be cut off: one past the limit is refused for that anyway.)
        let broken;
        (calls, broken) = calls
            .into_iter()
            .partition(|(_, object)| *object != Some(false));
        cut_off = broken.into_iter().map(|(call, _)| call).collect();
        if calls.is_empty() && response.text.trim().is_empty() && !cut_off.is_empty() {
            return Reply {
                step: None,
                usage,
                cut_off,
            };
        }
    }
    if calls.is_empty() {
        conversation.push_assistant(response.text.clone(), Vec::new());
        let step = Step::Answer {
            text: response.text,
            finish: response.finish,
        };
        return Reply {
            step: Some(step),
            usage,
            cut_off,
        };
    }
    // The history gets `{}` for arguments that are not a JSON object (providers reject
    // them); the caller gets the model's own text, to report what was wrong with it.
    let echoed: Vec<ToolCall> = calls
        .iter()
        .map(|(call, object)| ToolCall {
            arguments: if *object == Some(true) && !call.arguments.trim().is_empty() {
                call.arguments.clone()
            } else {
                Arguments::empty().text().to_owned()
            },
            ..call.clone()
        })
        .collect();
    let with_ids = conversation.push_assistant(response.text, echoed);
    let calls = calls
        .into_iter()
        .zip(with_ids)
        .map(|((call, _), echoed)| ToolCall {
            id: echoed.id,
            ..call
        })
        .collect();
    Reply {
        step: Some(Step::ToolCalls(calls)),
        usage,
        cut_off,
    }
}

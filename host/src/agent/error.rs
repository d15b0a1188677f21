//! Why a run failed, and what it did until then.

use serde::Serialize;

use crate::llm::ProviderError;

use super::record::{InvalidCall, ToolExecution};

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
        record.executions.len()
    )]
    RoundLimit {
        /// The limit.
        limit: usize,
        /// What the run did until then.
        record: Box<RunRecord>,
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
        /// What the run did until then.
        record: Box<RunRecord>,
    },

    /// A tool whose errors end the run (`on_error = "fail_run"`) failed.
    #[error(
        "`{tool}` failed, and its errors end the run (on_error = \"fail_run\"): {error}; set \
         on_error = \"to_model\" under [tools.{tool}] to let the model see the error instead"
    )]
    ToolFailed {
        /// The tool.
        tool: String,
        /// Its error (the operator's message).
        error: String,
        /// What the run did until then, this call included.
        record: Box<RunRecord>,
    },

    /// A tool call could not be written to the audit log; the run stops rather than go on
    /// unrecorded.
    #[error("cannot write to the {target}; the run was stopped so that no call goes unrecorded")]
    Audit {
        /// The log ("audit log /path").
        target: String,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },

    /// [`Agent::run`](super::Agent::run) on a conversation whose run is paused.
    #[error(
        "the conversation has a paused run ({run_id}) whose tool calls wait for approval; decide \
         them and call Agent::resume"
    )]
    RunPaused {
        /// The paused run.
        run_id: String,
    },

    /// [`Agent::resume`](super::Agent::resume) on a conversation without a paused run.
    #[error("the conversation has no paused run to resume; start one with Agent::run")]
    NothingToResume,

    /// A call needs approval and nobody can be asked ([`Host::run`](crate::host::Host::run)).
    #[error(
        "`{tool}` needs approval before it runs, and Host::run cannot ask anyone; use \
         Host::agent and Agent::run, which pause for a decision, or set approval = \"never\" \
         under [tools.{tool}]"
    )]
    ApprovalNeeded {
        /// The first tool that needs it.
        tool: String,
    },

    /// A call asks for input before it can finish and nobody can be asked
    /// ([`Host::run`](crate::host::Host::run)).
    #[error(
        "`{tool}` asks for input before it can finish, and Host::run cannot ask anyone; use \
         Host::agent and Agent::run, which pause for the answers (Conversation::answer_input)"
    )]
    InputNeeded {
        /// The first tool that asks.
        tool: String,
    },

    /// An answer to a call that asked for input is not one it can take.
    #[error("the answer to tool call `{id}` cannot be taken: {problem}")]
    InvalidInputAnswer {
        /// The call's id.
        id: String,
        /// What is wrong with it.
        problem: String,
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

    /// The model called a tool that does not exist ([`UnknownTool::Fail`](super::UnknownTool)).
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
        /// What the run did until then, the cut-off call included.
        record: Box<RunRecord>,
    },
}

/// What a run did before it failed: the tool calls, and the invalid ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunRecord {
    /// Every tool call, in order.
    pub executions: Vec<ToolExecution>,
    /// The calls that could not run.
    pub invalid_calls: Vec<InvalidCall>,
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
    /// [`AgentError::ToolFailed`].
    ToolFailed,
    /// [`AgentError::Audit`].
    Audit,
    /// [`AgentError::RunPaused`].
    RunPaused,
    /// [`AgentError::NothingToResume`].
    NothingToResume,
    /// [`AgentError::ApprovalNeeded`].
    ApprovalNeeded,
    /// [`AgentError::InputNeeded`].
    InputNeeded,
    /// [`AgentError::InvalidInputAnswer`].
    InvalidInputAnswer,
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
    /// The kind of error.
    pub fn kind(&self) -> AgentErrorKind {
        match self {
            Self::Provider(_) => AgentErrorKind::Provider,
            Self::RoundLimit { .. } => AgentErrorKind::RoundLimit,
            Self::RepeatedFailure { .. } => AgentErrorKind::RepeatedFailure,
            Self::ToolFailed { .. } => AgentErrorKind::ToolFailed,
            Self::Audit { .. } => AgentErrorKind::Audit,
            Self::RunPaused { .. } => AgentErrorKind::RunPaused,
            Self::NothingToResume => AgentErrorKind::NothingToResume,
            Self::ApprovalNeeded { .. } => AgentErrorKind::ApprovalNeeded,
            Self::InputNeeded { .. } => AgentErrorKind::InputNeeded,
            Self::InvalidInputAnswer { .. } => AgentErrorKind::InvalidInputAnswer,
            Self::UnansweredToolCall { .. } => AgentErrorKind::UnansweredToolCall,
            Self::NoSuchPendingCall { .. } => AgentErrorKind::NoSuchPendingCall,
            Self::UnknownTool { .. } => AgentErrorKind::UnknownTool,
            Self::Truncated { .. } => AgentErrorKind::Truncated,
        }
    }

    /// What the run did before it failed this way (for the kinds that end a run midway).
    pub fn record(&self) -> Option<&RunRecord> {
        match self {
            Self::RoundLimit { record, .. }
            | Self::RepeatedFailure { record, .. }
            | Self::ToolFailed { record, .. }
            | Self::Truncated { record, .. } => Some(record),
            _ => None,
        }
    }

    /// The tool calls the run made before it failed this way (none for most kinds).
    pub fn executions(&self) -> &[ToolExecution] {
        self.record().map_or(&[], |record| &record.executions)
    }

    /// The invalid tool calls the run recorded before it failed this way.
    pub fn invalid_calls(&self) -> &[InvalidCall] {
        self.record().map_or(&[], |record| &record.invalid_calls)
    }
}

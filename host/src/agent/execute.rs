//! Running the tool calls of one model turn: concurrently (up to a cap), results in call
//! order, every failure turned into an error result the model can read, every call recorded
//! in the audit log before its result goes back to the model.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};

use crate::llm::ToolCall;
use crate::{CallContext, CallError, ErrorKind, ToolImage, Toolbox};

use super::approval::Approval;
use super::audit::AuditTrail;
use super::guard::Earlier;
use super::{AgentError, AgentEvent};

/// What a tool whose function returned nothing reports to the model.
pub(crate) const SUCCESS: &str = "Success";

/// The record of one tool call of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecution {
    /// The round (model turn, from 1) that asked for it.
    pub round: usize,
    /// The call's id.
    pub call_id: String,
    /// The tool's name, as the model gave it.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What the model was sent: the result, or the error as the model reads it.
    pub output: String,
    /// Images the tool returned with its result (sent to the model with it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
    /// How long it took.
    #[serde(
        rename = "duration_ms",
        serialize_with = "crate::report::serialize_millis",
        deserialize_with = "crate::report::deserialize_millis"
    )]
    pub duration: Duration,
    /// Whether it waited for approval, and what was decided.
    #[serde(default, skip_serializing_if = "Approval::is_not_required")]
    pub approval: Approval,
    /// When the call was identical to one that had succeeded earlier in the run: that call's
    /// id. It was not run again; the model got the earlier result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<String>,
}

impl ToolExecution {
    /// Whether the call produced a result.
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Outcome::Ok)
    }

    /// The kind of error, when it failed.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match &self.outcome {
            Outcome::Error { kind, .. } => Some(*kind),
            Outcome::Ok | Outcome::Rejected { .. } => None,
        }
    }

    /// The operator's error message, when it failed.
    pub fn error_message(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Error { message, .. } => Some(message),
            Outcome::Ok | Outcome::Rejected { .. } => None,
        }
    }

    /// The record of `call` answered with the result of `earlier`, without running it.
    pub(crate) fn repeat(call: &ToolCall, earlier: &Earlier, round: usize) -> Self {
        Self {
            repeat_of: Some(earlier.call_id.clone()),
            ..Self::new(call, round, Outcome::Ok, earlier.output.clone())
        }
    }

    /// The record of `call`, rejected for `reason`.
    pub(crate) fn rejected(call: &ToolCall, reason: &str, round: usize) -> Self {
        Self {
            approval: Approval::Rejected,
            ..Self::new(
                call,
                round,
                Outcome::Rejected {
                    reason: reason.to_owned(),
                },
                super::approval::rejection_message(reason),
            )
        }
    }

    fn new(call: &ToolCall, round: usize, outcome: Outcome, output: String) -> Self {
        Self {
            round,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            outcome,
            output,
            images: Vec::new(),
            duration: Duration::ZERO,
            approval: Approval::NotRequired,
            repeat_of: None,
        }
    }

    /// The result as the model gets it: the output, marked as an error unless it succeeded.
    pub(crate) fn result(&self) -> Result<String, String> {
        if self.is_ok() {
            Ok(self.output.clone())
        } else {
            Err(self.output.clone())
        }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// It produced a result.
    Ok,
    /// It did not.
    Error {
        /// The kind of error.
        kind: ErrorKind,
        /// The operator's message (with the grant or setting to change).
        message: String,
    },
    /// It waited for approval and was rejected: it did not run.
    Rejected {
        /// The reason given, sent to the model.
        reason: String,
    },
}

impl Outcome {
    /// Its kind as one word, for logs: `ok`, `rejected`, or the error's kind.
    pub fn kind_str(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error { kind, .. } => kind.as_str(),
            Self::Rejected { .. } => "rejected",
        }
    }
}

/// A tool call the model got wrong in a way that kept it from running at all. It is
/// recorded apart from the calls that ran (the run result's `invalid_calls`); the model is
/// sent what was wrong, except for a call cut off by the token limit, which is never sent
/// back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidCall {
    /// The round (model turn, from 1) that made it.
    pub round: usize,
    /// The call's id.
    pub call_id: String,
    /// The tool's name, as the model gave it.
    pub name: String,
    /// The arguments, exactly as the model wrote them.
    pub arguments: String,
    /// What was wrong.
    pub problem: InvalidProblem,
    /// What the model was told (for a cut-off call: why it was dropped).
    pub message: String,
}

/// What was wrong with an [`InvalidCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidProblem {
    /// The arguments are not a JSON object.
    ArgumentsNotJson,
    /// The tool was not offered (it does not exist, or this request did not offer it).
    NotOffered,
    /// The model hit its token limit in the middle of the call.
    CutOff,
    /// The turn asked for more calls than [`AgentOptions::max_calls_per_turn`](super::AgentOptions::max_calls_per_turn):
    /// this one, past the limit, did not run.
    TooManyCalls,
}

/// One call to run, with how its approval went.
pub(crate) struct Approved<'a> {
    pub call: &'a ToolCall,
    pub approval: Approval,
}

/// Runs `calls` through `toolbox`, at most `limit` at a time (all at once when `None`).
/// Each finished call is written to the audit trail before anything else happens with it.
/// Returns the executions in call order.
pub(crate) async fn execute_calls(
    toolbox: &Toolbox,
    calls: &[Approved<'_>],
    context: &CallContext,
    round: usize,
    limit: Option<NonZeroUsize>,
    audit: &AuditTrail<'_>,
    events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
) -> Result<Vec<ToolExecution>, AgentError> {
    for approved in calls {
        events(AgentEvent::ToolStarted {
            call: approved.call,
        });
    }
    let limit = limit.map_or(calls.len().max(1), NonZeroUsize::get);
    let mut running = stream::iter(calls.iter().enumerate())
        .map(|(index, approved)| async move {
            let mut execution = execute_one(toolbox, approved.call, context, round).await;
            execution.approval = approved.approval;
            (index, execution)
        })
        .buffer_unordered(limit);
    let mut finished: Vec<Option<ToolExecution>> = vec![None; calls.len()];
    while let Some((index, execution)) = running.next().await {
        audit.execution(&execution)?;
        events(AgentEvent::ToolFinished {
            execution: &execution,
        });
        finished[index] = Some(execution);
    }
    Ok(finished.into_iter().flatten().collect())
}

async fn execute_one(
    toolbox: &Toolbox,
    call: &ToolCall,
    context: &CallContext,
    round: usize,
) -> ToolExecution {
    let started = Instant::now();
    let context = CallContext {
        call_id: call.id.clone(),
        values: context.values.clone(),
    };
    let result = toolbox.call(&call.name, &call.arguments, &context).await;
    let (outcome, output, images) = match result {
        // A tool that returns nothing has done its job: say so, rather than send nothing.
        Ok(output) if output.text.is_empty() && output.images.is_empty() => {
            (Outcome::Ok, SUCCESS.to_owned(), Vec::new())
        }
        Ok(output) => (Outcome::Ok, output.text, output.images),
        Err(error) => (
            Outcome::Error {
                kind: error.kind(),
                message: error.to_string(),
            },
            error.model_message(),
            Vec::new(),
        ),
    };
    ToolExecution {
        duration: started.elapsed(),
        images,
        ..ToolExecution::new(call, round, outcome, output)
    }
}

/// The call at `position` (from 0) of a turn, when the turn may run only `limit` calls: the
/// model is told it did not run and why.
pub(crate) fn check_position(
    call: &ToolCall,
    position: usize,
    limit: usize,
    round: usize,
) -> Option<InvalidCall> {
    (position >= limit).then(|| InvalidCall {
        round,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        problem: InvalidProblem::TooManyCalls,
        message: format!(
            "Not run: one turn may make at most {limit} tool calls, and this was call {}. \
             Make the remaining calls in the next turn.",
            position + 1
        ),
    })
}

/// What is wrong with `call` before it could run, given the tools `offered`: `None` when it
/// can run.
pub(crate) fn check_call(
    call: &ToolCall,
    offered: &BTreeSet<String>,
    round: usize,
) -> Option<InvalidCall> {
    let (problem, error) = if !offered.contains(&call.name) {
        (
            InvalidProblem::NotOffered,
            CallError::UnknownTool {
                name: call.name.clone(),
                available: offered.iter().cloned().collect(),
            },
        )
    } else if crate::llm::arguments_object(&call.arguments).is_none() {
        (
            InvalidProblem::ArgumentsNotJson,
            CallError::InvalidArguments {
                tool: call.name.clone(),
                message: format!(
                    "the arguments must be a JSON object, and `{}` is not one",
                    call.arguments
                ),
            },
        )
    } else {
        return None;
    };
    Some(InvalidCall {
        round,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        problem,
        message: error.model_message(),
    })
}

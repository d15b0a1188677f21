//! Running the tool calls of one model turn: concurrently, results in call order, every
//! failure turned into an error result the model can read.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};

use crate::llm::{ToolCall, arguments_object};
use crate::{CallContext, CallError, ErrorKind, Toolbox};

use super::guard::Earlier;
use super::{AgentError, AgentEvent, UnknownTool};

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
    /// How long it took.
    #[serde(
        rename = "duration_ms",
        serialize_with = "crate::report::serialize_millis",
        deserialize_with = "crate::report::deserialize_millis"
    )]
    pub duration: Duration,
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
            Outcome::Ok => None,
            Outcome::Error { kind, .. } => Some(*kind),
        }
    }

    /// The operator's error message, when it failed.
    pub fn error_message(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Ok => None,
            Outcome::Error { message, .. } => Some(message),
        }
    }

    /// The record of `call` answered with the result of `earlier`, without running it.
    pub(crate) fn repeat(call: &ToolCall, earlier: &Earlier, round: usize) -> Self {
        Self {
            round,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            outcome: Outcome::Ok,
            output: earlier.output.clone(),
            duration: Duration::ZERO,
            repeat_of: Some(earlier.call_id.clone()),
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
}

/// Runs `calls` concurrently through `toolbox`; `offered` are the tools the model was given
/// this turn. Returns the executions in call order.
pub(crate) async fn execute_calls(
    toolbox: &Toolbox,
    calls: &[ToolCall],
    offered: &BTreeSet<String>,
    unknown_tool: UnknownTool,
    context: &CallContext,
    round: usize,
    events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
) -> Result<Vec<ToolExecution>, AgentError> {
    if unknown_tool == UnknownTool::Fail
        && let Some(call) = calls.iter().find(|call| !offered.contains(&call.name))
    {
        return Err(AgentError::UnknownTool {
            name: call.name.clone(),
            available: offered.iter().cloned().collect(),
        });
    }
    for call in calls {
        events(AgentEvent::ToolStarted { call });
    }
    let mut running: FuturesUnordered<_> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| async move {
            (
                index,
                execute_one(toolbox, call, offered, context, round).await,
            )
        })
        .collect();
    let mut finished: Vec<Option<ToolExecution>> = vec![None; calls.len()];
    while let Some((index, execution)) = running.next().await {
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
    offered: &BTreeSet<String>,
    context: &CallContext,
    round: usize,
) -> ToolExecution {
    let started = Instant::now();
    let result = if !offered.contains(&call.name) {
        Err(CallError::UnknownTool {
            name: call.name.clone(),
            available: offered.iter().cloned().collect(),
        })
    } else if arguments_object(&call.arguments).is_none() {
        Err(CallError::InvalidArguments {
            tool: call.name.clone(),
            message: format!(
                "the arguments must be a JSON object, and `{}` is not one",
                call.arguments
            ),
        })
    } else {
        let context = CallContext {
            call_id: call.id.clone(),
            values: context.values.clone(),
        };
        toolbox.call(&call.name, &call.arguments, &context).await
    };
    let (outcome, output) = match result {
        Ok(output) => (Outcome::Ok, output.text),
        Err(error) => (
            Outcome::Error {
                kind: error.kind(),
                message: error.to_string(),
            },
            error.model_message(),
        ),
    };
    ToolExecution {
        round,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        outcome,
        output,
        duration: started.elapsed(),
        repeat_of: None,
    }
}

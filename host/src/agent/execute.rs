//! Running the tool calls of one model turn: concurrently, results in call order, every
//! failure turned into an error result the model can read.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;

use crate::llm::{ToolCall, arguments_object};
use crate::{CallContext, Toolbox};

use super::{AgentError, AgentEvent, UnknownTool};

/// The record of one tool call of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolExecution {
    /// The round (model turn, from 1) that asked for it.
    pub round: usize,
    /// The call's id.
    pub call_id: String,
    /// The tool's name, as the model gave it.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: String,
    /// Whether it produced a result.
    pub ok: bool,
    /// The result, or the error message sent to the model.
    pub output: String,
    /// The kind of error (`invalid_arguments`, `unknown_tool`, `timeout`, ...), when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// How long it took.
    #[serde(serialize_with = "serialize_millis")]
    pub duration: Duration,
}

fn serialize_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
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
    let record = |result: Result<String, (&str, String)>| {
        let (ok, output, error_kind) = match result {
            Ok(output) => (true, output, None),
            Err((kind, message)) => (
                false,
                format!("error ({kind}): {message}"),
                Some(kind.to_owned()),
            ),
        };
        ToolExecution {
            round,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            ok,
            output,
            error_kind,
            duration: started.elapsed(),
        }
    };
    if !offered.contains(&call.name) {
        let available: Vec<&str> = offered.iter().map(String::as_str).collect();
        return record(Err((
            "unknown_tool",
            format!(
                "there is no tool `{}`; call one of: {}",
                call.name,
                available.join(", ")
            ),
        )));
    }
    if arguments_object(&call.arguments).is_none() {
        return record(Err((
            "invalid_arguments",
            format!(
                "the arguments must be a JSON object, and `{}` is not one; call `{}` again with \
                 valid JSON",
                call.arguments, call.name
            ),
        )));
    }
    let context = CallContext {
        call_id: call.id.clone(),
        values: context.values.clone(),
    };
    match toolbox.call(&call.name, &call.arguments, &context).await {
        Ok(output) => record(Ok(output.text)),
        Err(error) => record(Err((error.kind(), error.to_string()))),
    }
}

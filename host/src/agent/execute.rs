//! Running the tool calls of one model turn: concurrently (up to a cap), results in call
//! order, every failure turned into an error result the model can read, every call recorded
//! in the audit log before its result goes back to the model.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Instant;

use futures::stream::{self, StreamExt};

use crate::arguments::Arguments;
use crate::content::ContentPart;
use crate::error::{CallError, ErrorKind};
use crate::llm::ToolCall;
use crate::source::CallContext;
use crate::toolbox::Toolbox;

use super::approval::{Approval, PendingCall};
use super::asking::{Answers, AskingCall, MAX_ASKS};
use super::audit::AuditTrail;
use super::code::ProgramTurn;
use super::record::{InvalidCall, InvalidProblem, Outcome, SUCCESS, ToolExecution};
use super::replay::{Journal, PausedProgram};
use super::{AgentError, AgentEvent};

/// One call to run, with how its approval went.
pub(crate) struct Approved<'a> {
    pub call: &'a ToolCall,
    pub arguments: &'a Arguments,
    pub approval: Approval,
    /// When it asked for input before: the answers and its state.
    pub answers: Option<Answers>,
    /// When it is a program that paused before: the calls it made then, and the decisions
    /// about those that waited. Empty otherwise (and always, without code mode).
    #[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
    pub journal: Journal,
}

/// How a call that ran ended: finished (with a result or an error), asking for input, or
/// (a program) paused on calls that wait for a decision.
pub(crate) enum Ran {
    Finished(ToolExecution),
    Asking(AskingCall),
    #[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
    Paused {
        program: PausedProgram,
        pending: Vec<PendingCall>,
    },
}

impl Ran {
    /// The execution of a call that cannot wait for input (the caller-controlled mode's): one
    /// that asks ends with an error saying so.
    pub(crate) fn or_fail(self, call: &ToolCall, round: usize) -> ToolExecution {
        match self {
            Self::Finished(execution) => execution,
            Self::Asking(asking) => asking.ended(
                call,
                round,
                "Agent::run_calls cannot pause for it; run the loop with Agent::run",
            ),
            // Programs run by `run_calls` are denied what needs approval instead.
            Self::Paused { pending, .. } => {
                let tools: Vec<&str> = pending.iter().map(|p| p.tool.as_str()).collect();
                let message = format!(
                    "the program's calls of {} wait for a person's approval, which \
                     Agent::run_calls cannot pause for; run the loop with Agent::run",
                    tools.join(", ")
                );
                ToolExecution::new(
                    call,
                    round,
                    Outcome::Error {
                        kind: ErrorKind::ToolFailed,
                        message,
                    },
                    "The program was stopped: a call it made needs a person's approval.".into(),
                )
            }
        }
    }
}

/// Runs `calls` through `toolbox`, at most `limit` at a time (all at once when `None`).
/// Each finished call is written to the audit trail before anything else happens with it
/// (a call that asks for input is, when it finishes). Returns how each ended, in call order.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn execute_calls(
    toolbox: &Arc<Toolbox>,
    program: Option<&ProgramTurn>,
    calls: &[Approved<'_>],
    context: &CallContext,
    round: usize,
    limit: Option<NonZeroUsize>,
    audit: &AuditTrail<'_>,
    events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
) -> Result<Vec<Ran>, AgentError> {
    for approved in calls {
        events(AgentEvent::ToolStarted {
            call: approved.call,
        });
    }
    let limit = limit.map_or(calls.len().max(1), NonZeroUsize::get);
    let mut running = stream::iter(calls.iter().enumerate())
        .map(|(index, approved)| async move {
            let ran = match program.filter(|program| program.is_program(approved.call)) {
                Some(program) => program.run(toolbox.clone(), approved, context, round).await,
                None => Ok(execute_one(toolbox, approved, context, round).await),
            };
            (index, ran)
        })
        .buffer_unordered(limit);
    let mut ended: Vec<Option<Ran>> = calls.iter().map(|_| None).collect();
    while let Some((index, ran)) = running.next().await {
        let ran = ran?;
        if let Ran::Finished(execution) = &ran {
            audit.execution(execution, calls[index].arguments)?;
            events(AgentEvent::ToolFinished { execution });
        }
        ended[index] = Some(ran);
    }
    Ok(ended.into_iter().flatten().collect())
}

async fn execute_one(
    toolbox: &Toolbox,
    approved: &Approved<'_>,
    context: &CallContext,
    round: usize,
) -> Ran {
    let call = approved.call;
    let started = Instant::now();
    let answers = approved.answers.clone().unwrap_or_default();
    let context = CallContext {
        call_id: call.id.clone(),
        values: context.values.clone(),
        observer: context.observer.clone(),
        asker: context.asker.clone(),
        input_responses: answers.responses,
        request_state: answers.state,
        task: answers.task,
        caller: context.caller.clone(),
    };
    let result = toolbox
        .call_parsed(&call.name, approved.arguments, &context)
        .await;
    let reports = result
        .as_ref()
        .map(|output| output.reports)
        .unwrap_or_default();
    let result = match result {
        Ok(output) => match output.input_required {
            Some(asked) => {
                let asking = AskingCall::new(call, asked, answers.asks);
                if !asking.asked_too_often() {
                    return Ran::Asking(asking);
                }
                let why = format!("it asked {MAX_ASKS} times without finishing");
                let mut execution = asking.ended(call, round, &why);
                execution.approval = approved.approval;
                return Ran::Finished(execution);
            }
            None => Ok(output),
        },
        Err(error) => Err(error),
    };
    let (outcome, output, content) = match result {
        // A tool that returns nothing has done its job: say so, rather than send nothing.
        Ok(output) if output.is_empty() => (Outcome::Ok, SUCCESS.to_owned(), Vec::new()),
        Ok(output) => {
            // Text parts alone are all in `output`; other parts are kept as they came.
            let text_only = output
                .content
                .iter()
                .all(|part| matches!(part, ContentPart::Text { .. }));
            let content = if text_only {
                Vec::new()
            } else {
                output.content
            };
            (Outcome::Ok, output.text, content)
        }
        Err(error) => (
            Outcome::Error {
                kind: error.kind(),
                message: error.to_string(),
            },
            error.model_message(),
            Vec::new(),
        ),
    };
    Ran::Finished(ToolExecution {
        duration: started.elapsed(),
        content,
        reports,
        approval: approved.approval,
        ..ToolExecution::new(call, round, outcome, output)
    })
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

/// The arguments of `call`, parsed, when it can run given the tools `offered`; else what is
/// wrong with it.
pub(crate) fn check_call(
    call: &ToolCall,
    offered: &BTreeSet<String>,
    round: usize,
) -> Result<Arguments, InvalidCall> {
    let (problem, error) = if !offered.contains(&call.name) {
        (
            InvalidProblem::NotOffered,
            CallError::UnknownTool {
                name: call.name.clone(),
                available: offered.iter().cloned().collect(),
            },
        )
    } else {
        match Arguments::parse(&call.arguments) {
            Ok(arguments) => return Ok(arguments),
            Err(_) => (
                InvalidProblem::ArgumentsNotJson,
                CallError::InvalidArguments {
                    tool: call.name.clone(),
                    message: format!(
                        "the arguments must be a JSON object, and `{}` is not one",
                        call.arguments
                    ),
                },
            ),
        }
    };
    Err(InvalidCall {
        round,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        problem,
        message: error.model_message(),
    })
}

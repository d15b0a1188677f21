//! The calls of one turn: what becomes of each (invalid, answered without running, or run),
//! which run in this pass (all, or only those that asked for input), and sending every
//! result back to the model in call order.

use std::collections::HashMap;

use crate::arguments::Arguments;
use crate::llm::ToolCall;

use super::approval::{Approval, Decision, approval_metric};
use super::audit::AuditTrail;
use super::execute::{Approved, check_call, check_position};
use super::guard::RepeatedFailure;
use super::record::{InvalidCall, InvalidProblem, ToolExecution};
use super::replay::Journal;
use super::state::{RunState, Turn};
use super::{AgentError, AgentEvent, Conversation};

/// What to do with one call of a turn.
pub(super) enum Plan {
    /// It cannot run.
    Invalid(InvalidCall),
    /// It is answered without running: from an earlier identical call, or with a rejection.
    Answered(Box<ToolExecution>, Arguments),
    /// It runs, with these arguments.
    Run(Approval, Arguments),
}

/// The calls of `turn` that run in this pass (per `plans`), with the answers of those that
/// asked for input and the journals of the programs that paused; and the executions of the calls that asked and got no answer.
pub(super) fn calls_to_run<'a>(
    turn: &'a Turn,
    plans: &'a [Plan],
) -> (Vec<Approved<'a>>, Vec<(ToolExecution, &'a Arguments)>) {
    let mut to_run = Vec::new();
    let mut unanswered = Vec::new();
    for (call, plan) in turn.calls.iter().zip(plans) {
        let Plan::Run(approval, arguments) = plan else {
            continue;
        };
        if !turn.runs_now(&call.id) {
            continue;
        }
        let asking = turn.asking.iter().find(|a| a.call_id == call.id);
        let answers = match asking.map(|asking| asking.next_round(call, turn.round)) {
            None => None,
            Some(Ok(answers)) => Some(answers),
            Some(Err(mut execution)) => {
                execution.approval = *approval;
                unanswered.push((*execution, arguments));
                continue;
            }
        };
        to_run.push(Approved {
            call,
            arguments,
            approval: *approval,
            answers,
            journal: Journal::new(turn.paused_program(&call.id), turn.decided_in(&call.id)),
        });
    }
    (to_run, unanswered)
}

/// Writes what `plans` settle without running (invalid calls, repeats, rejections) to the
/// audit log, before anything runs.
pub(super) fn audit_settled(
    plans: &[Plan],
    audit: &AuditTrail<'_>,
    events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
) -> Result<(), AgentError> {
    for plan in plans {
        match plan {
            Plan::Invalid(invalid) => {
                audit.invalid(invalid)?;
                events(AgentEvent::InvalidCall { call: invalid });
            }
            Plan::Answered(execution, arguments) => {
                audit.execution(execution, arguments)?;
                events(AgentEvent::ToolFinished { execution });
            }
            Plan::Run(..) => {}
        }
    }
    Ok(())
}

/// `executions` in the order of the calls they answer.
pub(super) fn in_call_order(
    mut executions: Vec<ToolExecution>,
    calls: &[ToolCall],
) -> Vec<ToolExecution> {
    let position: HashMap<&str, usize> = calls
        .iter()
        .enumerate()
        .map(|(at, call)| (call.id.as_str(), at))
        .collect();
    executions.sort_by_key(|e| position.get(e.call_id.as_str()).copied());
    executions
}

/// What becomes of each call of `turn`, of which at most `limit` may run: invalid (past the
/// limit, or not runnable), answered without running (a repeat of an earlier call, or
/// rejected), or run (with how it was approved).
pub(super) fn plan_calls(turn: &Turn, state: &RunState, limit: usize) -> Vec<Plan> {
    let round = turn.round;
    turn.calls
        .iter()
        .enumerate()
        .map(|(position, call)| {
            if let Some(invalid) = check_position(call, position, limit, round) {
                return Plan::Invalid(invalid);
            }
            let arguments = match check_call(call, &turn.offered, round) {
                Ok(arguments) => arguments,
                Err(invalid) => return Plan::Invalid(invalid),
            };
            if let Some(earlier) = state.guard().earlier(&call.name, &arguments) {
                let answer = ToolExecution::repeat(call, &earlier.call_id, &earlier.output, round);
                return Plan::Answered(Box::new(answer), arguments);
            }
            match turn.decision(&call.id) {
                None => Plan::Run(Approval::NotRequired, arguments),
                Some(Some(Decision::Approve)) => {
                    approval_metric("approved");
                    Plan::Run(Approval::Approved, arguments)
                }
                Some(Some(Decision::ApproveForRun)) => {
                    approval_metric("approved");
                    Plan::Run(Approval::ApprovedForRun, arguments)
                }
                Some(Some(Decision::Reject { reason })) => {
                    approval_metric("denied");
                    Plan::Answered(
                        Box::new(ToolExecution::rejected(call, reason, round)),
                        arguments,
                    )
                }
                // `take_ready_turn` hands out decided turns only.
                Some(None) => Plan::Answered(
                    Box::new(ToolExecution::rejected(call, "", round)),
                    arguments,
                ),
            }
        })
        .collect()
}

/// Sends every result of `turn` back to the model, in call order (`ran` holds the results
/// of the calls that ran, in that order), and tells the guard; returns the executions and a
/// failure repeated too often, if any.
pub(super) fn submit_results(
    conversation: &mut Conversation,
    state: &mut RunState,
    turn: &Turn,
    plans: Vec<Plan>,
    ran: Vec<ToolExecution>,
) -> Result<(Vec<ToolExecution>, Option<RepeatedFailure>), AgentError> {
    let mut ran = ran.into_iter();
    let mut done = Vec::new();
    let mut arguments_of_done = Vec::new();
    let mut repeated_failure = None;
    // Submitted together: the conversation looks up its pending calls once for the turn.
    let mut results = Vec::with_capacity(turn.calls.len());
    for (call, plan) in turn.calls.iter().zip(plans) {
        let (execution, arguments) = match plan {
            Plan::Invalid(invalid) => {
                results.push((call.id.clone(), Err(invalid.message.clone()), Vec::new()));
                // A call past the turn's limit did not fail: it was not tried.
                if invalid.problem != InvalidProblem::TooManyCalls {
                    let failed = state.guard_mut().invalid(
                        &invalid.name,
                        &invalid.arguments,
                        &invalid.message,
                    );
                    repeated_failure = repeated_failure.or(failed);
                }
                state.push_invalid(invalid);
                continue;
            }
            Plan::Answered(execution, arguments) => (*execution, arguments),
            Plan::Run(_, arguments) => match ran.next() {
                Some(execution) => (execution, arguments),
                None => continue,
            },
        };
        results.push((call.id.clone(), execution.result(), execution.images()));
        done.push(execution);
        arguments_of_done.push(arguments);
    }
    conversation.submit_all(results)?;
    if done.iter().any(|e| e.repeat_of.is_some()) {
        state.guard_mut().repeated();
    }
    let failed = state
        .guard_mut()
        .record(done.iter().zip(&arguments_of_done));
    Ok((done, repeated_failure.or(failed)))
}

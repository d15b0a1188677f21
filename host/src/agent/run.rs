//! One run of the loop: model requests, the turns of tool calls they bring, the guards,
//! approval pauses, `stop_at` and `on_error` ends.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use tracing::Instrument;

use crate::llm::{FinishReason, ToolCall, ToolChoice};
use crate::source::CallContext;

use super::approval::{Approval, Decision, PendingCall, approval_metric};
use super::audit::AuditTrail;
use super::execute::{self, Approved, Ran, check_call};
use super::guard::RepeatedFailure;
use super::plan::{audit_settled, calls_to_run, in_call_order, plan_calls, submit_results};
use super::record::ToolExecution;
use super::replay::Journal;
use super::state::{RunState, Turn};
use super::{
    Agent, AgentError, AgentEvent, Conversation, RunEnd, RunOptions, RunResult, Step, UnknownTool,
};

/// How a turn left the run.
enum TurnEnd {
    /// It goes on with another request.
    Continue,
    /// A `stop_at` tool answered: this is the answer.
    Stop(String),
    /// A tool whose failures end the run failed.
    ToolFailed { tool: String, error: String },
    /// The same call failed once too often.
    RepeatedFailure(RepeatedFailure),
}

impl Agent {
    /// Runs the loop on `conversation` (which should end with the user's message) until the
    /// model answers, a `stop_at` tool answers, calls wait for approval (the run pauses: see
    /// [`Agent::resume`]), or the round limit is reached. The conversation keeps every
    /// message, so a chat can go on with another user message.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<RunResult, AgentError> {
        if let Some(run) = conversation.paused_run() {
            return Err(AgentError::RunPaused {
                run_id: run.run_id().to_owned(),
            });
        }
        self.drive(conversation, RunState::new(), options, events)
            .await
    }

    /// Goes on with the run paused in `conversation`, once its pending calls are decided
    /// ([`Conversation::approve`], [`Conversation::reject`], ...): approved calls run,
    /// rejected ones go to the model as rejections with their reasons. Calls still undecided
    /// leave the run paused. `options` should be the ones the run started with.
    pub async fn resume(
        &self,
        conversation: &mut Conversation,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<RunResult, AgentError> {
        let state = conversation.take_run().ok_or(AgentError::NothingToResume)?;
        self.drive(conversation, state, options, events).await
    }

    /// Runs `calls` (pending calls of `conversation`, as [`Agent::step`] returned them) in
    /// the sandbox, concurrently, and submits their results: the caller-controlled mode's
    /// way to let toolhost run some or all of the calls it was handed. The caller decided to
    /// run them, so approval rules do not apply; the audit log does. Calls that cannot run
    /// (a tool not offered, arguments that are not a JSON object) are answered with what was
    /// wrong and reported as [`AgentEvent::InvalidCall`].
    pub async fn run_calls(
        &self,
        conversation: &mut Conversation,
        calls: &[ToolCall],
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<Vec<ToolExecution>, AgentError> {
        let offered: BTreeSet<String> = self
            .offered(conversation.messages(), options)
            .into_iter()
            .map(|t| t.name)
            .collect();
        let state = RunState::new();
        let audit = self.audit_trail(&state);
        let round = conversation.turns();
        let mut to_run = Vec::new();
        let checked: Vec<_> = calls
            .iter()
            .map(|call| (call, check_call(call, &offered, round)))
            .collect();
        let mut refused = Vec::new();
        for (call, checked) in &checked {
            match checked {
                Err(invalid) => {
                    audit.invalid(invalid)?;
                    events(AgentEvent::InvalidCall { call: invalid });
                    refused.push((call.id.clone(), Err(invalid.message.clone()), Vec::new()));
                }
                Ok(arguments) => to_run.push(Approved {
                    call,
                    arguments,
                    approval: Approval::NotRequired,
                    answers: None,
                    journal: Journal::default(),
                }),
            }
        }
        conversation.submit_all(refused)?;
        // The caller decided to run these calls, and is not there to decide a program's.
        let program = self.program_turn(&state, options, false);
        let done = execute::execute_calls(
            &self.toolbox,
            program.as_ref(),
            &to_run,
            &context(options),
            round,
            self.options.max_parallel_calls,
            &audit,
            events,
        )
        .await?;
        let done: Vec<ToolExecution> = done
            .into_iter()
            .zip(&to_run)
            .map(|(ran, approved)| ran.or_fail(approved.call, round))
            .collect();
        conversation.submit_all(
            done.iter()
                .map(|e| (e.call_id.clone(), e.result(), e.images())),
        )?;
        Ok(done)
    }

    async fn drive(
        &self,
        conversation: &mut Conversation,
        mut state: RunState,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<RunResult, AgentError> {
        let span = tracing::info_span!(
            "agent_run",
            otel.name = "invoke_agent",
            gen_ai.operation.name = "invoke_agent",
            model = %self.provider.describe(),
            run_id = state.run_id()
        );
        async move {
            loop {
                if let Some(turn) = state.take_ready_turn() {
                    let end = self
                        .finish_turn(conversation, &mut state, turn, options, events)
                        .await?;
                    state = match settle(end, state) {
                        ControlFlow::Continue(state) => state,
                        ControlFlow::Break(outcome) => return outcome,
                    };
                    // Calls that asked for input keep the turn waiting.
                    if state.is_waiting() {
                        continue;
                    }
                } else if state.is_waiting() {
                    let result = state.paused_result();
                    conversation.park_run(state);
                    return Ok(result);
                }
                if state.rounds() >= self.options.max_rounds {
                    return Err(AgentError::RoundLimit {
                        limit: self.options.max_rounds,
                        record: state.into_record(),
                    });
                }
                let (step, offered, round) = self
                    .next_step(conversation, &mut state, options, events)
                    .await?;
                match step {
                    None => {
                        return Err(AgentError::Truncated {
                            max_tokens: self.options.max_tokens,
                            record: state.into_record(),
                        });
                    }
                    Some(Step::Answer { text, finish }) => {
                        let end = if finish == FinishReason::Length {
                            RunEnd::Truncated
                        } else {
                            RunEnd::Answered
                        };
                        return Ok(state.into_result(text, end));
                    }
                    Some(Step::ToolCalls(calls)) => {
                        let turn = self.new_turn(&state, calls, offered, round, options);
                        state.set_turn(turn);
                    }
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Asks the model for the next round, offering the tools that fit the conversation (none
    /// after a repeated call: the model has what it needs, so it answers); records the calls
    /// its answer cut off. Returns what it asked for, the tools offered, and the round.
    async fn next_step(
        &self,
        conversation: &mut Conversation,
        state: &mut RunState,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<(Option<Step>, BTreeSet<String>, usize), AgentError> {
        let first = state.rounds() == 0;
        let tools = if state.guard_mut().take_answer_next() {
            Vec::new()
        } else {
            // A source whose tools changed during the last turn (an MCP server said so)
            // lists them again now, so the model is offered what exists.
            self.toolbox.refresh().await;
            self.offered(conversation.messages(), options)
        };
        let offered: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
        let tool_choice = if first {
            options.tool_choice.clone()
        } else {
            after_first_round(&options.tool_choice)
        };
        let round = state.rounds() + 1;
        let reply = self
            .request(
                conversation,
                tools,
                tool_choice,
                round,
                Some(self.options.max_calls_per_turn),
                events,
            )
            .await?;
        state.count_request(reply.usage);
        let audit = self.audit_trail(state);
        let mut cut_off = Vec::new();
        for call in &reply.cut_off {
            let invalid = self.cut_off(call, round);
            audit.invalid(&invalid)?;
            events(AgentEvent::InvalidCall { call: &invalid });
            cut_off.push(invalid);
        }
        for invalid in cut_off {
            state.push_invalid(invalid);
        }
        Ok((reply.step, offered, round))
    }

    /// The turn of `calls`, with the calls that need approval marked (those of tools approved
    /// for the run are decided already).
    fn new_turn(
        &self,
        state: &RunState,
        calls: Vec<ToolCall>,
        offered: BTreeSet<String>,
        round: usize,
        options: &RunOptions,
    ) -> Turn {
        let mut approvals = Vec::new();
        let may_wait = !self.options.approval.is_empty() || options.needs_approval.is_some();
        let limit = self.options.max_calls_per_turn;
        for call in calls.iter().take(limit).filter(|_| may_wait) {
            let runs = check_call(call, &offered, round)
                .is_ok_and(|arguments| state.guard().earlier(&call.name, &arguments).is_none());
            if !runs {
                continue;
            }
            let origin = self.toolbox.origin(&call.name);
            let grants = self
                .toolbox
                .source_of(&call.name)
                .and_then(|source| source.grants().cloned());
            let mut pending = PendingCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                origin,
                grants,
                decision: None,
                parent: None,
            };
            let needed = self.options.approval.requires(
                &call.name,
                pending.origin.as_ref(),
                pending.grants.as_ref(),
            ) || options
                .needs_approval
                .as_ref()
                .is_some_and(|predicate| predicate(&pending));
            if needed {
                if state.approved_for_run(&call.name) {
                    pending.decision = Some(Decision::ApproveForRun);
                } else {
                    approval_metric("asked");
                }
                approvals.push(pending);
            }
        }
        Turn {
            round,
            calls,
            offered,
            approvals,
            finished: Vec::new(),
            asking: Vec::new(),
            programs: Vec::new(),
        }
    }

    /// Runs the calls of a decided turn and sends every result back; says whether the turn
    /// ends the run. When calls ask for input, or a program's call waits for a decision, the
    /// turn waits in `state` for the answers and decisions (the calls that finished wait with
    /// it) and runs only those calls (the programs) again next time.
    async fn finish_turn(
        &self,
        conversation: &mut Conversation,
        state: &mut RunState,
        mut turn: Turn,
        options: &RunOptions,
        events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    ) -> Result<TurnEnd, AgentError> {
        let round = turn.round;
        if self.options.unknown_tool == UnknownTool::Fail
            && let Some(call) = turn.calls.iter().find(|c| !turn.offered.contains(&c.name))
        {
            return Err(AgentError::UnknownTool {
                name: call.name.clone(),
                available: turn.offered.iter().cloned().collect(),
            });
        }
        let audit = self.audit_trail(state);
        let plans = plan_calls(&turn, state, self.options.max_calls_per_turn);
        // A turn comes back here after a pass only when calls of it asked for input or
        // programs of it paused; what was settled without running went to the audit log in
        // its first pass.
        if !turn.ran_before() {
            audit_settled(&plans, &audit, events)?;
        }
        let (to_run, unanswered) = calls_to_run(&turn, &plans);
        // A call whose question nobody answered ends here, with an error that says so.
        for (execution, arguments) in &unanswered {
            audit.execution(execution, arguments)?;
            events(AgentEvent::ToolFinished { execution });
        }
        let program = self.program_turn(state, options, true);
        let ran = execute::execute_calls(
            &self.toolbox,
            program.as_ref(),
            &to_run,
            &context(options),
            round,
            self.options.max_parallel_calls,
            &audit,
            events,
        )
        .await?;
        let unanswered: Vec<ToolExecution> = unanswered.into_iter().map(|(e, _)| e).collect();
        drop(to_run);
        turn.finished.extend(unanswered);
        turn.asking.clear();
        turn.programs.clear();
        for ran in ran {
            match ran {
                Ran::Finished(execution) => turn.finished.push(execution),
                Ran::Asking(asking) => turn.asking.push(asking),
                Ran::Paused { program, pending } => turn.pause_program(program, pending),
            }
        }
        if turn.ran_before() {
            state.set_turn(turn);
            return Ok(TurnEnd::Continue);
        }
        let ran = in_call_order(std::mem::take(&mut turn.finished), &turn.calls);
        let (done, repeated_failure) = submit_results(conversation, state, &turn, plans, ran)?;
        let end = self.turn_end(&done, repeated_failure);
        state.push_executions(done);
        Ok(end)
    }

    /// How the run goes on after a turn whose calls ended as `done`: a failure that fails
    /// the run, a failure repeated too often, a tool that stops the run, or on.
    fn turn_end(
        &self,
        done: &[ToolExecution],
        repeated_failure: Option<RepeatedFailure>,
    ) -> TurnEnd {
        let fail_run = done
            .iter()
            .filter(|e| self.options.fail_run.contains(&e.name))
            .find_map(|e| Some((e.name.clone(), e.error_message()?.to_owned())));
        let stop: Vec<&str> = done
            .iter()
            .filter(|e| e.is_ok() && self.options.stop_at.contains(&e.name))
            .map(|e| e.output.as_str())
            .collect();
        if let Some((tool, error)) = fail_run {
            TurnEnd::ToolFailed { tool, error }
        } else if let Some(failed) = repeated_failure {
            TurnEnd::RepeatedFailure(failed)
        } else if !stop.is_empty() {
            TurnEnd::Stop(stop.join("\n"))
        } else {
            TurnEnd::Continue
        }
    }

    fn audit_trail<'a>(&'a self, state: &'a RunState) -> AuditTrail<'a> {
        AuditTrail {
            sink: self.audit.as_ref(),
            run_id: state.run_id(),
            toolbox: &self.toolbox,
        }
    }
}

/// The context every call of a run gets.
fn context(options: &RunOptions) -> CallContext {
    CallContext {
        call_id: String::new(),
        values: options.context.clone(),
        observer: options.observer.clone(),
        asker: options.asker.clone(),
        ..CallContext::default()
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

/// How a finished turn leaves the run: on (with its state), or ended with a result or an
/// error.
fn settle(end: TurnEnd, state: RunState) -> ControlFlow<Result<RunResult, AgentError>, RunState> {
    match end {
        TurnEnd::Continue => ControlFlow::Continue(state),
        TurnEnd::Stop(text) => {
            ControlFlow::Break(Ok(state.into_result(text, RunEnd::ReturnDirect)))
        }
        TurnEnd::ToolFailed { tool, error } => ControlFlow::Break(Err(AgentError::ToolFailed {
            tool,
            error,
            record: state.into_record(),
        })),
        TurnEnd::RepeatedFailure(failed) => ControlFlow::Break(Err(AgentError::RepeatedFailure {
            tool: failed.tool,
            arguments: failed.arguments,
            error: failed.error,
            count: failed.count,
            record: state.into_record(),
        })),
    }
}

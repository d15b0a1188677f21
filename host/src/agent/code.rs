//! Code mode in the loop ([`RunOptions::code_mode`](super::RunOptions::code_mode)): the model
//! is offered one tool, whose program calls the run's tools. Each call a program makes goes
//! the way a model's call would: a tool the run offers, its arguments checked, the approval
//! rules, the audit log (with the program's call as its parent), and the run's record (under
//! the program's [`ToolExecution::nested`](super::ToolExecution::nested)).
//!
//! A call that needs a person's approval, of a tool not approved for the run, pauses the run
//! with the call pending (its `parent` the program's call); the program is ended there and,
//! once the call is decided, runs again from the start, its earlier calls answered from a
//! journal ([`replay`](super::replay) says why and how). Approved, the call runs; rejected,
//! the program gets a `denied` error with the person's reason, which it can catch.

#[cfg(feature = "code-mode")]
pub(crate) use on::ProgramTurn;

#[cfg(not(feature = "code-mode"))]
pub(crate) use off::ProgramTurn;

/// Without the `code-mode` feature there is no program to run: a turn's programs are none.
#[cfg(not(feature = "code-mode"))]
mod off {
    use std::sync::Arc;

    use crate::llm::ToolCall;
    use crate::source::CallContext;
    use crate::toolbox::Toolbox;

    use super::super::AgentError;
    use super::super::execute::{Approved, Ran};

    /// Never made.
    pub(crate) enum ProgramTurn {}

    impl ProgramTurn {
        pub(crate) fn is_program(&self, _: &ToolCall) -> bool {
            match *self {}
        }

        pub(crate) async fn run(
            &self,
            _: Arc<Toolbox>,
            _: &Approved<'_>,
            _: &CallContext,
            _: usize,
        ) -> Result<Ran, AgentError> {
            match *self {}
        }
    }
}

#[cfg(feature = "code-mode")]
mod on {
    use std::collections::BTreeSet;
    use std::future::ready;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use futures::future::BoxFuture;

    use crate::arguments::Arguments;
    use crate::code::{CodeMode, nested_id, not_offered, outcome};
    use crate::error::{CallError, ErrorKind};
    use crate::llm::ToolCall;
    use crate::sandbox::{NestedCalls, NestedError, NestedErrorKind, NestedOutcome, NestedResult};
    use crate::source::{CallContext, ToolOutput};
    use crate::toolbox::Toolbox;

    use super::super::approval::{
        Approval, ApprovalPredicate, ApprovalRules, Decision, PendingCall, approval_metric,
        rejection_message,
    };
    use super::super::audit::{AuditSink, AuditTrail};
    use super::super::execute::{Approved, Ran};
    use super::super::record::{Outcome, ToolExecution};
    use super::super::replay::{Answer, Journal, Journaled, PausedProgram};
    use super::super::{AgentError, RunOptions, ToolSelection};

    /// What a turn's programs need besides the toolbox: code mode, which tools they may call,
    /// and how their calls are approved and recorded.
    #[derive(Clone)]
    pub(crate) struct ProgramTurn {
        pub mode: Arc<CodeMode>,
        callable: Arc<BTreeSet<String>>,
        rules: ApprovalRules,
        needs_approval: Option<ApprovalPredicate>,
        approved_for_run: Arc<BTreeSet<String>>,
        audit: Option<Arc<dyn AuditSink>>,
        run_id: String,
        /// Whether a call that needs a decision pauses the run (else it is denied).
        may_pause: bool,
    }

    impl ProgramTurn {
        /// The programs' setting of a run with `options` (none without code mode): they may call
        /// every tool the run's selection allows (the description lists the best of them).
        pub(crate) fn new(
            toolbox: &Toolbox,
            options: &RunOptions,
            rules: &ApprovalRules,
            approved_for_run: BTreeSet<String>,
            audit: Option<Arc<dyn AuditSink>>,
            run_id: &str,
        ) -> Option<Self> {
            let mode = options.code_mode.clone()?;
            let callable = toolbox
                .catalog()
                .iter()
                .filter(|spec| match &options.tools {
                    ToolSelection::All => true,
                    ToolSelection::Only(names) => names.contains(&spec.name),
                    // A filter chooses for a request from its conversation, which a
                    // program's calls have none of: the description listed what it chose,
                    // and the program may call any loaded tool (approval still applies).
                    ToolSelection::Filter(_) => true,
                })
                .map(|spec| spec.name.clone())
                .collect();
            Some(Self {
                mode,
                callable: Arc::new(callable),
                rules: rules.clone(),
                needs_approval: options.needs_approval.clone(),
                approved_for_run: Arc::new(approved_for_run),
                audit,
                run_id: run_id.to_owned(),
                may_pause: true,
            })
        }

        /// The same, where a call that needs a decision pauses the run (`may_pause`) or is
        /// denied.
        pub(crate) fn pausing(self, may_pause: bool) -> Self {
            Self { may_pause, ..self }
        }

        /// Whether `call` is a program's.
        pub(crate) fn is_program(&self, call: &ToolCall) -> bool {
            call.name == self.mode.tool()
        }

        /// Runs the program of `approved` (again, when its journal holds the calls it made
        /// before it paused): finished, its execution carrying its calls'; or paused, when a
        /// call of it waits for a decision. A record of a nested call that cannot be written
        /// ends the run, as any call's.
        pub(crate) async fn run(
            &self,
            toolbox: Arc<Toolbox>,
            approved: &Approved<'_>,
            context: &CallContext,
            round: usize,
        ) -> Result<Ran, AgentError> {
            let call = approved.call;
            let started = Instant::now();
            let code = match CodeMode::code_of(approved.arguments.value()) {
                Ok(code) => code,
                Err(message) => return Ok(Ran::Finished(not_a_program(call, round, message))),
            };
            let calls = Arc::new(RunCalls {
                turn: self.clone(),
                toolbox,
                context: CallContext {
                    call_id: call.id.clone(),
                    ..context.clone()
                },
                round,
                journal: Mutex::new(approved.journal.clone()),
                made: Mutex::default(),
                pending: Mutex::default(),
                audit_failure: Mutex::default(),
            });
            let nested: Arc<dyn NestedCalls> = Arc::new(Shared(calls.clone()));
            let run = self.mode.run(code, nested).await;
            if let Some(failure) = lock(&calls.audit_failure).take() {
                return Err(failure);
            }
            let mut made = std::mem::take(&mut *lock(&calls.made));
            made.sort_by_key(|journaled| journaled.index);
            let pending = std::mem::take(&mut *lock(&calls.pending));
            if !pending.is_empty() {
                let program = PausedProgram {
                    call_id: call.id.clone(),
                    journal: made,
                };
                return Ok(Ran::Paused { program, pending });
            }
            let outcome = match &run.result {
                Ok(_) => Outcome::Ok,
                Err(error) => Outcome::Error {
                    kind: ErrorKind::ToolFailed,
                    message: error.to_string(),
                },
            };
            let output = self.mode.report(&run).unwrap_or_else(|error| error);
            Ok(Ran::Finished(ToolExecution {
                duration: started.elapsed(),
                approval: approved.approval,
                nested: made
                    .into_iter()
                    .map(|journaled| journaled.execution)
                    .collect(),
                ..ToolExecution::new(call, round, outcome, output)
            }))
        }
    }

    /// The execution of `call`, whose arguments hold no program (`message` says why).
    fn not_a_program(call: &ToolCall, round: usize, message: String) -> ToolExecution {
        let error = CallError::InvalidArguments {
            tool: call.name.clone(),
            message,
        };
        let outcome = Outcome::Error {
            kind: error.kind(),
            message: error.to_string(),
        };
        ToolExecution::new(call, round, outcome, error.model_message())
    }

    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The calls of one program.
    struct RunCalls {
        turn: ProgramTurn,
        toolbox: Arc<Toolbox>,
        /// The program's call's context; its id is the parent's.
        context: CallContext,
        round: usize,
        /// What the program did before it paused, and the decisions since.
        journal: Mutex<Journal>,
        /// Each call that finished (this time, or before and answered from the journal).
        made: Mutex<Vec<Journaled>>,
        /// The calls that wait for a decision.
        pending: Mutex<Vec<PendingCall>>,
        /// The first audit record that could not be written.
        audit_failure: Mutex<Option<AgentError>>,
    }

    /// [`RunCalls`] shared with the tasks of its calls.
    struct Shared(Arc<RunCalls>);

    /// What becomes of a program's call, decided when the program starts it.
    enum Decided {
        /// It runs, with these arguments, approved so.
        Run(Arguments, Approval),
        /// It ends without running: the error the program gets, the outcome recorded.
        Refused(NestedError, Outcome, Approval),
        /// It waits for a decision.
        Waits(Box<PendingCall>),
    }

    impl NestedCalls for Shared {
        fn call(
            &self,
            index: u32,
            name: String,
            arguments: String,
        ) -> BoxFuture<'static, NestedOutcome> {
            let calls = self.0.clone();
            let call = ToolCall {
                id: nested_id(&calls.context.call_id, index),
                name,
                arguments,
            };
            // Decided here, as the program starts the call, in the program's order: the
            // journal is read in that order, and a call that waits is known at once.
            let replayed = lock(&calls.journal).replay(index, &call.name, &call.arguments);
            if let Some(journaled) = replayed {
                let answer = journaled.answer.outcome();
                lock(&calls.made).push(journaled);
                return Box::pin(ready(answer));
            }
            match calls.decide(&call) {
                Decided::Run(arguments, approval) => {
                    Box::pin(async move { calls.run(index, call, arguments, approval).await })
                }
                Decided::Refused(error, recorded, approval) => Box::pin(async move {
                    let arguments =
                        Arguments::parse(&call.arguments).unwrap_or_else(|_| Arguments::empty());
                    let ended = Err((error, recorded));
                    calls.record(index, &call, &arguments, ended, approval, Duration::ZERO)
                }),
                Decided::Waits(pending) => {
                    let error = NestedError {
                        kind: NestedErrorKind::Paused,
                        message: format!("`{}` waits for a person's approval", pending.tool),
                    };
                    lock(&calls.pending).push(*pending);
                    Box::pin(ready(Err(error)))
                }
            }
        }

        fn pausing(&self) -> bool {
            !lock(&self.0.pending).is_empty()
        }
    }

    impl RunCalls {
        /// Whether `call` may run: a tool the run offers, arguments that are a JSON object,
        /// and approved when it needs to be (or else refused, or waiting).
        fn decide(&self, call: &ToolCall) -> Decided {
            if !self.turn.callable.contains(&call.name) {
                let error = not_offered(&call.name, &self.turn.callable);
                let recorded = Outcome::Error {
                    kind: ErrorKind::UnknownTool,
                    message: error.message.clone(),
                };
                return Decided::Refused(error, recorded, Approval::NotRequired);
            }
            let Ok(arguments) = Arguments::parse(&call.arguments) else {
                let error = CallError::InvalidArguments {
                    tool: call.name.clone(),
                    message: "the arguments must be a JSON object".to_owned(),
                };
                let recorded = Outcome::Error {
                    kind: error.kind(),
                    message: error.to_string(),
                };
                let told = NestedError {
                    kind: NestedErrorKind::InvalidArguments,
                    message: error.model_message(),
                };
                return Decided::Refused(told, recorded, Approval::NotRequired);
            };
            let Some(pending) = self.needs_approval(call) else {
                return Decided::Run(arguments, Approval::NotRequired);
            };
            if self.turn.approved_for_run.contains(&call.name) {
                return Decided::Run(arguments, Approval::ApprovedForRun);
            }
            let journal = lock(&self.journal);
            let decided = journal.decision(&call.id, &call.name, &call.arguments);
            match decided.and_then(|pending| pending.decision.clone()) {
                Some(Decision::Approve) => {
                    approval_metric("approved");
                    Decided::Run(arguments, Approval::Approved)
                }
                Some(Decision::ApproveForRun) => {
                    approval_metric("approved");
                    Decided::Run(arguments, Approval::ApprovedForRun)
                }
                Some(Decision::Reject { reason }) => {
                    approval_metric("denied");
                    denied(rejection_message(&reason), reason)
                }
                None if self.turn.may_pause => {
                    approval_metric("asked");
                    Decided::Waits(Box::new(pending))
                }
                None => {
                    let reason = format!(
                        "`{}` needs a person's approval, which cannot be asked for a program \
                         that Agent::run_calls runs; it was not run",
                        call.name
                    );
                    denied(reason.clone(), reason)
                }
            }
        }

        /// Runs `call`, decided, and records how it ended.
        async fn run(
            &self,
            index: u32,
            call: ToolCall,
            arguments: Arguments,
            approval: Approval,
        ) -> NestedOutcome {
            let started = Instant::now();
            let context = CallContext {
                call_id: call.id.clone(),
                ..self.context.clone()
            };
            let result = self
                .toolbox
                .call_parsed(&call.name, &arguments, &context)
                .await;
            let ended = with_recorded(result);
            self.record(index, &call, &arguments, ended, approval, started.elapsed())
        }

        /// Writes how `call` (number `index`) ended to the audit log and the program's
        /// record, and returns what the program is told.
        fn record(
            &self,
            index: u32,
            call: &ToolCall,
            arguments: &Arguments,
            ended: Result<NestedResult, (NestedError, Outcome)>,
            approval: Approval,
            duration: Duration,
        ) -> NestedOutcome {
            let (outcome, output) = match &ended {
                Ok(result) => (Outcome::Ok, result.text.clone()),
                Err((error, recorded)) => (recorded.clone(), error.message.clone()),
            };
            let execution = ToolExecution {
                duration,
                approval,
                ..ToolExecution::new(call, self.round, outcome, output)
            };
            let trail = AuditTrail {
                sink: self.turn.audit.as_ref(),
                run_id: &self.turn.run_id,
                toolbox: &self.toolbox,
            };
            if let Err(failure) =
                trail.execution_in(&execution, arguments, Some(&self.context.call_id))
            {
                lock(&self.audit_failure).get_or_insert(failure);
            }
            let answer = ended.map_err(|(error, _)| error);
            lock(&self.made).push(Journaled {
                index,
                answer: Answer::of(&answer),
                execution,
            });
            answer
        }

        /// When the run's rules (or its predicate) want a person to approve `call`: the call
        /// as the person would see it.
        fn needs_approval(&self, call: &ToolCall) -> Option<PendingCall> {
            let pending = PendingCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                origin: self.toolbox.origin(&call.name),
                grants: self
                    .toolbox
                    .source_of(&call.name)
                    .and_then(|source| source.grants().cloned()),
                decision: None,
                parent: Some(self.context.call_id.clone()),
            };
            let by_rules = self.turn.rules.requires(
                &call.name,
                pending.origin.as_ref(),
                pending.grants.as_ref(),
            );
            let by_predicate =
                || (self.turn.needs_approval.as_ref()).is_some_and(|predicate| predicate(&pending));
            (by_rules || by_predicate()).then_some(pending)
        }
    }

    /// A call refused approval: the program is told `message`, the record keeps `reason`.
    fn denied(message: String, reason: String) -> Decided {
        let error = NestedError {
            kind: NestedErrorKind::Denied,
            message,
        };
        Decided::Refused(error, Outcome::Rejected { reason }, Approval::Rejected)
    }

    /// What the program is told of a call that ended in `result`, and what the run records.
    fn with_recorded(
        result: Result<ToolOutput, CallError>,
    ) -> Result<NestedResult, (NestedError, Outcome)> {
        let recorded = match &result {
            Ok(_) => Outcome::Ok,
            Err(error) => Outcome::Error {
                kind: error.kind(),
                message: error.to_string(),
            },
        };
        outcome(result).map_err(|error| (error, recorded))
    }
}

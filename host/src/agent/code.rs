//! Code mode in the loop ([`RunOptions::code_mode`](super::RunOptions::code_mode)): the model
//! is offered one tool, whose program calls the run's tools. Each call a program makes goes
//! the way a model's call would: a tool the run offers, its arguments checked, the approval
//! rules (a call that needs a person's approval is denied unless its tool was approved for the
//! run: a program cannot pause), the audit log (with the program's call as its parent), and the
//! run's record (under the program's [`ToolExecution::nested`](super::ToolExecution::nested)).

#[cfg(feature = "code-mode")]
pub(crate) use on::ProgramTurn;

#[cfg(not(feature = "code-mode"))]
pub(crate) use off::ProgramTurn;

/// Without the `code-mode` feature there is no program to run: a turn's programs are none.
#[cfg(not(feature = "code-mode"))]
mod off {
    use std::sync::Arc;

    use crate::arguments::Arguments;
    use crate::llm::ToolCall;
    use crate::source::CallContext;
    use crate::toolbox::Toolbox;

    use super::super::AgentError;
    use super::super::record::ToolExecution;

    /// Never made.
    pub(crate) enum ProgramTurn {}

    impl ProgramTurn {
        pub(crate) fn is_program(&self, _: &ToolCall) -> bool {
            match *self {}
        }

        pub(crate) async fn run(
            &self,
            _: Arc<Toolbox>,
            _: &ToolCall,
            _: &Arguments,
            _: &CallContext,
            _: usize,
        ) -> Result<ToolExecution, AgentError> {
            match *self {}
        }
    }
}

#[cfg(feature = "code-mode")]
mod on {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use futures::future::BoxFuture;

    use crate::arguments::Arguments;
    use crate::code::{CodeMode, nested_id, not_offered, outcome};
    use crate::error::{CallError, ErrorKind};
    use crate::llm::ToolCall;
    use crate::sandbox::{NestedCalls, NestedError, NestedErrorKind, NestedOutcome};
    use crate::source::CallContext;
    use crate::toolbox::Toolbox;

    use super::super::approval::{Approval, ApprovalPredicate, ApprovalRules, PendingCall};
    use super::super::audit::{AuditSink, AuditTrail};
    use super::super::record::{Outcome, ToolExecution};
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
            })
        }

        /// Whether `call` is a program's.
        pub(crate) fn is_program(&self, call: &ToolCall) -> bool {
            call.name == self.mode.tool()
        }

        /// Runs the program of `call` (its arguments `arguments`); its execution carries its
        /// calls'. A record of a nested call that cannot be written ends the run, as any call's.
        pub(crate) async fn run(
            &self,
            toolbox: Arc<Toolbox>,
            call: &ToolCall,
            arguments: &Arguments,
            context: &CallContext,
            round: usize,
        ) -> Result<ToolExecution, AgentError> {
            let started = Instant::now();
            let code = match CodeMode::code_of(arguments.value()) {
                Ok(code) => code,
                Err(message) => {
                    let error = CallError::InvalidArguments {
                        tool: call.name.clone(),
                        message,
                    };
                    let outcome = Outcome::Error {
                        kind: error.kind(),
                        message: error.to_string(),
                    };
                    return Ok(ToolExecution::new(
                        call,
                        round,
                        outcome,
                        error.model_message(),
                    ));
                }
            };
            let calls = Arc::new(RunCalls {
                turn: self.clone(),
                toolbox,
                context: CallContext {
                    call_id: call.id.clone(),
                    ..context.clone()
                },
                round,
                made: Mutex::default(),
                audit_failure: Mutex::default(),
            });
            let nested: Arc<dyn NestedCalls> = Arc::new(Shared(calls.clone()));
            let run = self.mode.run(code, nested).await;
            if let Some(failure) = lock(&calls.audit_failure).take() {
                return Err(failure);
            }
            let outcome = match &run.result {
                Ok(_) => Outcome::Ok,
                Err(error) => Outcome::Error {
                    kind: ErrorKind::ToolFailed,
                    message: error.to_string(),
                },
            };
            let output = self.mode.report(&run).unwrap_or_else(|error| error);
            let mut nested = std::mem::take(&mut *lock(&calls.made));
            nested.sort_by_key(|(index, _)| *index);
            Ok(ToolExecution {
                duration: started.elapsed(),
                nested: nested.into_iter().map(|(_, execution)| execution).collect(),
                ..ToolExecution::new(call, round, outcome, output)
            })
        }
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
        /// Each call's record, by its number.
        made: Mutex<Vec<(u32, ToolExecution)>>,
        /// The first audit record that could not be written.
        audit_failure: Mutex<Option<AgentError>>,
    }

    /// [`RunCalls`] shared with the tasks of its calls.
    struct Shared(Arc<RunCalls>);

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
            Box::pin(async move { calls.one(index, call).await })
        }
    }

    impl RunCalls {
        /// One call: checked, approved, run, recorded.
        async fn one(&self, index: u32, call: ToolCall) -> NestedOutcome {
            let started = Instant::now();
            let (result, approval) = self.answer(&call).await;
            let (outcome, output) = match &result {
                Ok(result) => (Outcome::Ok, result.text.clone()),
                Err((error, recorded)) => (recorded.clone(), error.message.clone()),
            };
            let execution = ToolExecution {
                duration: started.elapsed(),
                approval,
                ..ToolExecution::new(&call, self.round, outcome, output)
            };
            let arguments =
                Arguments::parse(&call.arguments).unwrap_or_else(|_| Arguments::empty());
            let trail = AuditTrail {
                sink: self.turn.audit.as_ref(),
                run_id: &self.turn.run_id,
                toolbox: &self.toolbox,
            };
            if let Err(failure) =
                trail.execution_in(&execution, &arguments, Some(&self.context.call_id))
            {
                lock(&self.audit_failure).get_or_insert(failure);
            }
            lock(&self.made).push((index, execution));
            result.map_err(|(error, _)| error)
        }

        /// How `call` ends, and whether it needed approval.
        async fn answer(
            &self,
            call: &ToolCall,
        ) -> (
            Result<crate::sandbox::NestedResult, (NestedError, Outcome)>,
            Approval,
        ) {
            let failed = |error: CallError| (with_recorded(Err(error)), Approval::NotRequired);
            if !self.turn.callable.contains(&call.name) {
                let error = not_offered(&call.name, &self.turn.callable);
                let recorded = Outcome::Error {
                    kind: ErrorKind::UnknownTool,
                    message: error.message.clone(),
                };
                return (Err((error, recorded)), Approval::NotRequired);
            }
            let Ok(arguments) = Arguments::parse(&call.arguments) else {
                return failed(CallError::InvalidArguments {
                    tool: call.name.clone(),
                    message: "the arguments must be a JSON object".to_owned(),
                });
            };
            if self.needs_approval(call) {
                if !self.turn.approved_for_run.contains(&call.name) {
                    let reason = format!(
                        "`{}` needs a person's approval, and a call made inside a program cannot                      wait for it; it was not run",
                        call.name
                    );
                    let error = NestedError {
                        kind: NestedErrorKind::Denied,
                        message: reason.clone(),
                    };
                    return (
                        Err((error, Outcome::Rejected { reason })),
                        Approval::Rejected,
                    );
                }
                let result = self
                    .toolbox
                    .call_parsed(&call.name, &arguments, &self.nested_context(call))
                    .await;
                return (with_recorded(result), Approval::ApprovedForRun);
            }
            let result = self
                .toolbox
                .call_parsed(&call.name, &arguments, &self.nested_context(call))
                .await;
            (with_recorded(result), Approval::NotRequired)
        }

        fn nested_context(&self, call: &ToolCall) -> CallContext {
            CallContext {
                call_id: call.id.clone(),
                ..self.context.clone()
            }
        }

        /// Whether the run's rules (or its predicate) want a person to approve `call`.
        fn needs_approval(&self, call: &ToolCall) -> bool {
            let origin = self.toolbox.origin(&call.name);
            let grants = self
                .toolbox
                .source_of(&call.name)
                .and_then(|source| source.grants().cloned());
            if self
                .turn
                .rules
                .requires(&call.name, origin.as_ref(), grants.as_ref())
            {
                return true;
            }
            let Some(predicate) = &self.turn.needs_approval else {
                return false;
            };
            predicate(&PendingCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                origin,
                grants,
                decision: None,
            })
        }
    }

    /// What the program is told of a call that ended in `result`, and what the run records.
    fn with_recorded(
        result: Result<crate::source::ToolOutput, CallError>,
    ) -> Result<crate::sandbox::NestedResult, (NestedError, Outcome)> {
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

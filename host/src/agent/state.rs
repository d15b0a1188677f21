//! A paused run: what the loop needs to go on after the calls that wait for approval are
//! decided and those that ask for input are answered, in this process or another (it
//! serializes with its conversation).

use std::collections::BTreeSet;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::llm::{ToolCall, Usage};

use super::approval::{Decision, PendingCall};
use super::asking::{AskingCall, InputAnswer};
use super::guard::Guard;
use super::record::{InvalidCall, ToolExecution};
use super::replay::PausedProgram;
use super::{AgentError, RunEnd, RunRecord, RunResult};

/// The state of a run between two steps of the loop. A run that pauses for approval leaves
/// it in its [`Conversation`](super::Conversation), which serializes with it; decide the
/// pending calls there ([`Conversation::approve`](super::Conversation::approve), ...) and
/// [`Agent::resume`](super::Agent::resume).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    run_id: String,
    rounds: usize,
    executions: Vec<ToolExecution>,
    invalid_calls: Vec<InvalidCall>,
    usage: Usage,
    guard: Guard,
    /// Tools approved for the rest of the run.
    approved_tools: BTreeSet<String>,
    /// The model's last turn, when its calls have not run yet.
    turn: Option<Turn>,
}

/// The tool calls of one model turn, waiting to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Turn {
    /// The round that asked for them.
    pub round: usize,
    /// The calls, with the arguments exactly as the model wrote them.
    pub calls: Vec<ToolCall>,
    /// The tools the request offered.
    pub offered: BTreeSet<String>,
    /// The calls that need approval, with their decisions once made.
    pub approvals: Vec<PendingCall>,
    /// The calls that finished while others asked for input; their results go back to the
    /// model with the others'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finished: Vec<ToolExecution>,
    /// The calls that asked for input, with the answers once given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asking: Vec<AskingCall>,
    /// The programs (code mode) that paused because one of their calls waits for a decision
    /// (in `approvals`, with the program's call as its `parent`), with the calls they made
    /// before: they run again, answered from those, once it is decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<PausedProgram>,
}

impl Turn {
    /// The decision about call `id` of the model's, when it needed approval.
    pub fn decision(&self, id: &str) -> Option<Option<&Decision>> {
        self.approvals
            .iter()
            .find(|pending| pending.parent.is_none() && pending.call_id == id)
            .map(|pending| pending.decision.as_ref())
    }

    /// The calls that the program of call `id` made and that waited for a decision.
    pub fn decided_in(&self, id: &str) -> Vec<PendingCall> {
        self.approvals
            .iter()
            .filter(|pending| pending.parent.as_deref() == Some(id))
            .cloned()
            .collect()
    }

    /// Call `program_id`'s program paused, and `pending` are its calls that wait for a
    /// decision: they take the place of any earlier ones with the same ids (a program that
    /// went another way this time made other calls under them).
    pub fn pause_program(&mut self, program: PausedProgram, pending: Vec<PendingCall>) {
        for call in pending {
            self.approvals.retain(|p| p.call_id != call.call_id);
            self.approvals.push(call);
        }
        self.programs.push(program);
    }

    /// Whether the turn ran before and waits only for some of its calls (those that asked
    /// for input, the programs that paused).
    pub fn ran_before(&self) -> bool {
        !self.asking.is_empty() || !self.programs.is_empty()
    }

    fn undecided(&self) -> impl Iterator<Item = &PendingCall> {
        self.approvals.iter().filter(|p| p.decision.is_none())
    }

    fn unanswered(&self) -> impl Iterator<Item = &AskingCall> {
        self.asking.iter().filter(|a| a.answer.is_none())
    }

    /// Whether call `id` runs in this pass: every call the first time, then (the turn waited
    /// for input or decisions) only those that asked and the programs that paused.
    pub fn runs_now(&self, id: &str) -> bool {
        !self.ran_before()
            || self.asking.iter().any(|asking| asking.call_id == id)
            || self.programs.iter().any(|program| program.call_id == id)
    }

    /// What call `id`'s program did before it paused, if it did.
    pub fn paused_program(&self, id: &str) -> Option<&PausedProgram> {
        self.programs.iter().find(|program| program.call_id == id)
    }
}

impl RunState {
    pub(crate) fn new() -> Self {
        Self {
            run_id: new_run_id(),
            rounds: 0,
            executions: Vec::new(),
            invalid_calls: Vec::new(),
            usage: Usage::default(),
            guard: Guard::default(),
            approved_tools: BTreeSet::new(),
            turn: None,
        }
    }

    /// The run's id (in every audit record of the run).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// How many model requests the run has made.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The tool calls made so far.
    pub fn executions(&self) -> &[ToolExecution] {
        &self.executions
    }

    /// The invalid tool calls so far.
    pub fn invalid_calls(&self) -> &[InvalidCall] {
        &self.invalid_calls
    }

    /// The calls that wait for a decision.
    pub fn pending(&self) -> Vec<&PendingCall> {
        self.turn.iter().flat_map(Turn::undecided).collect()
    }

    /// The calls that wait for input.
    pub fn asking(&self) -> Vec<&AskingCall> {
        self.turn.iter().flat_map(Turn::unanswered).collect()
    }

    /// Answers call `call_id`, which asked for input (an answer can be changed until the run
    /// resumes).
    pub fn answer(&mut self, call_id: &str, answer: InputAnswer) -> Result<(), AgentError> {
        let asking = self
            .turn
            .as_mut()
            .and_then(|turn| turn.asking.iter_mut().find(|a| a.call_id == call_id));
        match asking {
            Some(asking) => asking.answer(answer),
            None => Err(AgentError::NoSuchPendingCall {
                id: call_id.to_owned(),
            }),
        }
    }

    /// Decides about pending call `call_id` (a decision can be changed until the run resumes).
    /// [`Decision::ApproveForRun`] also approves the other pending calls of the same tool,
    /// and every later one in the run.
    pub fn decide(&mut self, call_id: &str, decision: Decision) -> Result<(), AgentError> {
        let turn = self.turn.as_mut();
        let Some(pending) = turn.and_then(|turn| {
            turn.approvals
                .iter_mut()
                .find(|pending| pending.call_id == call_id)
        }) else {
            return Err(AgentError::NoSuchPendingCall {
                id: call_id.to_owned(),
            });
        };
        pending.decision = Some(decision.clone());
        if decision == Decision::ApproveForRun {
            let tool = pending.tool.clone();
            for other in self.turn.iter_mut().flat_map(|turn| &mut turn.approvals) {
                if other.tool == tool && other.decision.is_none() {
                    other.decision = Some(Decision::ApproveForRun);
                }
            }
            self.approved_tools.insert(tool);
        }
        Ok(())
    }

    pub(crate) fn guard(&self) -> &Guard {
        &self.guard
    }

    pub(crate) fn guard_mut(&mut self) -> &mut Guard {
        &mut self.guard
    }

    pub(crate) fn approved_for_run(&self, tool: &str) -> bool {
        self.approved_tools.contains(tool)
    }

    /// The tools approved for the rest of the run.
    #[cfg(feature = "code-mode")]
    pub(crate) fn approved_tools(&self) -> &BTreeSet<String> {
        &self.approved_tools
    }

    /// The turn to run next, unless some of its calls still wait for a decision.
    pub(crate) fn take_ready_turn(&mut self) -> Option<Turn> {
        match &self.turn {
            Some(turn)
                if turn.undecided().next().is_none() && turn.unanswered().next().is_none() =>
            {
                self.turn.take()
            }
            _ => None,
        }
    }

    pub(crate) fn is_waiting(&self) -> bool {
        self.turn.is_some()
    }

    pub(crate) fn set_turn(&mut self, turn: Turn) {
        self.turn = Some(turn);
    }

    pub(crate) fn count_request(&mut self, usage: Usage) -> usize {
        self.rounds += 1;
        self.usage = self.usage + usage;
        self.rounds
    }

    pub(crate) fn push_executions(&mut self, executions: Vec<ToolExecution>) {
        self.executions.extend(executions);
    }

    pub(crate) fn push_invalid(&mut self, call: InvalidCall) {
        self.invalid_calls.push(call);
    }

    /// The result of the run so far: paused when calls wait for a decision.
    pub(crate) fn paused_result(&self) -> RunResult {
        RunResult {
            text: String::new(),
            end: RunEnd::Paused,
            executions: self.executions.clone(),
            invalid_calls: self.invalid_calls.clone(),
            pending: self.pending().into_iter().cloned().collect(),
            asking: self.asking().into_iter().cloned().collect(),
            rounds: self.rounds,
            usage: self.usage,
        }
    }

    /// The result of a run that ended with `text`.
    pub(crate) fn into_result(self, text: String, end: RunEnd) -> RunResult {
        RunResult {
            text,
            end,
            executions: self.executions,
            invalid_calls: self.invalid_calls,
            pending: Vec::new(),
            asking: Vec::new(),
            rounds: self.rounds,
            usage: self.usage,
        }
    }

    /// What the run did, for an error that ends it.
    pub(crate) fn into_record(self) -> Box<RunRecord> {
        Box::new(RunRecord {
            executions: self.executions,
            invalid_calls: self.invalid_calls,
        })
    }
}

/// A fresh run id: `run-` and 16 hex digits, from the time, the process and a random key.
fn new_run_id() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    format!("run-{:016x}", hasher.finish())
}

//! What a program's store holds besides a call's (code mode, `wit/code/runner.wit`): the tool
//! calls it has started, the bound on how many it may make and how many run at once, and what
//! it printed, bounded. The program itself is granted nothing: its only way out is
//! [`NestedCalls`], which whoever runs it supplies (the toolbox, or the agent with its
//! approval and audit).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::nested::{NestedError, NestedErrorKind, NestedOutcome};

/// Answers the tool calls of a program. Each call is a real one: whoever implements this
/// checks that the tool is offered and its arguments fit its schema, and runs it in its own
/// sandbox (and, in the agent, asks for approval and writes the audit log).
pub trait NestedCalls: Send + Sync {
    /// Calls tool `name` with `arguments` (what the program passed, as JSON text); `index`
    /// counts the program's calls from 0.
    fn call(
        &self,
        index: u32,
        name: String,
        arguments: String,
    ) -> BoxFuture<'static, NestedOutcome>;

    /// Whether one of the program's calls ended [`NestedErrorKind::Paused`]: the program's
    /// run will be paused and run again. Its calls still running when it ends then finish
    /// (and are kept for the next run) rather than being stopped halfway.
    fn pausing(&self) -> bool {
        false
    }
}

/// The bounds of a program besides those of every call ([`Limits`](super::Limits)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramLimits {
    /// The most tool calls one program may start. Default 100.
    pub max_calls: u32,
    /// The most of them that run at once. Default 4.
    pub max_parallel_calls: usize,
    /// The most the program may print, in bytes. Default 64 KiB.
    pub max_output: usize,
}

impl Default for ProgramLimits {
    fn default() -> Self {
        Self {
            max_calls: 100,
            max_parallel_calls: 4,
            max_output: 64 * 1024,
        }
    }
}

/// One tool call a program made, for its report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NestedCall {
    /// The tool.
    pub tool: String,
    /// The arguments, as the program passed them (JSON text).
    pub arguments: String,
    /// How it ended; `None` when the program ended without waiting for it (it was stopped).
    #[serde(skip)]
    pub outcome: Option<NestedOutcome>,
    /// How long it took, up to when the program took its result.
    pub duration: Duration,
}

/// Why the host ended a program from one of its functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramStop {
    /// It started more calls than [`ProgramLimits::max_calls`].
    TooManyCalls,
    /// It printed more than [`ProgramLimits::max_output`].
    OutputTooLarge,
    /// It waited for a call that waits for a person's decision
    /// ([`NestedErrorKind::Paused`]).
    Paused,
}

impl std::fmt::Display for ProgramStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::TooManyCalls => "the program started more tool calls than it may",
            Self::OutputTooLarge => "the program printed more than it may",
            Self::Paused => "the program waited for a call that waits for a person's decision",
        })
    }
}

impl std::error::Error for ProgramStop {}

/// The state of one program's run in its store.
pub(crate) struct ProgramState {
    calls: Arc<dyn NestedCalls>,
    limits: ProgramLimits,
    parallel: Arc<Semaphore>,
    started: HashMap<u32, (Instant, JoinHandle<NestedOutcome>)>,
    made: Vec<NestedCall>,
    printed: String,
    /// Set when the host ended the program, so the verdict can say why.
    pub(crate) stopped: Option<ProgramStop>,
}

impl ProgramState {
    pub(crate) fn new(calls: Arc<dyn NestedCalls>, limits: ProgramLimits) -> Self {
        Self {
            calls,
            limits,
            parallel: Arc::new(Semaphore::new(limits.max_parallel_calls.max(1))),
            started: HashMap::new(),
            made: Vec::new(),
            printed: String::new(),
            stopped: None,
        }
    }

    /// Starts a call on a task of its own (it waits there for its turn among
    /// `max_parallel_calls`); its number, or the stop when the program has made all it may.
    pub(crate) fn start(&mut self, name: String, arguments: String) -> Result<u32, ProgramStop> {
        let Ok(index) = u32::try_from(self.made.len()) else {
            return Err(self.stop(ProgramStop::TooManyCalls));
        };
        if index >= self.limits.max_calls {
            return Err(self.stop(ProgramStop::TooManyCalls));
        }
        let call = self.calls.call(index, name.clone(), arguments.clone());
        let parallel = self.parallel.clone();
        let task = tokio::spawn(async move {
            // The semaphore is never closed.
            let _turn = parallel.acquire_owned().await;
            call.await
        });
        self.started.insert(index, (Instant::now(), task));
        self.made.push(NestedCall {
            tool: name,
            arguments,
            outcome: None,
            duration: Duration::ZERO,
        });
        Ok(index)
    }

    /// Waits for call `index` and returns how it ended (a call waited for already, or never
    /// started, is a failure the program is told about); the stop when the call waits for a
    /// person's decision.
    pub(crate) async fn finish(&mut self, index: u32) -> Result<NestedOutcome, ProgramStop> {
        let Some((started, task)) = self.started.remove(&index) else {
            return Ok(Err(NestedError {
                kind: NestedErrorKind::Failed,
                message: format!("no call {index} is waiting to be finished"),
            }));
        };
        let outcome = self.ended(index, started, task).await;
        match &outcome {
            Err(error) if error.kind == NestedErrorKind::Paused => {
                Err(self.stop(ProgramStop::Paused))
            }
            _ => Ok(outcome),
        }
    }

    /// How call `index`, started at `started` and running as `task`, ended, kept in its
    /// record.
    async fn ended(
        &mut self,
        index: u32,
        started: Instant,
        task: JoinHandle<NestedOutcome>,
    ) -> NestedOutcome {
        let outcome = task.await.unwrap_or_else(|error| {
            Err(NestedError {
                kind: NestedErrorKind::Failed,
                message: format!("the call ended abnormally: {error}"),
            })
        });
        if let Some(record) = self.made.get_mut(index as usize) {
            record.outcome = Some(outcome.clone());
            record.duration = started.elapsed();
        }
        outcome
    }

    /// Once the program has ended: when its run pauses ([`NestedCalls::pausing`]), waits for
    /// the calls still running, so that each either finished (and is kept for the next run)
    /// or never started; otherwise [`take`](Self::take) stops them.
    pub(crate) async fn settle(&mut self) {
        if !self.calls.pausing() {
            return;
        }
        let mut running: Vec<_> = self.started.drain().collect();
        running.sort_by_key(|(index, _)| *index);
        for (index, (started, task)) in running {
            // Kept in the call's record; the program is no longer there to be told.
            let _ = self.ended(index, started, task).await;
        }
    }

    /// Appends `text` to what the program printed, or stops it when that is too much.
    pub(crate) fn print(&mut self, text: &str) -> Result<(), ProgramStop> {
        if self.printed.len().saturating_add(text.len()) > self.limits.max_output {
            return Err(self.stop(ProgramStop::OutputTooLarge));
        }
        self.printed.push_str(text);
        Ok(())
    }

    fn stop(&mut self, stop: ProgramStop) -> ProgramStop {
        self.stopped = Some(stop);
        stop
    }

    /// What the program printed and the calls it made, in the order it started them; calls
    /// still running are stopped.
    pub(crate) fn take(&mut self) -> (String, Vec<NestedCall>) {
        for (_, (_, task)) in self.started.drain() {
            task.abort();
        }
        (
            std::mem::take(&mut self.printed),
            std::mem::take(&mut self.made),
        )
    }
}

impl Drop for ProgramState {
    fn drop(&mut self) {
        for (_, (_, task)) in self.started.drain() {
            task.abort();
        }
    }
}

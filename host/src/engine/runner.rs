//! Code runners (code mode, `wit/code/runner.wit`): loading a runner component, and running
//! one program in a fresh instance of it, granted nothing, under the limits of a call and a
//! program's own, its tool calls answered by whoever runs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::Store;

use super::bindings::{RunnerInstance, RunnerInstancePre, runner_linker, wit_runner};
use super::component::compiled;
use super::component_file::content_key_of;
use super::runtime::Runtime;
use crate::error::{CallError, LoadError, ProgramError, TimeLimit};
use crate::sandbox::limits::within;
use crate::sandbox::program::ProgramState;
use crate::sandbox::store::{Failure, StoreState, verdict};
use crate::sandbox::{Limits, NestedCall, NestedCalls, ProgramLimits, ProgramStop, Sandbox};

/// The name a runner's failures carry in messages (the tool the model called).
const LABEL: &str = "run_code";

/// A code runner component, loaded: compiled once, instantiated fresh for every program.
///
/// ```no_run
/// # async fn example(runtime: toolhost::Runtime, calls: std::sync::Arc<dyn toolhost::sandbox::NestedCalls>) -> anyhow::Result<()> {
/// use toolhost::sandbox::ProgramLimits;
/// let runner = toolhost::CodeRunner::load(&runtime, "example-tools/dist/runner-js.wasm").await?;
/// let run = runner
///     .run("return 6 * 7;", calls, toolhost::Limits::default(), ProgramLimits::default())
///     .await;
/// assert_eq!(run.result?, serde_json::json!(42));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CodeRunner {
    runtime: Runtime,
    pre: RunnerInstancePre<StoreState>,
    path: PathBuf,
}

impl std::fmt::Debug for CodeRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeRunner")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// How a program ended: its result (the JSON value it returned) or why there is none, what
/// it printed, and each tool call it made.
#[derive(Debug)]
pub struct ProgramRun {
    /// The value the program returned, or why there is none.
    pub result: Result<serde_json::Value, ProgramError>,
    /// What it printed (`console.log`), up to [`ProgramLimits::max_output`].
    pub printed: String,
    /// The tool calls it made, in the order it started them.
    pub calls: Vec<NestedCall>,
    /// How long it took, its tool calls included.
    pub duration: Duration,
}

impl CodeRunner {
    /// Loads the runner at `path` (compiled once, into the runtime's cache). A component that
    /// imports anything but the runner's two interfaces (any WASI interface, say) is refused.
    pub async fn load(runtime: &Runtime, path: impl Into<PathBuf>) -> Result<Self, LoadError> {
        let path = path.into();
        let (key, bytes) = content_key_of(runtime, &path, None).await?;
        let (component, _) = compiled(runtime, &path, &key, bytes).await?;
        let wrong_world = |problem: String| LoadError::WrongWorld {
            path: path.clone(),
            problem,
        };
        let engine = runtime.engine();
        let foreign: Vec<String> = component
            .component_type()
            .imports(engine)
            .map(|(name, _)| name.to_owned())
            .filter(|name| !name.starts_with("toolhost:code/"))
            .collect();
        if !foreign.is_empty() {
            return Err(wrong_world(format!(
                "a code runner may import only toolhost:code's `tools` and `output` \
                 (wit/code/runner.wit), and this one imports {}; build it against that world \
                 with everything else turned off",
                foreign.join(", ")
            )));
        }
        let linker = runner_linker(engine).map_err(|e| LoadError::Compile {
            path: path.clone(),
            source: anyhow::anyhow!("cannot set up a code runner's linker: {e:#}"),
        })?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(RunnerInstancePre::new)
            .map_err(|e| {
                wrong_world(format!(
                    "it is not a code runner of toolhost:code@0.1.0 ({e:#}); build it against \
                     wit/code/runner.wit's world `code-runner`"
                ))
            })?;
        Ok(Self {
            runtime: runtime.clone(),
            pre,
            path,
        })
    }

    /// The runner's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `code` in a fresh instance granted nothing, under `limits` (CPU time, memory, the
    /// wall clock, its tool calls' time included, and the result's size) and `program`'s;
    /// its tool calls go to `calls`.
    pub async fn run(
        &self,
        code: &str,
        calls: Arc<dyn NestedCalls>,
        limits: Limits,
        program: ProgramLimits,
    ) -> ProgramRun {
        let started = Instant::now();
        let sandbox = Sandbox::empty(limits);
        let deadline = tokio::time::Instant::now().checked_add(limits.timeout);
        let ended = |result| ProgramRun {
            result,
            printed: String::new(),
            calls: Vec::new(),
            duration: started.elapsed(),
        };
        let Some(slot) = self.runtime.call_slot(deadline).await else {
            return ended(Err(ProgramError::Runner(CallError::Timeout {
                tool: LABEL.to_owned(),
                kind: TimeLimit::Queued,
                limit: limits.timeout,
            })));
        };
        let mut store = match self.runtime.new_store(&sandbox, false) {
            Ok(store) => store,
            Err(source) => {
                return ended(Err(ProgramError::Runner(CallError::Instantiate {
                    tool: LABEL.to_owned(),
                    source,
                })));
            }
        };
        store.data_mut().program = Some(ProgramState::new(calls, program));
        let work = async {
            let instance = self
                .pre
                .instantiate_async(&mut store)
                .await
                .map_err(Failure::Start)?;
            call_run(&instance, &mut store, code)
                .await
                .map_err(Failure::Run)
        };
        let outcome = within(deadline, work).await;
        if let Some(program) = &mut store.data_mut().program {
            program.settle().await;
        }
        let state = store.data_mut();
        let (printed, made) = match &mut state.program {
            Some(program) => program.take(),
            None => (String::new(), Vec::new()),
        };
        let result = judge(outcome, state, &limits, program);
        drop(store);
        drop(slot);
        ProgramRun {
            result,
            printed,
            calls: made,
            duration: started.elapsed(),
        }
    }
}

async fn call_run(
    instance: &RunnerInstance,
    store: &mut Store<StoreState>,
    code: &str,
) -> wasmtime::Result<Result<String, wit_runner::RunError>> {
    instance
        .toolhost_code_runner()
        .call_run(&mut *store, code)
        .await
}

/// The program's value, or why there is none: the wall clock, a stop of the host's (too many
/// calls, too much output), the runner's own error (syntax, a throw), or the sandbox's
/// verdict on a failure (CPU time, memory, a crash).
fn judge(
    outcome: Result<
        Result<Result<String, wit_runner::RunError>, Failure>,
        tokio::time::error::Elapsed,
    >,
    state: &StoreState,
    limits: &Limits,
    program: ProgramLimits,
) -> Result<serde_json::Value, ProgramError> {
    let stopped = state.program.as_ref().and_then(|program| program.stopped);
    match outcome {
        Err(_elapsed) => Err(ProgramError::Runner(CallError::Timeout {
            tool: LABEL.to_owned(),
            kind: TimeLimit::WallClock,
            limit: limits.timeout,
        })),
        Ok(Ok(Ok(text))) => {
            limits
                .check_result(LABEL, text.len())
                .map_err(ProgramError::Runner)?;
            serde_json::from_str(&text).map_err(|e| {
                ProgramError::Thrown(format!(
                    "the runner returned a result that is not JSON: {e}"
                ))
            })
        }
        Ok(Ok(Err(wit_runner::RunError::Syntax(message)))) => Err(ProgramError::Syntax(message)),
        Ok(Ok(Err(wit_runner::RunError::Thrown(message)))) => Err(ProgramError::Thrown(message)),
        Ok(Err(failure)) => Err(match stopped {
            Some(ProgramStop::TooManyCalls) => ProgramError::TooManyCalls {
                limit: program.max_calls,
            },
            Some(ProgramStop::OutputTooLarge) => ProgramError::OutputTooLarge {
                limit: program.max_output,
            },
            Some(ProgramStop::Paused) => ProgramError::Paused,
            None => ProgramError::Runner(verdict(failure, state, limits, LABEL.to_owned())),
        }),
    }
}

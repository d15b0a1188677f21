//! Running one export of a component in a fresh, limited store, and turning whatever goes
//! wrong into a [`CallError`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::Store;

use super::bindings::{ToolInstance, ToolInstancePre, VersionedOutcome, wit};
use super::result;
use super::runtime::{CallSlot, Runtime};
use super::spare_instance::Spare;
use crate::error::{CallError, TimeLimit};
use crate::sandbox::limits::within;
use crate::sandbox::report::CallReports;
use crate::sandbox::store::{Failure, StoreState, verdict};
use crate::sandbox::{CapturedLog, Limits, ReportCounts, Sandbox};
use crate::source::{CallContext, ToolOutput};
use crate::telemetry::metrics::outcome as called_outcome;

/// The target of the events that mark a call's phases, exported as its span's events when
/// traces are (the `host` binary exports it at debug level; see `toolhost::telemetry`).
const PHASE: &str = "toolhost::phase";
/// Where the time of one call went, phase by phase, as
/// [`LoadedComponent::call_profiled`](crate::engine::component::LoadedComponent::call_profiled) measures it. The
/// host's own cost is `store + instantiate + teardown` (and the host side of `call`); `init`
/// and `in_wasm` are the component's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallPhases {
    /// Waiting for a free instance slot, when
    /// [`RuntimeConfig::max_concurrent_calls`](crate::engine::runtime::RuntimeConfig::max_concurrent_calls)
    /// calls were already running.
    pub queued: Duration,
    /// Setting up a fresh store: the WASI context with the component's grants (preopened
    /// directories, environment), captured stdout and stderr, limits.
    pub store: Duration,
    /// Instantiating the component (an instance slot, its memory image, tables, imports), the
    /// component's own start-up code excluded.
    pub instantiate: Duration,
    /// The component's own start-up code, run at instantiation: start functions and a language
    /// runtime's `_initialize` (the host functions it calls included).
    pub init: Duration,
    /// The call of the tool's export, from the host's side: passing the arguments in, the
    /// tool's code, the host functions it calls, taking the result out.
    pub call: Duration,
    /// Of `call`, the time spent in the component's code (the host functions it calls
    /// included).
    pub in_wasm: Duration,
    /// Of `init` and `in_wasm`, the time spent in host functions (WASI) and in wasmtime's
    /// library calls (growing memory, function references, ...).
    pub host_calls: Duration,
    /// Dropping the store: resetting the instance's memory and tables for the next call, and
    /// giving its slot back.
    pub teardown: Duration,
}

impl CallPhases {
    /// What the host itself spent: store, instantiation and teardown, and the part of the
    /// call outside the component's code. Waiting for a slot is not counted.
    pub fn host(&self) -> Duration {
        self.store + self.instantiate + self.call.saturating_sub(self.in_wasm) + self.teardown
    }
}

/// Measures the time between the phases of a profiled call; does nothing (and costs nothing)
/// for the others.
struct Laps(Option<Instant>);

impl Laps {
    fn new(enabled: bool) -> Self {
        Self(enabled.then(Instant::now))
    }

    /// The time since the last lap.
    fn lap(&mut self) -> Duration {
        match &mut self.0 {
            Some(last) => {
                let now = Instant::now();
                let took = now - *last;
                *last = now;
                took
            }
            None => Duration::ZERO,
        }
    }
}

/// Calls `describe` with nothing granted.
pub(crate) async fn describe(
    runtime: &Runtime,
    pre: &ToolInstancePre,
    sandbox: &Sandbox,
) -> Result<Vec<wit::ToolSpec>, CallError> {
    let label = "describe";
    let body = async |instance: &ToolInstance, store: &mut Store<StoreState>| {
        instance.describe(store).await
    };
    let (result, _, stderr) = run(runtime, pre, sandbox, label, body, None, None).await;
    result.map_err(|error| with_stderr(error, &stderr))
}

/// Calls tool `tool` of the component with `arguments`, in `spare`'s instance when one is
/// ready; with `phases`, measures where the time went (in an instance made for the call). A
/// result is checked against `output`, the tool's output schema, if it has one.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call_tool(
    runtime: &Runtime,
    pre: &ToolInstancePre,
    sandbox: &Sandbox,
    spare: Option<&Arc<Spare>>,
    tool: &str,
    arguments: &str,
    context: &CallContext,
    output: Option<&jsonschema::Validator>,
    phases: Option<&mut CallPhases>,
) -> Result<ToolOutput, CallError> {
    let started = Instant::now();
    let wit_context = wit::CallContext {
        call_id: context.call_id.clone(),
        values: context.values.clone().into_iter().collect(),
        input_responses: context
            .input_responses
            .iter()
            .map(|(key, answer)| (key.clone(), answer.to_string()))
            .collect(),
        request_state: context.request_state.clone(),
    };
    let mut reports = ReportCounts::default();
    let body = async |instance: &ToolInstance, store: &mut Store<StoreState>| {
        store.data_mut().reports =
            CallReports::new(tool, context.observer.clone(), runtime.report_clock());
        let result = instance.call(store, tool, arguments, &wit_context).await;
        reports = store.data_mut().reports.finish();
        result
    };
    let (result, stdout, stderr) = run(runtime, pre, sandbox, tool, body, phases, spare).await;
    let duration = started.elapsed();
    log_output(tool, &stdout, &stderr);
    let result = match result {
        Ok(Ok(result)) => result,
        Ok(Err(wit::ToolError::InvalidArguments(message))) => {
            return Err(CallError::InvalidArguments {
                tool: tool.to_owned(),
                message,
            });
        }
        Ok(Err(wit::ToolError::Failed(message))) => {
            return Err(CallError::ToolFailed {
                tool: tool.to_owned(),
                message,
            });
        }
        Err(error) => return Err(with_stderr(error, &stderr)),
    };
    let checked = result::check(tool, result, &sandbox.limits, output);
    tracing::debug!(target: PHASE, ok = checked.is_ok(), "the result checked");
    let checked = checked?;
    Ok(ToolOutput {
        text: checked.text,
        structured: checked.structured,
        content: checked.content,
        input_required: checked.input_required,
        reports,
        stdout,
        stderr,
        duration,
    })
}

/// Waits for a free instance slot, instantiates the component in a fresh store (or takes
/// `spare`'s, and leaves the teardown to it) and runs `body` on it under the sandbox's limits;
/// the wall-clock timeout counts from the start of the wait. Returns the body's result (or
/// why there is none) and the captured stdout and stderr. A tool's own error (`tool-error`)
/// counts as a result here; a denied capability turns it into
/// [`CallError::CapabilityDenied`].
pub(super) async fn run<R>(
    runtime: &Runtime,
    pre: &ToolInstancePre,
    sandbox: &Sandbox,
    tool: &str,
    body: impl AsyncFnOnce(&ToolInstance, &mut Store<StoreState>) -> wasmtime::Result<R>,
    phases: Option<&mut CallPhases>,
    spare: Option<&Arc<Spare>>,
) -> (Result<R, CallError>, CapturedLog, CapturedLog)
where
    R: ExportValue,
{
    let limits = sandbox.limits;
    let mut laps = Laps::new(phases.is_some());
    let deadline = tokio::time::Instant::now().checked_add(limits.timeout);
    let unstarted = |error| (Err(error), CapturedLog::default(), CapturedLog::default());
    let Some(slot) = runtime.call_slot(deadline).await else {
        return unstarted(CallError::Timeout {
            tool: tool.to_owned(),
            kind: TimeLimit::Queued,
            limit: limits.timeout,
        });
    };
    let queued = laps.lap();
    // A profiled call measures the making of its instance: it takes no spare.
    let spare = spare.filter(|_| phases.is_none());
    let (mut store, ready) = match store_for(runtime, sandbox, spare, phases.is_some()) {
        Ok(taken) => taken,
        Err(source) => {
            return unstarted(CallError::Instantiate {
                tool: tool.to_owned(),
                source,
            });
        }
    };
    let setup = laps.lap();
    tracing::debug!(target: PHASE, spare = ready.is_some(), "instance slot and store ready");
    // How long instantiating took, and of it the component's own code (and its host calls).
    let mut instantiated = (Duration::ZERO, (Duration::ZERO, Duration::ZERO));
    let work = async {
        let instance = match ready {
            Some(instance) => instance,
            None => pre
                .instantiate_async(&mut store)
                .await
                .map_err(Failure::Start)?,
        };
        instantiated = (laps.lap(), store.data_mut().wasm_clock.take());
        tracing::debug!(target: PHASE, "calling the tool");
        body(&instance, &mut store).await.map_err(Failure::Run)
    };
    let outcome = within(deadline, work).await;
    let called = laps.lap();
    let state = store.data_mut();
    let (in_wasm, call_host) = state.wasm_clock.take();
    let stdout = state.stdout.take();
    let stderr = state.stderr.take();
    let result = judge(outcome, state, &limits, tool);
    tracing::debug!(target: PHASE, outcome = called_outcome(&result), "the call ended");
    release(spare, pre, store, slot);
    if let Some(phases) = phases {
        let (instantiate, (init, init_host)) = instantiated;
        *phases = CallPhases {
            queued,
            store: setup,
            instantiate: instantiate.saturating_sub(init),
            init,
            call: called,
            in_wasm,
            host_calls: init_host + call_host,
            teardown: laps.lap(),
        };
    }
    (result, stdout, stderr)
}

/// Ends a call: `spare` makes the next instance and drops the store and slot after, else
/// they are dropped now. Dropping the store resets the instance's memory and tables, and
/// frees its slot: only then may another call have it.
fn release(
    spare: Option<&Arc<Spare>>,
    pre: &ToolInstancePre,
    store: Store<StoreState>,
    slot: CallSlot,
) {
    match spare {
        Some(spare) => spare.retire(pre, store, slot),
        None => {
            drop(store);
            drop(slot);
        }
    }
}

/// A store for a call in `sandbox`, with its instance when `spare` has one ready; else a
/// fresh store, whose instance the call makes.
fn store_for(
    runtime: &Runtime,
    sandbox: &Sandbox,
    spare: Option<&Arc<Spare>>,
    profiled: bool,
) -> anyhow::Result<(Store<StoreState>, Option<ToolInstance>)> {
    match spare.and_then(|spare| spare.take()) {
        Some((store, instance)) => Ok((store, Some(instance))),
        None => Ok((runtime.new_store(sandbox, profiled)?, None)),
    }
}

/// The result of a call whose work ended in `outcome`: its value, or why there is none (the
/// wall clock ran out, a capability was denied, or the sandbox's verdict on a failure).
fn judge<R: ExportValue>(
    outcome: Result<Result<R, Failure>, tokio::time::error::Elapsed>,
    state: &StoreState,
    limits: &Limits,
    tool: &str,
) -> Result<R, CallError> {
    let tool = tool.to_owned();
    match outcome {
        Err(_elapsed) => Err(CallError::Timeout {
            tool,
            kind: TimeLimit::WallClock,
            limit: limits.timeout,
        }),
        Ok(Ok(value)) => match state.denials.first() {
            Some(denial) if value.is_tool_error() => Err(CallError::CapabilityDenied {
                tool,
                capability: denial.what,
                grant: denial.grant,
            }),
            _ => Ok(value),
        },
        Ok(Err(failure)) => Err(verdict(failure, state, limits, tool)),
    }
}

/// Whether a call's value is the tool reporting an error of its own.
pub(super) trait ExportValue {
    fn is_tool_error(&self) -> bool;
}

impl ExportValue for Vec<wit::ToolSpec> {
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl ExportValue for Result<VersionedOutcome, wit::ToolError> {
    fn is_tool_error(&self) -> bool {
        self.is_err()
    }
}

/// Adds the tail of the tool's stderr to a crash or exit report: for a Rust panic that is
/// where the panic message is, and a tool that exits usually says why there first.
fn with_stderr(error: CallError, log: &CapturedLog) -> CallError {
    if log.text.trim().is_empty() {
        return error;
    }
    let tail = Some(last_lines(&log.text, 3, 400));
    match error {
        CallError::Trap { tool, trap, .. } => CallError::Trap {
            tool,
            trap,
            stderr: tail,
        },
        CallError::Exited { tool, status, .. } => CallError::Exited {
            tool,
            status,
            stderr: tail,
        },
        other => other,
    }
}

fn last_lines(text: &str, lines: usize, max_chars: usize) -> String {
    let kept: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = kept[kept.len().saturating_sub(lines)..].join(" | ");
    let skip = tail.chars().count().saturating_sub(max_chars);
    tail.chars().skip(skip).collect()
}

fn log_output(tool: &str, stdout: &CapturedLog, stderr: &CapturedLog) {
    for (stream, log) in [("stdout", stdout), ("stderr", stderr)] {
        if log.is_empty() {
            continue;
        }
        tracing::info!(
            target: "toolhost::tool_output",
            tool,
            stream,
            dropped_bytes = log.dropped,
            "{}",
            log.text.trim_end()
        );
    }
}

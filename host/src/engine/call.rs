//! Running one export of a component in a fresh, limited store, and turning whatever goes
//! wrong into a [`CallError`].

use std::collections::BTreeMap;
use std::fmt;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use wasmtime::{CallHook, Store, UpdateDeadline};

use crate::bindings::{ToolboxPre, wit};
use crate::error::TimeLimit;
use crate::sandbox::{CapturedLog, Sandbox, StoreState};
use crate::spare::Spare;
use crate::{CallError, Runtime};

/// What the embedding application passes with a call. Delivered to the tool, never shown to
/// the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// An identifier for the call, unique within a run (the model's tool-call id when there
    /// is one).
    pub call_id: String,
    /// Key/value pairs such as a tenant or user id.
    pub values: BTreeMap<String, String>,
}

/// A successful call's result, with what the tool logged.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolOutput {
    /// The result text (JSON when the tool declares an output schema): what the model reads.
    pub text: String,
    /// The result as JSON, when the source gave it as such (an MCP server's
    /// `structuredContent`); `text` then holds the same JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
    /// Images the tool returned (an MCP server's image content), sent to models that accept
    /// images in tool results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
    /// What the tool wrote to stdout.
    pub stdout: CapturedLog,
    /// What the tool wrote to stderr.
    pub stderr: CapturedLog,
    /// How long the call took, instantiation included.
    #[serde(
        rename = "duration_ms",
        serialize_with = "crate::report::serialize_millis"
    )]
    pub duration: Duration,
}

impl ToolOutput {
    /// A result with `text` and nothing logged.
    pub fn text(text: impl Into<String>, duration: Duration) -> Self {
        Self {
            text: text.into(),
            structured: None,
            images: Vec::new(),
            stdout: CapturedLog::default(),
            stderr: CapturedLog::default(),
            duration,
        }
    }
}

/// An image in a tool's result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolImage {
    /// Its media type: `image/png`, `image/jpeg`, ...
    pub mime_type: String,
    /// The image bytes, base64-encoded (as MCP and the model APIs carry them).
    pub data: String,
}

impl ToolImage {
    /// How many bytes the image has, decoded (without decoding it).
    pub fn size(&self) -> usize {
        let padding = self.data.bytes().rev().take_while(|&b| b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(padding.min(2))
    }
}

/// Where the time of one call went, phase by phase, as
/// [`LoadedComponent::call_profiled`](crate::LoadedComponent::call_profiled) measures it. The
/// host's own cost is `store + instantiate + teardown` (and the host side of `call`); `init`
/// and `in_wasm` are the component's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallPhases {
    /// Waiting for a free instance slot, when
    /// [`RuntimeConfig::max_concurrent_calls`](crate::RuntimeConfig::max_concurrent_calls)
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

/// The time a profiled call's store spends in the component's code, told by the store's call
/// hook: from each entry into WebAssembly to the matching return, the host functions and
/// wasmtime library calls made meanwhile included (and also counted apart).
#[derive(Debug, Default)]
pub(crate) struct WasmClock {
    depth: u32,
    entered: Option<Instant>,
    in_host_since: Option<Instant>,
    total: Duration,
    host: Duration,
}

impl WasmClock {
    fn on(&mut self, hook: CallHook) {
        match hook {
            CallHook::CallingWasm => {
                if self.depth == 0 {
                    self.entered = Some(Instant::now());
                }
                self.depth += 1;
            }
            CallHook::ReturningFromWasm => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0
                    && let Some(entered) = self.entered.take()
                {
                    self.total += entered.elapsed();
                }
            }
            CallHook::CallingHost => {
                if self.depth == 1 {
                    self.in_host_since = Some(Instant::now());
                }
            }
            CallHook::ReturningFromHost => {
                if let Some(since) = self.in_host_since.take() {
                    self.host += since.elapsed();
                }
            }
        }
    }

    /// The time in the component's code, and of it in host functions, since the last take.
    fn take(&mut self) -> (Duration, Duration) {
        (
            std::mem::take(&mut self.total),
            std::mem::take(&mut self.host),
        )
    }
}

/// The error a store's epoch callback raises when the call has used up its CPU time.
#[derive(Debug)]
struct CpuTimeExceeded;

impl fmt::Display for CpuTimeExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CPU time budget exhausted")
    }
}

impl std::error::Error for CpuTimeExceeded {}

/// A fresh store for one call in `sandbox`: memory limiter on, and a CPU budget counted in
/// epoch ticks; each tick of computing also yields to other tasks, which is what lets the
/// wall-clock timeout and concurrent calls proceed while a tool spins.
pub(crate) fn new_store(
    runtime: &Runtime,
    sandbox: &Sandbox,
    profiled: bool,
) -> anyhow::Result<Store<StoreState>> {
    let cpu_ticks = runtime.ticks_for(sandbox.limits.cpu_time);
    let state = sandbox.store_state(cpu_ticks, runtime.file_io_on_call_thread())?;
    let mut store = Store::new(runtime.engine(), state);
    if profiled {
        store.call_hook(|mut context, hook| {
            context.data_mut().wasm_clock.on(hook);
            Ok(())
        });
    }
    store.limiter(|state| &mut state.limiter);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut context| {
        let state = context.data_mut();
        if state.cpu_ticks_left == 0 {
            return Err(CpuTimeExceeded.into());
        }
        state.cpu_ticks_left -= 1;
        Ok(UpdateDeadline::Yield(1))
    });
    Ok(store)
}

/// Calls `describe` with nothing granted.
pub(crate) async fn describe(
    runtime: &Runtime,
    pre: &ToolboxPre<StoreState>,
    sandbox: &Sandbox,
) -> Result<Vec<wit::ToolSpec>, CallError> {
    let label = "describe";
    let body = async |instance: &crate::bindings::Toolbox, store: &mut Store<StoreState>| {
        instance.toolhost_tool_tools().call_describe(store).await
    };
    let (result, _, stderr) = run(runtime, pre, sandbox, label, body, None, None).await;
    result.map_err(|error| with_stderr(error, &stderr))
}

/// Calls tool `tool` of the component with `arguments`, in `spare`'s instance when one is
/// ready; with `phases`, measures where the time went (in an instance made for the call).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call_tool(
    runtime: &Runtime,
    pre: &ToolboxPre<StoreState>,
    sandbox: &Sandbox,
    spare: &Arc<Spare>,
    tool: &str,
    arguments: &str,
    context: &CallContext,
    phases: Option<&mut CallPhases>,
) -> Result<ToolOutput, CallError> {
    let started = Instant::now();
    let wit_context = wit::CallContext {
        call_id: context.call_id.clone(),
        values: context.values.clone().into_iter().collect(),
    };
    let body = async |instance: &crate::bindings::Toolbox, store: &mut Store<StoreState>| {
        instance
            .toolhost_tool_tools()
            .call_call(store, tool, arguments, &wit_context)
            .await
    };
    let (result, stdout, stderr) =
        run(runtime, pre, sandbox, tool, body, phases, Some(spare)).await;
    let duration = started.elapsed();
    log_output(tool, &stdout, &stderr);
    let text = match result {
        Ok(Ok(text)) => text,
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
    if text.len() > sandbox.limits.max_result {
        return Err(CallError::ResultTooLarge {
            tool: tool.to_owned(),
            size: text.len(),
            limit: sandbox.limits.max_result,
        });
    }
    Ok(ToolOutput {
        text,
        structured: None,
        images: Vec::new(),
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
async fn run<R>(
    runtime: &Runtime,
    pre: &ToolboxPre<StoreState>,
    sandbox: &Sandbox,
    tool: &str,
    body: impl AsyncFnOnce(&crate::bindings::Toolbox, &mut Store<StoreState>) -> wasmtime::Result<R>,
    phases: Option<&mut CallPhases>,
    spare: Option<&Arc<Spare>>,
) -> (Result<R, CallError>, CapturedLog, CapturedLog)
where
    R: ToolResult,
{
    let limits = sandbox.limits;
    let mut laps = Laps::new(phases.is_some());
    let deadline = tokio::time::Instant::now().checked_add(limits.timeout);
    let Some(slot) = runtime.call_slot(deadline).await else {
        let error = CallError::Timeout {
            tool: tool.to_owned(),
            kind: TimeLimit::Queued,
            limit: limits.timeout,
        };
        return (Err(error), CapturedLog::default(), CapturedLog::default());
    };
    let queued = laps.lap();
    // A profiled call measures the making of its instance: it takes no spare.
    let spare = spare.filter(|_| phases.is_none());
    let (mut store, ready) = match spare.and_then(|spare| spare.take()) {
        Some((store, instance)) => (store, Some(instance)),
        None => match new_store(runtime, sandbox, phases.is_some()) {
            Ok(store) => (store, None),
            Err(source) => {
                let error = CallError::Instantiate {
                    tool: tool.to_owned(),
                    source,
                };
                return (Err(error), CapturedLog::default(), CapturedLog::default());
            }
        },
    };
    let setup = laps.lap();
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
        body(&instance, &mut store).await.map_err(Failure::Run)
    };
    let outcome = within(deadline, work).await;
    let called = laps.lap();
    let state = store.data_mut();
    let (in_wasm, call_host) = state.wasm_clock.take();
    let stdout = state.stdout.take();
    let stderr = state.stderr.take();
    let tool = tool.to_owned();
    let result = match outcome {
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
        Ok(Err(failure)) => Err(classify(failure, state, &limits, tool)),
    };
    // Dropping the store resets the instance's memory and tables, and frees its slot: only
    // then may another call have it.
    match spare {
        Some(spare) => spare.retire(pre, store, slot),
        None => {
            drop(store);
            drop(slot);
        }
    }
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

/// `work`, stopped at `deadline`. The timer is set up only if `work` does not finish at its
/// first poll, as a small tool's call does.
async fn within<F: Future>(
    deadline: Option<tokio::time::Instant>,
    work: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let mut work = pin!(work);
    if let Poll::Ready(output) = poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await {
        return Ok(output);
    }
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, work).await,
        None => Ok(work.await),
    }
}

/// Whether a call's value is the tool reporting an error of its own.
trait ToolResult {
    fn is_tool_error(&self) -> bool;
}

impl ToolResult for Vec<wit::ToolSpec> {
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl ToolResult for Result<String, wit::ToolError> {
    fn is_tool_error(&self) -> bool {
        self.is_err()
    }
}

enum Failure {
    Start(wasmtime::Error),
    Run(wasmtime::Error),
}

fn classify(
    failure: Failure,
    state: &StoreState,
    limits: &crate::Limits,
    tool: String,
) -> CallError {
    if state.limiter.exceeded {
        return CallError::MemoryLimit {
            tool,
            limit: limits.memory,
        };
    }
    let error = match failure {
        Failure::Start(error) if error.is::<wasmtime::PoolConcurrencyLimitError>() => {
            return CallError::Instantiate {
                tool,
                source: anyhow::Error::from(error).context(
                    "the instance pool has no room left for this component's instances (core \
                     instances, memories or tables); raise RuntimeConfig::max_concurrent_calls, \
                     which the pool's room grows with",
                ),
            };
        }
        Failure::Start(error) => {
            return CallError::Instantiate {
                tool,
                source: error.into(),
            };
        }
        Failure::Run(error) => error,
    };
    if error.is::<CpuTimeExceeded>() {
        return CallError::Timeout {
            tool,
            kind: TimeLimit::CpuTime,
            limit: limits.cpu_time,
        };
    }
    if let Some(denial) = state.denials.first() {
        return CallError::CapabilityDenied {
            tool,
            capability: denial.what,
            grant: denial.grant,
        };
    }
    let trap = match error.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => format!("wasm trap: {trap}"),
        None => format!("{error:#}"),
    };
    CallError::Trap {
        tool,
        trap,
        stderr: None,
    }
}

/// Adds the tail of the tool's stderr to a crash report: for a Rust panic that is where the
/// panic message is.
fn with_stderr(error: CallError, log: &CapturedLog) -> CallError {
    match error {
        CallError::Trap { tool, trap, .. } if !log.text.trim().is_empty() => CallError::Trap {
            tool,
            trap,
            stderr: Some(last_lines(&log.text, 3, 400)),
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

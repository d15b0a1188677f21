//! Running one export of a component in a fresh, limited store, and turning whatever goes
//! wrong into a [`CallError`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use wasmtime::{Store, UpdateDeadline};

use crate::bindings::{ToolboxPre, wit};
use crate::error::TimeLimit;
use crate::sandbox::{CapturedLog, Sandbox, StoreState};
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
fn new_store(runtime: &Runtime, sandbox: &Sandbox) -> anyhow::Result<Store<StoreState>> {
    let state = sandbox.store_state(runtime.ticks_for(sandbox.limits.cpu_time))?;
    let mut store = Store::new(runtime.engine(), state);
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
    let (result, _, stderr) = run(runtime, pre, sandbox, label, async |instance, store| {
        instance.toolhost_tool_tools().call_describe(store).await
    })
    .await;
    result.map_err(|error| with_stderr(error, &stderr))
}

/// Calls tool `tool` of the component with `arguments`.
pub(crate) async fn call_tool(
    runtime: &Runtime,
    pre: &ToolboxPre<StoreState>,
    sandbox: &Sandbox,
    tool: &str,
    arguments: &str,
    context: &CallContext,
) -> Result<ToolOutput, CallError> {
    let started = Instant::now();
    let wit_context = wit::CallContext {
        call_id: context.call_id.clone(),
        values: context.values.clone().into_iter().collect(),
    };
    let (result, stdout, stderr) = run(runtime, pre, sandbox, tool, async |instance, store| {
        instance
            .toolhost_tool_tools()
            .call_call(store, tool, arguments, &wit_context)
            .await
    })
    .await;
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

/// Instantiates the component in a fresh store and runs `body` on it under the sandbox's
/// limits. Returns the body's result (or why there is none) and the captured stdout and
/// stderr. A tool's own error (`tool-error`) counts as a result here; a denied capability
/// turns it into [`CallError::CapabilityDenied`].
async fn run<R>(
    runtime: &Runtime,
    pre: &ToolboxPre<StoreState>,
    sandbox: &Sandbox,
    tool: &str,
    body: impl AsyncFnOnce(&crate::bindings::Toolbox, &mut Store<StoreState>) -> wasmtime::Result<R>,
) -> (Result<R, CallError>, CapturedLog, CapturedLog)
where
    R: ToolResult,
{
    let mut store = match new_store(runtime, sandbox) {
        Ok(store) => store,
        Err(source) => {
            let error = CallError::Instantiate {
                tool: tool.to_owned(),
                source,
            };
            return (Err(error), CapturedLog::default(), CapturedLog::default());
        }
    };
    let limits = sandbox.limits;
    let outcome = tokio::time::timeout(limits.timeout, async {
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(Failure::Start)?;
        body(&instance, &mut store).await.map_err(Failure::Run)
    })
    .await;
    let state = store.data();
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
    (result, stdout, stderr)
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
                    "every instance slot is in use: raise RuntimeConfig::max_concurrent_calls",
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

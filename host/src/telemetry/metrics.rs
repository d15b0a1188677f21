//! The instruments the host records on, with their names and attributes: the OpenTelemetry
//! semantic conventions for MCP (`mcp.server.operation.duration`) and for generative AI
//! (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`), and toolhost's own
//! (`toolhost.*`).
//!
//! No attribute takes its value from a caller unchecked: a tool name is one of the catalog's
//! (any other is [`UNKNOWN`]), a method one MCP defines (any other is [`UNKNOWN`]), an outcome
//! one of [`outcome`]'s; so a caller cannot make the number of series grow.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
#[cfg(feature = "mcp-server")]
use opentelemetry::metrics::Gauge;
use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};

use crate::error::{CallError, TimeLimit};

/// The name the host's meter (its instrumentation scope) has.
pub const METER: &str = "toolhost";

/// The value of a name attribute when the name is not one the host knows.
pub const UNKNOWN: &str = "_unknown";

/// Attribute keys.
pub mod key {
    /// The MCP method of a request (`tools/call`).
    pub const MCP_METHOD: &str = "mcp.method.name";
    /// The tool called (`gen_ai.tool.name`, as the GenAI conventions name it).
    pub const TOOL: &str = "gen_ai.tool.name";
    /// How a tool call ended: one of [`outcome`](super::outcome)'s values.
    pub const OUTCOME: &str = "toolhost.outcome";
    /// What went wrong, when something did (the conventions' `error.type`).
    pub const ERROR_TYPE: &str = "error.type";
    /// The GenAI operation (`chat`).
    pub const GEN_AI_OPERATION: &str = "gen_ai.operation.name";
    /// The model provider (`openai`, `anthropic`).
    pub const GEN_AI_PROVIDER: &str = "gen_ai.provider.name";
    /// The model asked for.
    pub const GEN_AI_MODEL: &str = "gen_ai.request.model";
    /// `input` or `output` tokens.
    pub const TOKEN_TYPE: &str = "gen_ai.token.type";
    /// Where a component's compiled code came from: `cache` or `compiled`.
    pub const COMPILE_SOURCE: &str = "toolhost.compile.source";
    /// What became of an approval: `asked`, `approved`, `denied`.
    pub const APPROVAL: &str = "toolhost.approval.decision";
    /// Why a request was refused: `rate_limit`, `calls_per_caller`, `too_large`, `read_timeout`, `sessions`, `connections`.
    pub const REFUSAL: &str = "toolhost.refusal.reason";
}

/// The buckets the MCP conventions give `mcp.server.operation.duration`, in seconds.
#[cfg(feature = "mcp-server")]
const MCP_DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The buckets the GenAI conventions give `gen_ai.client.operation.duration`, in seconds.
const GEN_AI_DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The buckets the GenAI conventions give `gen_ai.client.token.usage`.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The buckets of `toolhost.tool.call.duration`, in seconds: a component's call takes from
/// a fraction of a millisecond (a warm Rust tool) to its timeout.
const TOOL_DURATION_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Every instrument the host records on.
pub(crate) struct Metrics {
    /// `mcp.server.operation.duration`: each MCP request served, to its answer's end.
    #[cfg(feature = "mcp-server")]
    pub(crate) mcp_operation: Histogram<f64>,
    /// `gen_ai.client.operation.duration`: each model request.
    pub(crate) gen_ai_operation: Histogram<f64>,
    /// `gen_ai.client.token.usage`: the tokens of each model request, in and out.
    pub(crate) gen_ai_tokens: Histogram<u64>,
    /// `toolhost.tool.calls`: tool calls by tool and outcome.
    pub(crate) tool_calls: Counter<u64>,
    /// `toolhost.tool.call.duration`: tool calls' durations by tool and outcome.
    pub(crate) tool_call_duration: Histogram<f64>,
    /// `toolhost.instances.in_use`: instance slots held by calls.
    pub(crate) instances_in_use: UpDownCounter<i64>,
    /// `toolhost.instances.spare`: instances made ahead, waiting for a call.
    pub(crate) instances_spare: UpDownCounter<i64>,
    /// `toolhost.component.loads`: components' compiled code, from the cache or compiled.
    pub(crate) component_loads: Counter<u64>,
    /// `toolhost.approvals`: approvals asked and answered.
    pub(crate) approvals: Counter<u64>,
    /// `toolhost.asks.pending`: calls waiting for an answer to what they asked.
    #[cfg(feature = "mcp-server")]
    pub(crate) asks_pending: UpDownCounter<i64>,
    /// `toolhost.mcp.sessions`: MCP sessions open.
    #[cfg(feature = "mcp-server")]
    pub(crate) sessions: Gauge<u64>,
    /// `toolhost.http.refusals`: requests refused by a limit.
    #[cfg(feature = "mcp-server")]
    pub(crate) refusals: Counter<u64>,
}

/// The host's instruments, made from the global meter provider at the first call.
pub(crate) fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| Metrics::new(&opentelemetry::global::meter(METER)))
}

impl Metrics {
    fn new(meter: &Meter) -> Self {
        Self {
            #[cfg(feature = "mcp-server")]
            mcp_operation: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_description("The duration of an MCP request served, to its answer's end")
                .with_unit("s")
                .with_boundaries(MCP_DURATION_BUCKETS.to_vec())
                .build(),
            gen_ai_operation: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_description("The duration of a request to a model")
                .with_unit("s")
                .with_boundaries(GEN_AI_DURATION_BUCKETS.to_vec())
                .build(),
            gen_ai_tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_description("The tokens of a request to a model, input and output")
                .with_unit("{token}")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            tool_calls: meter
                .u64_counter("toolhost.tool.calls")
                .with_description("Tool calls, by tool and outcome")
                .with_unit("{call}")
                .build(),
            tool_call_duration: meter
                .f64_histogram("toolhost.tool.call.duration")
                .with_description("The duration of a tool call, by tool and outcome")
                .with_unit("s")
                .with_boundaries(TOOL_DURATION_BUCKETS.to_vec())
                .build(),
            instances_in_use: meter
                .i64_up_down_counter("toolhost.instances.in_use")
                .with_description("Instance slots held by calls")
                .with_unit("{instance}")
                .build(),
            instances_spare: meter
                .i64_up_down_counter("toolhost.instances.spare")
                .with_description("Instances made ahead of a call, waiting for one")
                .with_unit("{instance}")
                .build(),
            component_loads: meter
                .u64_counter("toolhost.component.loads")
                .with_description("Components' compiled code taken from the cache or compiled")
                .with_unit("{component}")
                .build(),
            approvals: meter
                .u64_counter("toolhost.approvals")
                .with_description("Approvals asked, approved and denied")
                .with_unit("{approval}")
                .build(),
            #[cfg(feature = "mcp-server")]
            asks_pending: meter
                .i64_up_down_counter("toolhost.asks.pending")
                .with_description("Calls waiting for the answer to what they asked")
                .with_unit("{call}")
                .build(),
            #[cfg(feature = "mcp-server")]
            sessions: meter
                .u64_gauge("toolhost.mcp.sessions")
                .with_description("MCP sessions open")
                .with_unit("{session}")
                .build(),
            #[cfg(feature = "mcp-server")]
            refusals: meter
                .u64_counter("toolhost.http.refusals")
                .with_description("Requests refused by a limit, by reason")
                .with_unit("{request}")
                .build(),
        }
    }

    /// Records a tool call that ended with `result` after `took`, under `tool`: a name from
    /// the catalog, or [`UNKNOWN`].
    pub(crate) fn tool_call<T>(&self, tool: &str, result: &Result<T, CallError>, took: Duration) {
        let attributes = [
            KeyValue::new(key::TOOL, tool.to_owned()),
            KeyValue::new(key::OUTCOME, outcome(result)),
        ];
        self.tool_calls.add(1, &attributes);
        self.tool_call_duration
            .record(took.as_secs_f64(), &attributes);
    }

    /// Records a request refused by a limit: `reason` is one of [`key::REFUSAL`]'s values.
    #[cfg(feature = "mcp-server")]
    pub(crate) fn refused(&self, reason: &'static str) {
        self.refusals.add(1, &[KeyValue::new(key::REFUSAL, reason)]);
    }
}

/// How a call ended, as the `toolhost.outcome` attribute: `ok`, `cpu_time` (its CPU budget),
/// `timeout` (its wall clock), or the [`ErrorKind`](crate::error::ErrorKind)'s name
/// (`memory_limit`, `capability_denied`, `trap`, `invalid_arguments`, ...).
pub fn outcome<T>(result: &Result<T, CallError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(CallError::Timeout {
            kind: TimeLimit::CpuTime,
            ..
        }) => "cpu_time",
        Err(error) => error.kind().as_str(),
    }
}

/// A slot of something counted while it is held: adds one to `counter` now and takes it
/// away when dropped.
pub(crate) struct Held {
    counter: &'static UpDownCounter<i64>,
}

impl Held {
    pub(crate) fn new(counter: &'static UpDownCounter<i64>) -> Self {
        counter.add(1, &[]);
        Self { counter }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.counter.add(-1, &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_tell_the_cpu_budget_from_the_wall_clock() {
        let timeout = |kind| -> Result<(), CallError> {
            Err(CallError::Timeout {
                tool: "t".to_owned(),
                kind,
                limit: Duration::from_secs(1),
            })
        };
        assert_eq!(outcome(&timeout(TimeLimit::CpuTime)), "cpu_time");
        assert_eq!(outcome(&timeout(TimeLimit::WallClock)), "timeout");
        assert_eq!(outcome(&timeout(TimeLimit::Queued)), "timeout");
        let memory: Result<(), CallError> = Err(CallError::MemoryLimit {
            tool: "t".to_owned(),
            limit: 1 << 20,
        });
        assert_eq!(outcome(&memory), "memory_limit");
        assert_eq!(outcome(&Ok::<(), CallError>(())), "ok");
    }
}

//! Why a tool call did not return a result ([`CallError`]), and its kinds.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which limit a call ran into when it took too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeLimit {
    /// The tool computed for longer than its CPU time budget.
    CpuTime,
    /// The call took longer than its wall-clock timeout (waiting included).
    WallClock,
    /// The call's wall-clock timeout ran out while it waited for a free instance slot: it
    /// never started, because `RuntimeConfig::max_concurrent_calls` calls were running.
    Queued,
}

impl TimeLimit {
    fn describe(self) -> &'static str {
        match self {
            Self::CpuTime => "CPU time",
            Self::WallClock => "wall-clock",
            Self::Queued => "wall-clock",
        }
    }

    /// Which setting to raise.
    fn advice(self) -> &'static str {
        match self {
            Self::CpuTime => "raise `cpu_time` in the manifest's limits if it needs more",
            Self::WallClock => "raise `timeout` in the manifest's limits if it needs more",
            Self::Queued => {
                "it waited all that time for a free instance slot (every one was busy with other \
                 calls) and never started; raise RuntimeConfig::max_concurrent_calls, or \
                 `timeout` in the manifest's limits"
            }
        }
    }
}

/// The kind of a [`CallError`], for callers that branch on it and for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// No loaded tool has that name.
    UnknownTool,
    /// The arguments do not fit the tool's schema, or the tool rejected them.
    InvalidArguments,
    /// The tool ran and reported a failure.
    ToolFailed,
    /// The tool used something it was not granted.
    CapabilityDenied,
    /// The call ran out of CPU or wall-clock time.
    Timeout,
    /// The tool used more memory than allowed.
    MemoryLimit,
    /// The result was larger than allowed.
    ResultTooLarge,
    /// The tool crashed.
    Trap,
    /// The tool called `exit` instead of returning a result.
    Exited,
    /// The tool could not be started.
    Instantiate,
    /// The call was cancelled before it finished.
    Cancelled,
    /// The source of the tool (an MCP server, say) failed or is unreachable.
    Unavailable,
    /// The tool asked for input that whoever ran it cannot give.
    InputRequired,
}

impl ErrorKind {
    /// The kind's stable name: `unknown_tool`, `invalid_arguments`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::ToolFailed => "tool_failed",
            Self::CapabilityDenied => "capability_denied",
            Self::Timeout => "timeout",
            Self::MemoryLimit => "memory_limit",
            Self::ResultTooLarge => "result_too_large",
            Self::Trap => "trap",
            Self::Exited => "exited",
            Self::Instantiate => "instantiate",
            Self::Cancelled => "cancelled",
            Self::Unavailable => "unavailable",
            Self::InputRequired => "input_required",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a tool call did not return a result.
///
/// The host keeps running after every one of these: each call has its own instance, and a
/// failed instance is thrown away. `Display` is the operator's text;
/// [`model_message`](Self::model_message) is the model's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No loaded tool has that name.
    #[error("there is no tool `{name}`; the available tools are: {}", available.join(", "))]
    UnknownTool {
        /// The name that was asked for.
        name: String,
        /// The names of the tools that exist.
        available: Vec<String>,
    },

    /// The arguments do not fit the tool's schema, or the tool rejected them.
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong with them.
        message: String,
    },

    /// The tool ran and reported a failure.
    #[error("`{tool}` failed: {message}")]
    ToolFailed {
        /// The tool.
        tool: String,
        /// The tool's own message.
        message: String,
    },

    /// The tool tried to use something it was not granted.
    #[error("`{tool}` was denied {capability}; if it should have it, grant it: {grant}")]
    CapabilityDenied {
        /// The tool.
        tool: String,
        /// What it tried to use, such as `HTTP access to example.com:443`.
        capability: String,
        /// The grant that would allow it, in the manifest and on the command line.
        grant: String,
    },

    /// The call ran out of time.
    #[error(
        "`{tool}` ran out of time: its {} limit is {}; {}",
        kind.describe(),
        humantime::format_duration(*limit),
        kind.advice()
    )]
    Timeout {
        /// The tool.
        tool: String,
        /// Which limit.
        kind: TimeLimit,
        /// The limit's value.
        limit: Duration,
    },

    /// The tool tried to use more memory than its limit.
    #[error(
        "`{tool}` exceeded its memory limit of {}; raise `memory` in the manifest's limits if it \
         needs more",
        crate::units::format_bytes(*limit)
    )]
    MemoryLimit {
        /// The tool.
        tool: String,
        /// The limit in bytes.
        limit: u64,
    },

    /// The tool's result is larger than allowed.
    #[error(
        "`{tool}` returned {} of result, over its limit of {}; raise `max_result` in the \
         manifest's limits if that is expected",
        crate::units::format_bytes(*size as u64),
        crate::units::format_bytes(*limit as u64)
    )]
    ResultTooLarge {
        /// The tool.
        tool: String,
        /// The size of the result in bytes (at least this much, when the source stopped
        /// reading).
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },

    /// The tool crashed (a WebAssembly trap: a panic, an out-of-bounds access, ...).
    #[error("`{tool}` crashed: {trap}{}", stderr.as_deref().map(|s| format!("; its stderr ends: {s}")).unwrap_or_default())]
    Trap {
        /// The tool.
        tool: String,
        /// The trap, as wasmtime reports it.
        trap: String,
        /// The last lines the tool wrote to stderr (for a Rust panic, the panic message).
        stderr: Option<String>,
    },

    /// The tool ended its instance by calling `exit` (WASI's `exit`, such as Rust's
    /// `std::process::exit` or Python's `sys.exit`) instead of returning a result or an error.
    #[error(
        "`{tool}` exited with status {status} instead of returning a result{}",
        stderr.as_deref().map(|s| format!("; its stderr ends: {s}")).unwrap_or_default()
    )]
    Exited {
        /// The tool.
        tool: String,
        /// The status it exited with.
        status: i32,
        /// The last lines the tool wrote to stderr (often why it exited).
        stderr: Option<String>,
    },

    /// The component could not be instantiated for the call.
    #[error("`{tool}` could not be started")]
    Instantiate {
        /// The tool.
        tool: String,
        /// Wasmtime's reason.
        #[source]
        source: anyhow::Error,
    },

    /// The call was cancelled (the client went away, or the run was stopped).
    #[error("the call of `{tool}` was cancelled")]
    Cancelled {
        /// The tool.
        tool: String,
    },

    /// The tool asked for input before it can finish (tool contract 0.2), and whoever ran
    /// the call cannot ask for it.
    #[error(
        "`{tool}` asks for input before it can finish ({}), which {asker} cannot give",
        methods.join(", ")
    )]
    InputRequired {
        /// The tool.
        tool: String,
        /// What it asks with (`elicitation/create`, `sampling/createMessage`, `roots/list`).
        methods: Vec<String>,
        /// Who ran the call (`host run`, this MCP client, ...).
        asker: String,
    },

    /// The tool's source (an MCP server, say) failed or could not be reached.
    #[error("`{tool}` is unavailable: {message}")]
    Unavailable {
        /// The tool.
        tool: String,
        /// What happened to its source, for the operator.
        message: String,
        /// The cause, when there is one.
        #[source]
        source: Option<anyhow::Error>,
    },
}

/// The most of a tool's stderr the model is shown.
const MODEL_STDERR_CHARS: usize = 200;

impl CallError {
    /// The kind of error, to branch on.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnknownTool { .. } => ErrorKind::UnknownTool,
            Self::InvalidArguments { .. } => ErrorKind::InvalidArguments,
            Self::ToolFailed { .. } => ErrorKind::ToolFailed,
            Self::CapabilityDenied { .. } => ErrorKind::CapabilityDenied,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::MemoryLimit { .. } => ErrorKind::MemoryLimit,
            Self::ResultTooLarge { .. } => ErrorKind::ResultTooLarge,
            Self::Trap { .. } => ErrorKind::Trap,
            Self::Exited { .. } => ErrorKind::Exited,
            Self::Instantiate { .. } => ErrorKind::Instantiate,
            Self::Cancelled { .. } => ErrorKind::Cancelled,
            Self::Unavailable { .. } => ErrorKind::Unavailable,
            Self::InputRequired { .. } => ErrorKind::InputRequired,
        }
    }

    /// The tool the call was for.
    pub fn tool(&self) -> &str {
        match self {
            Self::UnknownTool { name: tool, .. }
            | Self::InvalidArguments { tool, .. }
            | Self::ToolFailed { tool, .. }
            | Self::CapabilityDenied { tool, .. }
            | Self::Timeout { tool, .. }
            | Self::MemoryLimit { tool, .. }
            | Self::ResultTooLarge { tool, .. }
            | Self::Trap { tool, .. }
            | Self::Exited { tool, .. }
            | Self::Instantiate { tool, .. }
            | Self::Cancelled { tool }
            | Self::InputRequired { tool, .. }
            | Self::Unavailable { tool, .. } => tool,
        }
    }

    /// Renames the tool the error is about (a source knows its tools by their own names; the
    /// model and the operator by the names the toolbox gave them).
    pub(crate) fn with_tool(mut self, name: &str) -> Self {
        match &mut self {
            Self::UnknownTool { name: tool, .. }
            | Self::InvalidArguments { tool, .. }
            | Self::ToolFailed { tool, .. }
            | Self::CapabilityDenied { tool, .. }
            | Self::Timeout { tool, .. }
            | Self::MemoryLimit { tool, .. }
            | Self::ResultTooLarge { tool, .. }
            | Self::Trap { tool, .. }
            | Self::Exited { tool, .. }
            | Self::Instantiate { tool, .. }
            | Self::Cancelled { tool }
            | Self::InputRequired { tool, .. }
            | Self::Unavailable { tool, .. } => name.clone_into(tool),
        }
        self
    }

    /// A call of `tool` that asked for input (`asked`) which `asker` cannot give.
    pub(crate) fn input_required(
        tool: &str,
        asked: &crate::content::InputRequired,
        asker: &str,
    ) -> Self {
        Self::InputRequired {
            tool: tool.to_owned(),
            methods: asked.requests.values().map(|r| r.method.clone()).collect(),
            asker: asker.to_owned(),
        }
    }

    /// What the model is told: short, with no grant syntax and no host paths. It says what the
    /// model can do about it where it can do something (fix the arguments, call another tool).
    pub fn model_message(&self) -> String {
        match self {
            Self::UnknownTool { name, available } => format!(
                "there is no tool `{name}`; call one of: {}",
                available.join(", ")
            ),
            Self::InvalidArguments { message, .. } => {
                format!("invalid arguments: {message}; call the tool again with fixed arguments")
            }
            Self::ToolFailed { message, .. } => format!("the tool failed: {message}"),
            Self::CapabilityDenied { capability, .. } => format!(
                "the tool is not allowed {capability}; do not retry, tell the user it is not \
                 permitted"
            ),
            Self::Timeout { kind, limit, .. } => format!(
                "the tool ran out of time ({} limit {})",
                kind.describe(),
                humantime::format_duration(*limit)
            ),
            Self::MemoryLimit { limit, .. } => format!(
                "the tool ran out of memory (limit {})",
                crate::units::format_bytes(*limit)
            ),
            Self::ResultTooLarge { size, limit, .. } => format!(
                "the tool's result was too large ({}, limit {}); ask for less",
                crate::units::format_bytes(*size as u64),
                crate::units::format_bytes(*limit as u64)
            ),
            Self::Trap { stderr, .. } => match stderr {
                Some(stderr) => format!("the tool crashed: {}", excerpt(stderr)),
                None => "the tool crashed".to_owned(),
            },
            Self::Exited { status, stderr, .. } => match stderr {
                Some(stderr) => format!(
                    "the tool exited with status {status} without a result: {}",
                    excerpt(stderr)
                ),
                None => format!("the tool exited with status {status} without a result"),
            },
            Self::Instantiate { .. } => "the tool could not be started".to_owned(),
            Self::Cancelled { .. } => "the call was cancelled".to_owned(),
            Self::Unavailable { .. } => "the tool is unavailable right now".to_owned(),
            Self::InputRequired { .. } => {
                "the tool needs input from the user that cannot be asked for here; tell the \
                 user"
                    .to_owned()
            }
        }
    }
}

/// The end of `text`, at most [`MODEL_STDERR_CHARS`] characters, starting at a word.
fn excerpt(text: &str) -> String {
    let count = text.chars().count();
    if count <= MODEL_STDERR_CHARS {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - MODEL_STDERR_CHARS).collect();
    match tail.split_once(' ') {
        Some((_, rest)) if !rest.is_empty() => format!("...{rest}"),
        _ => format!("...{tail}"),
    }
}

/// `error` and its causes, joined with `: `.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_model_never_sees_grant_syntax() {
        let error = CallError::CapabilityDenied {
            tool: "fetch".into(),
            capability: "HTTP access to 127.0.0.1:9".into(),
            grant: "grants.http = [\"127.0.0.1:9\"] in the manifest, or --allow-http 127.0.0.1:9"
                .into(),
        };
        assert!(error.to_string().contains("grants.http"), "{error}");
        let model = error.model_message();
        assert!(model.contains("HTTP access to 127.0.0.1:9"), "{model}");
        assert!(
            !model.contains("grants") && !model.contains("--allow-http"),
            "{model}"
        );
    }

    #[test]
    fn the_model_sees_a_bounded_excerpt_of_a_crash() {
        let stderr = format!("{} panicked: the end", "word ".repeat(200));
        let error = CallError::Trap {
            tool: "crash".into(),
            trap: "wasm trap: unreachable".into(),
            stderr: Some(stderr.clone()),
        };
        assert!(error.to_string().contains(&stderr));
        let model = error.model_message();
        assert!(model.ends_with("panicked: the end"), "{model}");
        assert!(model.len() < MODEL_STDERR_CHARS + 40, "{model}");
        assert!(!model.contains("wasm trap"), "{model}");
    }

    #[test]
    fn kinds_serialize_in_snake_case() {
        assert_eq!(
            serde_json::to_value(ErrorKind::CapabilityDenied).unwrap_or_default(),
            "capability_denied"
        );
        assert_eq!(ErrorKind::ResultTooLarge.to_string(), "result_too_large");
    }

    #[test]
    fn a_timeout_names_the_setting_to_raise() {
        let error = CallError::Timeout {
            tool: "spin".into(),
            kind: TimeLimit::CpuTime,
            limit: Duration::from_millis(300),
        };
        assert!(error.to_string().contains("`cpu_time`"), "{error}");
        assert!(!error.model_message().contains("cpu_time"));
    }
}

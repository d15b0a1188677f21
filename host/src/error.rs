//! The errors a caller of the library can match on.

use std::path::PathBuf;
use std::time::Duration;

/// Why a component (or a manifest's set of components) could not be loaded.
///
/// Every variant names the file it is about; the message says what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The component file could not be read.
    #[error("cannot read component {}", path.display())]
    Read {
        /// The component file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },

    /// The file is not a WebAssembly component.
    #[error("{} is not a tool component: {problem}", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// What it is instead, and how to make a component of it.
        problem: String,
    },

    /// Compiling the component failed.
    #[error("cannot compile {}", path.display())]
    Compile {
        /// The component file.
        path: PathBuf,
        /// Wasmtime's reason.
        #[source]
        source: anyhow::Error,
    },

    /// The component does not target the `toolhost:tool/toolbox` world.
    #[error("{} does not target the toolhost:tool world: {problem}", path.display())]
    WrongWorld {
        /// The component file.
        path: PathBuf,
        /// What is missing or different.
        problem: String,
    },

    /// The component's `describe` export failed.
    #[error("{}: `describe` failed", path.display())]
    Describe {
        /// The component file.
        path: PathBuf,
        /// What went wrong while running it.
        #[source]
        source: Box<CallError>,
    },

    /// A tool's spec, as returned by `describe`, is not usable.
    #[error("{}: tool `{tool}` {problem}", path.display())]
    InvalidSpec {
        /// The component file.
        path: PathBuf,
        /// The tool's name as the component gave it.
        tool: String,
        /// What is wrong with it.
        problem: String,
    },

    /// Two components offer a tool with the same name.
    #[error(
        "tool `{tool}` is offered by both {} and {}; a model can only call one of them, so load just one",
        first.display(),
        second.display()
    )]
    DuplicateTool {
        /// The tool name.
        tool: String,
        /// The component loaded first.
        first: PathBuf,
        /// The component that offers it again.
        second: PathBuf,
    },

    /// A grant cannot be applied (a granted directory does not exist, ...).
    #[error("component `{component}`: {problem}")]
    Grant {
        /// The component's name in the manifest.
        component: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

/// Which limit a call ran into when it took too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeLimit {
    /// The tool computed for longer than its CPU time budget.
    CpuTime,
    /// The call took longer than its wall-clock timeout (waiting included).
    WallClock,
}

/// Why a tool call did not return a result.
///
/// The host keeps running after every one of these: each call has its own instance, and a
/// failed instance is thrown away.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No loaded component offers a tool by that name.
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
    #[error("`{tool}` ran out of time: its {} limit is {}", match kind {
        TimeLimit::CpuTime => "CPU time",
        TimeLimit::WallClock => "wall-clock",
    }, humantime::format_duration(*limit))]
    Timeout {
        /// The tool.
        tool: String,
        /// Which limit.
        kind: TimeLimit,
        /// The limit's value.
        limit: Duration,
    },

    /// The tool tried to use more memory than its limit.
    #[error("`{tool}` exceeded its memory limit of {}", crate::sandbox::format_bytes(*limit))]
    MemoryLimit {
        /// The tool.
        tool: String,
        /// The limit in bytes.
        limit: u64,
    },

    /// The tool's result is larger than allowed.
    #[error(
        "`{tool}` returned {} of result, over its limit of {}",
        crate::sandbox::format_bytes(*size as u64),
        crate::sandbox::format_bytes(*limit as u64)
    )]
    ResultTooLarge {
        /// The tool.
        tool: String,
        /// The size of the result in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },

    /// The tool crashed (a WebAssembly trap: a panic, an out-of-bounds access, ...).
    #[error("`{tool}` crashed: {message}")]
    Trap {
        /// The tool.
        tool: String,
        /// The trap, and the last line the tool wrote to stderr when there is one.
        message: String,
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
}

impl CallError {
    /// A short, stable name for the kind of error, as used in JSON output and in the errors
    /// sent to a model: `unknown_tool`, `invalid_arguments`, `tool_failed`,
    /// `capability_denied`, `timeout`, `memory_limit`, `result_too_large`, `trap` or
    /// `instantiate`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::ToolFailed { .. } => "tool_failed",
            Self::CapabilityDenied { .. } => "capability_denied",
            Self::Timeout { .. } => "timeout",
            Self::MemoryLimit { .. } => "memory_limit",
            Self::ResultTooLarge { .. } => "result_too_large",
            Self::Trap { .. } => "trap",
            Self::Instantiate { .. } => "instantiate",
        }
    }
}

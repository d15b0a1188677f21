//! The manifest's smaller sections: `[tools.NAME]`, `[approval]`, `[audit]` and `[mcp]`
//! (with `[mcp.tasks]`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::access::{AccessRule, PerCallerLimits};
use super::approval_mode::ApprovalMode;
use super::resource_server::ResourceServerSection;
use crate::spec::ToolAnnotations;
use crate::units::HumanDuration;

/// The `[approval]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalSection {
    /// Calls of tools holding any of these wait for approval: `write-dir`, `read-dir`, `env`,
    /// `http`, `socket`, `unsandboxed` (MCP servers and the application's own tools), `any`.
    #[serde(default)]
    pub ask_for: BTreeSet<AskFor>,
}

/// The `[audit]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    /// The log file (JSON lines, appended; relative to the manifest's directory).
    pub path: PathBuf,
}

/// How the tool-calling loop treats one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOptions {
    /// The tool's result is the run's answer: no further model request (the same as naming
    /// it in `[model] stop_at`).
    #[serde(default)]
    pub return_direct: bool,
    /// Whether its calls wait for approval: `always`, or `never` (over `[approval]` rules).
    #[serde(default)]
    pub approval: Option<ApprovalMode>,
    /// What its failure does: `to_model` (the default) or `fail_run`.
    #[serde(default)]
    pub on_error: OnError,
    /// What an MCP client is told about the tool's behaviour (`host mcp`).
    #[serde(default)]
    pub annotations: Option<ToolAnnotations>,
    /// Whether `host mcp` runs the tool's calls as tasks (the MCP tasks extension): `never`
    /// (the default), `optional`, `required` or `after_input`.
    #[serde(default)]
    pub task: TaskSupport,
}

/// Whether `host mcp` runs a tool's calls as tasks (`task` under `[tools.NAME]`): a task's
/// `tools/call` answers at once with its id, and the client polls it (`tasks/get`), answers
/// what it asks (`tasks/update`) and may stop it (`tasks/cancel`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Every call answers within its request.
    #[default]
    Never,
    /// A call runs as a task when the client declared the tasks extension, and within its
    /// request otherwise.
    Optional,
    /// Every call runs as a task; a client that did not declare the extension is refused
    /// (-32021, naming the extension).
    Required,
    /// The call asks for its input within its requests (revision 2026-07-28's rounds, or the
    /// session's client asked directly), and the request that brings the answers starts the
    /// task: for a tool that must know what to do before it runs for long. A client without
    /// the extension is refused, as for `required`.
    AfterInput,
}

/// How long `host mcp` keeps tasks, how often it suggests polling them, and how many it
/// holds: the manifest's `[mcp.tasks]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSection {
    /// Where tasks are kept: in the server's memory (none, the default), or in the Redis at
    /// this URL (`redis://127.0.0.1:6379/0`), which replicas share (`--task-store`).
    #[serde(default)]
    pub store: Option<String>,
    /// How long a task is kept from its creation (its `ttlMs`); a task still working then
    /// fails, and a finished one is removed one `ttl` after it finished. Default one hour.
    #[serde(default = "TasksSection::default_ttl")]
    pub ttl: HumanDuration,
    /// How often clients are asked to poll (`pollIntervalMs`). Default one second.
    #[serde(default = "TasksSection::default_poll_interval")]
    pub poll_interval: HumanDuration,
    /// The most tasks one caller holds at once (working or kept finished). Default 64.
    #[serde(default = "TasksSection::default_per_caller")]
    pub max_per_caller: usize,
    /// The most tasks the server holds at once, every caller's. Default 1024.
    #[serde(default = "TasksSection::default_max")]
    pub max: usize,
}

impl TasksSection {
    fn default_ttl() -> HumanDuration {
        HumanDuration(Duration::from_secs(3600))
    }

    fn default_poll_interval() -> HumanDuration {
        HumanDuration(Duration::from_secs(1))
    }

    fn default_per_caller() -> usize {
        64
    }

    fn default_max() -> usize {
        1024
    }
}

impl TasksSection {
    /// These settings with each of `other`'s that is not the default over them (a
    /// `--task-store` flag over the manifest's `store`, say).
    pub fn overridden_by(self, other: TasksSection) -> Self {
        let default = Self::default();
        Self {
            store: other.store.or(self.store),
            ttl: if other.ttl == default.ttl {
                self.ttl
            } else {
                other.ttl
            },
            poll_interval: if other.poll_interval == default.poll_interval {
                self.poll_interval
            } else {
                other.poll_interval
            },
            max_per_caller: if other.max_per_caller == default.max_per_caller {
                self.max_per_caller
            } else {
                other.max_per_caller
            },
            max: if other.max == default.max {
                self.max
            } else {
                other.max
            },
        }
    }
}

impl Default for TasksSection {
    fn default() -> Self {
        Self {
            store: None,
            ttl: Self::default_ttl(),
            poll_interval: Self::default_poll_interval(),
            max_per_caller: Self::default_per_caller(),
            max: Self::default_max(),
        }
    }
}

/// How `host mcp` serves the tools: the manifest's `[mcp]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The keys of a request's `_meta` that reach the tool's call context (none by default):
    /// a client's `{"_meta": {"tenant": "acme"}}` reaches the tool as `tenant=acme` when
    /// `tenant` is listed. Other keys are dropped.
    #[serde(default)]
    pub pass_meta: BTreeSet<String>,
    /// Which verified callers may use which tools, prompts and resources (`[[mcp.access]]`);
    /// none: every caller may use everything.
    #[serde(default)]
    pub access: Vec<AccessRule>,
    /// Each caller's fair share of the server over HTTP (`[mcp.per_caller]`); nothing is
    /// limited by default.
    #[serde(default)]
    pub per_caller: PerCallerLimits,
    /// The access tokens `host mcp --http` accepts (`[mcp.auth]`); none asked for without it.
    #[serde(default)]
    pub auth: Option<ResourceServerSection>,
    /// How tasks are kept (`[mcp.tasks]`); which tools run as tasks is each tool's `task`
    /// under `[tools.NAME]`.
    #[serde(default)]
    pub tasks: TasksSection,
}

impl McpConfig {
    /// This configuration with `other`'s keys added (its `auth`, when it has one, replaces
    /// this one's).
    pub fn merged(mut self, other: McpConfig) -> Self {
        self.pass_meta.extend(other.pass_meta);
        self.access.extend(other.access);
        self.per_caller = self.per_caller.overridden_by(other.per_caller);
        if other.auth.is_some() {
            self.auth = other.auth;
        }
        self.tasks = self.tasks.overridden_by(other.tasks);
        self
    }
}

/// What a tool's failure does to the run (a manifest's `on_error` under `[tools.NAME]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The model gets the error as the call's result, and the run goes on.
    #[default]
    ToModel,
    /// The run ends with the error.
    FailRun,
}

/// What a tool may hold that makes its calls wait for approval, in an `[approval] ask_for`
/// rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AskFor {
    /// Every tool.
    Any,
    /// Tools that do not run in the sandbox (MCP servers, the application's own functions).
    Unsandboxed,
    /// A granted directory, read-only or writable.
    ReadDir,
    /// A granted writable directory.
    WriteDir,
    /// A granted environment variable.
    Env,
    /// Granted outgoing HTTP.
    Http,
    /// Granted sockets.
    Socket,
}

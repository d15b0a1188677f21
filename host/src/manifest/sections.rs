//! The manifest's smaller sections: `[tools.NAME]`, `[approval]`, `[audit]` and `[mcp]`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::access::{AccessRule, PerCallerLimits};
use super::approval_mode::ApprovalMode;
use super::resource_server::ResourceServerSection;
use crate::spec::ToolAnnotations;

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

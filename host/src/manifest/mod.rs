//! The manifest: which tool components to load, what each is granted, its limits, the model
//! and how the loop runs.
//!
//! ```toml
//! # Limits for every component, over the built-in defaults.
//! [limits]
//! memory = "64MiB"
//! timeout = "10s"
//!
//! [components.calculator]
//! path = "dist/calculator.wasm"
//!
//! [components.weather]
//! path = "dist/weather.wasm"
//! grants.http = ["wttr.in"]
//! required = false            # if it fails to load, the others still do (with a warning)
//!
//! [components.files]
//! path = "dist/files.wasm"
//! grants.dirs = [
//!   { host = "data", guest = "/data" },
//!   { host = "notes", guest = "/notes", write = true },
//! ]
//! grants.workdir = "/data"     # relative paths ("report.txt") resolve in /data
//! limits = { memory = "32MiB" }
//! tools = ["list_files", "read_file"]   # offer only these (`exclude` leaves some out)
//! prefix = "fs_"                         # offered as fs_list_files, fs_read_file
//!
//! [mcp_servers.time]          # an MCP server the host starts (not sandboxed)
//! command = ["mcp-server-time", "--local-timezone", "UTC"]
//! env = ["TZ=UTC"]            # besides HOME, PATH, USER and a few more of the host's
//! timeout = "10s"             # per call; `notifications/cancelled` when it runs out
//!
//! [mcp_servers.search]        # an MCP server at a Streamable HTTP endpoint (not sandboxed)
//! url = "http://127.0.0.1:8931/mcp"
//! headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }   # from the host's environment
//! exclude = ["delete_index"]
//! required = false
//!
//! [model]                     # the model, and how the loop runs
//! provider = "openai"
//! name = "gpt-4o-mini"
//! temperature = 0
//! max_rounds = 10
//! tools = 5                   # offer the 5 tools that best fit each request ("all": every one)
//!
//! [tools.fs_read_file]        # options of one tool, by the name the model sees
//! return_direct = true        # its result is the answer (like [model] stop_at)
//! annotations = { read_only = true, open_world = false }   # told to MCP clients
//!
//! [tools.write_note]
//! approval = "always"         # ask before every call ("never": not even when a rule says so)
//! on_error = "fail_run"       # a failure ends the run ("to_model", the default: the model sees it)
//!
//! [approval]                  # ask before any call of a tool holding one of these
//! ask_for = ["write-dir", "http", "socket"]   # also: read-dir, env, unsandboxed, any
//!
//! [audit]                     # one JSON line per tool call, created 0600
//! path = "audit.jsonl"
//!
//! [mcp]                       # `host mcp`: the `_meta` keys of a request that reach the tools
//! pass_meta = ["tenant"]
//! ```
//!
//! Relative paths (components, granted directories, a server's program when it has a `/`, its
//! `cwd`) are relative to the manifest's directory, where a stdio server runs by default.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::agent::{AgentConfig, ApprovalMode, ApprovalRules, AskFor, OnError};
use crate::component::ComponentConfig;
use crate::llm::ModelConfig;
use crate::mcp::client::{McpServerConfig, McpServerEntry};
use crate::sandbox::{Grants, Limits, LimitsConfig};
use crate::source::SourceOptions;

/// A parsed manifest.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(from = "RawManifest")]
pub struct Manifest {
    /// Limits for every component, over [`Limits::default`].
    pub limits: LimitsConfig,
    /// The components, by name.
    pub components: BTreeMap<String, ComponentEntry>,
    /// The MCP servers, by name.
    pub mcp_servers: BTreeMap<String, McpServerEntry>,
    /// The model `host run` and `host chat` talk to (the `[model]` section); the local one
    /// when absent.
    pub model: ModelConfig,
    /// How the loop runs (also written in the `[model]` section: temperature, max_tokens,
    /// max_rounds, system, stream, tools).
    pub agent: AgentConfig,
    /// Options of single tools, by the name the model sees.
    pub tools: BTreeMap<String, ToolOptions>,
    /// Which calls wait for approval, by what their tools hold (`[approval]`).
    pub approval: ApprovalSection,
    /// Where every tool call is recorded (`[audit]`).
    pub audit: Option<AuditSection>,
    /// How `host mcp` serves the tools (the `[mcp]` section).
    pub mcp: McpConfig,
    /// The file it was read from, when it was read from one.
    pub path: Option<PathBuf>,
}

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

/// One component of a manifest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentEntry {
    /// The component file.
    pub path: PathBuf,
    /// What its tools may use; nothing by default.
    #[serde(default)]
    pub grants: Grants,
    /// Its limits, over the manifest's.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Put ahead of each of its tools' names.
    #[serde(default)]
    pub prefix: String,
    /// Offer only these of its tools (by their own names); all when absent.
    #[serde(default)]
    pub tools: Option<BTreeSet<String>>,
    /// Never offer these of its tools.
    #[serde(default)]
    pub exclude: BTreeSet<String>,
    /// Whether a failure to load it fails the whole manifest (default true).
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
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

/// Hints about a tool's behaviour, for clients that decide what to ask the user before a
/// call (MCP's tool annotations). Hints only: nothing enforces them; the grants do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolAnnotations {
    /// A human-readable title.
    pub title: Option<String>,
    /// It changes nothing outside itself (MCP `readOnlyHint`).
    pub read_only: Option<bool>,
    /// It may destroy or overwrite data (MCP `destructiveHint`).
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect (MCP `idempotentHint`).
    pub idempotent: Option<bool>,
    /// It reaches an open world of outside entities, such as the web (MCP `openWorldHint`).
    pub open_world: Option<bool>,
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
}

impl McpConfig {
    /// This configuration with `other`'s keys added.
    pub fn merged(mut self, other: McpConfig) -> Self {
        self.pass_meta.extend(other.pass_meta);
        self
    }
}

/// Why a manifest could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// There is no file at the path.
    #[error(
        "there is no manifest at {}; give the path of one (for the example tools: \
         example-tools/toolhost.toml), or write one (see the README's \"Grants\")",
        path.display()
    )]
    NotFound {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("cannot read manifest {}", path.display())]
    Read {
        /// The manifest file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid manifest.
    #[error("manifest {} is not valid", path.display())]
    Parse {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong, with the line.
        #[source]
        source: toml::de::Error,
    },
}

/// The manifest as written: `[model]` holds both the model and the loop's settings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    limits: LimitsConfig,
    #[serde(default)]
    components: BTreeMap<String, ComponentEntry>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpServerEntry>,
    #[serde(default)]
    model: ModelSection,
    #[serde(default)]
    tools: BTreeMap<String, ToolOptions>,
    #[serde(default)]
    approval: ApprovalSection,
    #[serde(default)]
    audit: Option<AuditSection>,
    #[serde(default)]
    mcp: McpConfig,
}

#[derive(Default, Deserialize)]
struct ModelSection {
    #[serde(flatten)]
    model: ModelConfig,
    #[serde(flatten)]
    agent: AgentConfig,
}

impl From<RawManifest> for Manifest {
    fn from(raw: RawManifest) -> Self {
        Self {
            limits: raw.limits,
            components: raw.components,
            mcp_servers: raw.mcp_servers,
            model: raw.model.model,
            agent: raw.model.agent,
            tools: raw.tools,
            approval: raw.approval,
            audit: raw.audit,
            mcp: raw.mcp,
            path: None,
        }
    }
}

/// The most components and MCP servers one manifest may name, together: 256. Each is loaded
/// (a component compiled, a server started) before the first call, so a manifest of
/// thousands is refused at once rather than after minutes.
pub const MAX_SOURCES: usize = 256;

/// The keys of the `[model]` section.
const MODEL_KEYS: &[&str] = &[
    "provider",
    "name",
    "base_url",
    "api_key_env",
    "api_key",
    "timeout",
    "max_retries",
    "format",
    "temperature",
    "max_tokens",
    "max_rounds",
    "system",
    "stream",
    "stop_at",
    "max_parallel_calls",
    "max_calls_per_turn",
    "tools",
];

impl Manifest {
    /// Reads and parses the manifest at `path`: a regular file of at most
    /// [`MAX_MANIFEST_SIZE`](crate::MAX_MANIFEST_SIZE) (1 MiB), with at most
    /// [`MAX_SOURCES`] components and MCP servers. A device, a FIFO or a larger file is an
    /// error naming the path, without reading it.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let read_error = |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::NotFound => ManifestError::NotFound {
                path: path.to_owned(),
            },
            _ => ManifestError::Read {
                path: path.to_owned(),
                source,
            },
        };
        let bytes = crate::file::read(path, crate::file::MAX_MANIFEST_SIZE, "a manifest")
            .map_err(read_error)?;
        let text = String::from_utf8(bytes).map_err(|error| {
            read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, error))
        })?;
        Self::parse(&text, path)
    }

    /// Parses `text` as the manifest at `path` (used to resolve relative paths).
    pub fn parse(text: &str, path: &Path) -> Result<Self, ManifestError> {
        let parse_error = |source| ManifestError::Parse {
            path: path.to_owned(),
            source,
        };
        // `[model]` is read as two flattened parts, which cannot refuse unknown keys
        // themselves: check them first, so a typo is an error that names it.
        let table: toml::Table = toml::from_str(text).map_err(parse_error)?;
        if let Some(toml::Value::Table(model)) = table.get("model")
            && let Some(key) = model.keys().find(|key| !MODEL_KEYS.contains(&key.as_str()))
        {
            let message = format!(
                "unknown field `{key}` in [model], expected one of {}",
                MODEL_KEYS.join(", ")
            );
            return Err(parse_error(<toml::de::Error as serde::de::Error>::custom(
                message,
            )));
        }
        let sources = ["components", "mcp_servers"]
            .iter()
            .filter_map(|key| table.get(*key)?.as_table().map(toml::Table::len))
            .sum::<usize>();
        if sources > MAX_SOURCES {
            let message = format!(
                "it names {sources} components and MCP servers; at most {MAX_SOURCES} are \
                 loaded from one manifest: split it, or load the rest in code"
            );
            return Err(parse_error(<toml::de::Error as serde::de::Error>::custom(
                message,
            )));
        }
        let mut manifest: Manifest = toml::from_str(text).map_err(parse_error)?;
        manifest.path = Some(path.to_owned());
        Ok(manifest)
    }

    /// The directory relative paths are resolved against.
    pub fn base_dir(&self) -> PathBuf {
        match self.path.as_deref().and_then(Path::parent) {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        }
    }

    /// The tools marked `return_direct`.
    pub fn return_direct_tools(&self) -> BTreeSet<String> {
        self.tools_where(|options| options.return_direct)
    }

    /// The tools whose failure ends the run (`on_error = "fail_run"`).
    pub fn fail_run_tools(&self) -> BTreeSet<String> {
        self.tools_where(|options| options.on_error == OnError::FailRun)
    }

    /// Which calls wait for approval: the `[approval]` rules and every tool's `approval`.
    pub fn approval_rules(&self) -> ApprovalRules {
        ApprovalRules {
            tools: self
                .tools
                .iter()
                .filter_map(|(name, options)| Some((name.clone(), options.approval?)))
                .collect(),
            ask_for: self.approval.ask_for.clone(),
        }
    }

    /// The audit log's path, resolved against the manifest's directory.
    pub fn audit_path(&self) -> Option<PathBuf> {
        self.audit
            .as_ref()
            .map(|audit| self.base_dir().join(&audit.path))
    }

    fn tools_where(&self, accept: impl Fn(&ToolOptions) -> bool) -> BTreeSet<String> {
        self.tools
            .iter()
            .filter(|(_, options)| accept(options))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// What to load for each component, with paths resolved and limits combined.
    pub fn component_configs(&self) -> Vec<ComponentConfig> {
        let base = self.base_dir();
        let defaults = self.limits.apply(Limits::default());
        self.components
            .iter()
            .map(|(name, entry)| {
                let mut grants = entry.grants.clone();
                grants.resolve_paths(&base);
                ComponentConfig {
                    name: name.clone(),
                    path: base.join(&entry.path),
                    grants,
                    limits: entry.limits.apply(defaults),
                    options: SourceOptions {
                        prefix: entry.prefix.clone(),
                        include: entry.tools.clone(),
                        exclude: entry.exclude.clone(),
                    },
                    required: entry.required,
                }
            })
            .collect()
    }

    /// How to start (or reach) each MCP server, with paths resolved and the manifest's
    /// `[limits]` `timeout` and `max_result` as the defaults of its own.
    pub fn mcp_server_configs(&self) -> Vec<McpServerConfig> {
        let base = self.base_dir();
        let defaults = self.limits.apply(Limits::default());
        self.mcp_servers
            .iter()
            .map(|(name, entry)| entry.config(name, &base, defaults))
            .collect()
    }
}

#[cfg(test)]
mod tests;

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
//! tool_limit = 5              # offer the 5 tools that best fit each request ("all": every one)
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
//!
//! [mcp.auth]                  # `host mcp --http` takes only this issuer's tokens for this resource
//! issuer = "https://login.example.com"
//! resource = "https://tools.example.com/mcp"
//! scopes = ["mcp:tools"]
//!
//! [components.shared]         # from an OCI registry, pulled once and cached by digest
//! path = "oci://registry.example.com/tools/calculator:1"
//! verify = { key = "keys/acme.pub" }   # its cosign signature must verify (see [oci])
//! ```
//!
//! Relative paths (components, granted directories, a server's program when it has a `/`, its
//! `cwd`) are relative to the manifest's directory, where a stdio server runs by default.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod access;
mod approval_mode;
pub mod code_mode;
pub mod mcp_auth;
pub mod mcp_server;
pub mod model;
pub mod oci;
pub mod resource_server;
mod sections;

pub use access::{AccessRule, PerCallerLimits};
pub use approval_mode::ApprovalMode;
pub use code_mode::CodeModeSection;
pub use mcp_server::McpServerEntry;
pub use model::ModelSection;
pub use oci::{OciSection, VerifyEntry};
pub use sections::{
    ApprovalSection, AskFor, AuditSection, McpConfig, OnError, TaskSupport, TasksSection,
    ToolOptions,
};

use crate::sandbox::{Grants, LimitsConfig};

/// A parsed manifest.
///
/// Its types are plain data, as written; each feature turns its part into its own
/// configuration (the engine a component's, the MCP client a server's, the model client and
/// the loop their parts of `[model]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Limits for every component, over [`Limits::default`](crate::sandbox::Limits).
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The components, by name.
    #[serde(default)]
    pub components: BTreeMap<String, ComponentEntry>,
    /// The MCP servers, by name.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerEntry>,
    /// The model `host run` and `host chat` talk to, and how the loop runs (the `[model]`
    /// section); the local model with its defaults when absent.
    #[serde(default)]
    pub model: ModelSection,
    /// Options of single tools, by the name the model sees.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOptions>,
    /// Which calls wait for approval, by what their tools hold (`[approval]`).
    #[serde(default)]
    pub approval: ApprovalSection,
    /// Where every tool call is recorded (`[audit]`).
    #[serde(default)]
    pub audit: Option<AuditSection>,
    /// How `host mcp` serves the tools (the `[mcp]` section).
    #[serde(default)]
    pub mcp: McpConfig,
    /// Components from OCI registries: signatures, plain HTTP, the pull timeout (`[oci]`).
    #[serde(default)]
    pub oci: OciSection,
    /// Code mode: one tool whose program calls the others (`[code_mode]`).
    #[serde(default)]
    pub code_mode: CodeModeSection,
    /// The file it was read from, when it was read from one.
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// One component of a manifest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentEntry {
    /// The component file, or an `oci://REGISTRY/REPO:TAG` (or `@sha256:...`) reference.
    pub path: PathBuf,
    /// The key its signature is checked with (an `oci://` component only), over its
    /// registry's in `[oci.registries]`.
    #[serde(default)]
    pub verify: Option<VerifyEntry>,
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
    /// Offer only these of its resources (by URI or URI template); all when absent.
    #[serde(default)]
    pub resources: Option<BTreeSet<String>>,
    /// Never offer these of its resources.
    #[serde(default)]
    pub exclude_resources: BTreeSet<String>,
    /// Offer only these of its prompts (by name); all when absent.
    #[serde(default)]
    pub prompts: Option<BTreeSet<String>>,
    /// Never offer these of its prompts.
    #[serde(default)]
    pub exclude_prompts: BTreeSet<String>,
    /// Whether a failure to load it fails the whole manifest (default true).
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

/// Why a manifest could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// There is no file at the path.
    #[error(
        "there is no manifest at {}; give the path of one (for the example tools: \
         example-tools/toolhost.toml), or write one (every key: docs/manifest.md)",
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
    /// The manifest names more components and MCP servers than one manifest may.
    #[error(
        "manifest {} names {count} components and MCP servers; at most {MAX_SOURCES} are \
         loaded from one manifest: split it, or load the rest in code",
        path.display()
    )]
    TooManySources {
        /// The manifest file.
        path: PathBuf,
        /// How many it names.
        count: usize,
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

/// `error` without the manifest's line when that line holds a secret written into it (the
/// error says so, and names the line by its number).
fn without_secret(error: toml::de::Error, text: &str) -> toml::de::Error {
    if !error.message().contains(mcp_auth::SECRET_REFUSED) {
        return error;
    }
    let line = error
        .span()
        .and_then(|span| text.get(..span.start))
        .map_or(0, |before| before.matches('\n').count() + 1);
    <toml::de::Error as serde::de::Error>::custom(format!("line {line}: {}", error.message()))
}

/// The most components and MCP servers one manifest may name, together: 256. Each is loaded
/// (a component compiled, a server started) before the first call, so a manifest of
/// thousands is refused at once rather than after minutes.
pub const MAX_SOURCES: usize = 256;

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
        let mut manifest: Manifest =
            toml::from_str(text).map_err(|source| ManifestError::Parse {
                path: path.to_owned(),
                source: without_secret(source, text),
            })?;
        let sources = manifest.components.len() + manifest.mcp_servers.len();
        if sources > MAX_SOURCES {
            return Err(ManifestError::TooManySources {
                path: path.to_owned(),
                count: sources,
            });
        }
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
}

#[cfg(test)]
mod tests;

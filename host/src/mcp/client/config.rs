//! What an MCP server is and how to reach it: [`McpServerConfig`], made from the manifest's
//! `[mcp_servers.NAME]` entry ([`McpServerEntry`]) or built by the application.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::ProtocolVersion;

use super::auth::browser::RunBrowser;
use crate::manifest::Manifest;
use crate::manifest::mcp_auth::AuthEntry;
use crate::manifest::mcp_server::{McpServerEntry, McpTransport};
use crate::sandbox::{EnvGrant, Limits};
use crate::source::SourceOptions;

/// How long a server may take to start, answer `initialize` and list its tools, unless
/// configured otherwise.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The host's environment variables a stdio server gets besides those its `env` names: the
/// ones the MCP SDKs pass by default, and the locale, time zone and temporary directory.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
];

/// An MCP server to take tools from. Not sandboxed: a stdio server is a process of the
/// user who runs the host, with that user's authority; an HTTP server does whatever it does.
///
/// ```
/// use toolhost::mcp::client::McpServerConfig;
///
/// let time = McpServerConfig::stdio("time", ["mcp-server-time", "--local-timezone", "UTC"]);
/// let remote = McpServerConfig::http("search", "http://127.0.0.1:8931/mcp")
///     .header("Authorization", "Bearer ${SEARCH_TOKEN}");
/// assert_eq!(time.endpoint(), "mcp-server-time --local-timezone UTC");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// The server's name (the manifest key), for messages and `host tools`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// The most time one request (a tool call, a listing) may take. A call that takes longer
    /// fails with a timeout and the server is sent `notifications/cancelled`.
    pub timeout: Duration,
    /// The most time the server may take to start, answer `initialize` and list its tools.
    pub startup_timeout: Duration,
    /// The largest result of a call, in bytes (the same limit as components'
    /// `max_result`); a stdio server's larger answer is read and thrown away, never kept.
    pub max_result: usize,
    /// Which of its tools are offered, and under which names.
    pub options: SourceOptions,
    /// Whether a failure to start it fails the whole load (the default), or only leaves it
    /// out with a warning.
    pub required: bool,
    /// Whether it may ask for the model during a call (`sampling/createMessage`, passed to
    /// the call's [`Asker`](crate::Asker)); off by default: it spends the user's model.
    pub sampling: bool,
    /// The directories it is told of when it asks for roots (`roots/list`), absolute; none
    /// by default (and then the host does not offer roots at all).
    pub roots: Vec<PathBuf>,
    /// How an HTTP server is authorized (OAuth 2.1, the MCP authorization spec). With
    /// `None`, a token stored by `host auth login` is still used, and a server that asks for
    /// one gets the defaults of [`AuthEntry`].
    pub auth: Option<AuthEntry>,
    /// Who logs in to it when it asks for authorization during a run: nobody by default
    /// (the run fails, naming `host auth login`); a test harness's scripted browser.
    pub browser: Option<RunBrowser>,
    /// The MCP revision to speak (one of
    /// [`PROTOCOL_VERSIONS`](crate::manifest::mcp_server::PROTOCOL_VERSIONS)); `None`
    /// negotiates: 2026-07-28 (stateless, `server/discover`) when the server speaks it, else
    /// the dated revision it answers `initialize` with.
    pub protocol: Option<String>,
}

impl McpServerConfig {
    /// A server started as `command` (the program, then its arguments), with the default
    /// timeouts and result limit, every tool offered under its own name, required.
    pub fn stdio<S: Into<String>>(name: &str, command: impl IntoIterator<Item = S>) -> Self {
        let mut command = command.into_iter().map(Into::into);
        let program = PathBuf::from(command.next().unwrap_or_default());
        Self::new(
            name,
            McpTransport::Stdio {
                program,
                args: command.collect(),
                env: Vec::new(),
                cwd: None,
            },
        )
    }

    /// A server at the Streamable HTTP endpoint `url`, with the defaults of
    /// [`stdio`](Self::stdio).
    pub fn http(name: &str, url: &str) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.to_owned(),
                headers: Vec::new(),
            },
        )
    }

    fn new(name: &str, transport: McpTransport) -> Self {
        let limits = Limits::default();
        Self {
            name: name.to_owned(),
            transport,
            timeout: limits.timeout,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            max_result: limits.max_result,
            options: SourceOptions::default(),
            required: true,
            sampling: false,
            roots: Vec::new(),
            auth: None,
            browser: None,
            protocol: None,
        }
    }

    /// Adds an environment variable (`NAME` or `NAME=value`) for a stdio server; ignored
    /// for an HTTP one.
    pub fn env(mut self, grant: EnvGrant) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.push(grant);
        }
        self
    }

    /// Adds a header (its value may name environment variables as `${NAME}`) for an HTTP
    /// server; ignored for a stdio one.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// The revision [`protocol`](Self::protocol) pins, if any; the error says it is not one
    /// the host speaks.
    pub(super) fn protocol_version(&self) -> Result<Option<ProtocolVersion>, String> {
        let Some(pinned) = &self.protocol else {
            return Ok(None);
        };
        ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .find(|known| known.as_str() == pinned)
            .cloned()
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "MCP server `{}`: `protocol = {pinned:?}` is not an MCP revision the host \
                     speaks (one of {})",
                    self.name,
                    crate::manifest::mcp_server::PROTOCOL_VERSIONS.join(", ")
                )
            })
    }

    /// What it runs or where it is: the command line, or the URL.
    pub fn endpoint(&self) -> String {
        self.transport.to_string()
    }
}

/// Replaces `${NAME}` in `value` by the environment variable `NAME` (`$$` is a `$`). The
/// error names the variable that is not set.
pub(crate) fn expand_env(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = inner.find('}') else {
                return Err(format!("`{value}` has a `${{` without its `}}`"));
            };
            let name = &inner[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "`${{{name}}}` does not name an environment variable"
                ));
            }
            match lookup(name) {
                Some(found) => out.push_str(&found),
                None => return Err(format!("the environment variable {name} is not set")),
            }
            rest = &inner[end + 1..];
        } else {
            return Err(format!(
                "`{value}` has a `$` that is not `${{NAME}}`; write `$$` for a `$`"
            ));
        }
    }
    out.push_str(rest);
    Ok(out)
}

impl McpServerConfig {
    /// How to start (or reach) each MCP server of `manifest`, with paths resolved and the
    /// manifest's `[limits]` `timeout` and `max_result` as the defaults of its own.
    pub fn from_manifest(manifest: &Manifest) -> Vec<Self> {
        let base = manifest.base_dir();
        let defaults = manifest.limits.apply(Limits::default());
        manifest
            .mcp_servers
            .iter()
            .map(|(name, entry)| Self::from_entry(entry, name, &base, defaults))
            .collect()
    }

    /// The config of the manifest's server `entry`: `name`, relative paths resolved against `base` (a program is
    /// looked up on `PATH` unless it has a `/`; the server runs in `base` unless `cwd` says
    /// otherwise), limits over `defaults`.
    pub fn from_entry(entry: &McpServerEntry, name: &str, base: &Path, defaults: Limits) -> Self {
        let transport = match &entry.transport {
            McpTransport::Stdio {
                program,
                args,
                env,
                cwd,
            } => McpTransport::Stdio {
                program: if program.components().count() > 1 {
                    base.join(program)
                } else {
                    program.clone()
                },
                args: args.clone(),
                env: env.clone(),
                cwd: Some(
                    cwd.as_ref()
                        .map_or_else(|| base.to_owned(), |cwd| base.join(cwd)),
                ),
            },
            http @ McpTransport::Http { .. } => http.clone(),
        };
        Self {
            name: name.to_owned(),
            transport,
            timeout: entry.timeout.map_or(defaults.timeout, |d| d.0),
            startup_timeout: entry
                .startup_timeout
                .map_or(DEFAULT_STARTUP_TIMEOUT, |d| d.0),
            max_result: entry.max_result.map_or(defaults.max_result, |b| {
                usize::try_from(b.0).unwrap_or(usize::MAX)
            }),
            options: SourceOptions {
                prefix: entry.prefix.clone(),
                include: entry.tools.clone(),
                exclude: entry.exclude.clone(),
                ..SourceOptions::default()
            },
            required: entry.required,
            sampling: entry.sampling,
            roots: entry.roots.iter().map(|root| base.join(root)).collect(),
            auth: entry.auth.clone(),
            browser: None,
            protocol: entry.protocol.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> Result<McpServerEntry, String> {
        toml::from_str::<McpServerEntry>(text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_stdio_entry_resolves_against_the_manifest() {
        let entry = entry(
            "command = [\"./bin/server\", \"--flag\"]\nenv = [\"TZ=UTC\", \"TOKEN\"]\nprefix = \"x_\"\ntimeout = \"5s\"\nrequired = false\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let config =
            McpServerConfig::from_entry(&entry, "s", Path::new("/etc/tools"), Limits::default());
        let McpTransport::Stdio {
            program,
            args,
            env,
            cwd,
        } = &config.transport
        else {
            panic!("{config:?}");
        };
        assert_eq!(program, Path::new("/etc/tools/./bin/server"));
        assert_eq!(args, &["--flag"]);
        assert_eq!(env[1], EnvGrant::Inherit("TOKEN".into()));
        assert_eq!(cwd.as_deref(), Some(Path::new("/etc/tools")));
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(config.max_result, Limits::default().max_result);
        assert_eq!(config.options.prefix, "x_");
        assert!(!config.required);
        let on_path = McpServerConfig::stdio("t", ["mcp-server-time"]);
        assert_eq!(on_path.endpoint(), "mcp-server-time");
    }

    #[test]
    fn header_values_come_from_the_environment() {
        let lookup = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        assert_eq!(
            expand_env("Bearer ${TOKEN}", lookup).as_deref(),
            Ok("Bearer s3cret")
        );
        assert_eq!(expand_env("a$$b", lookup).as_deref(), Ok("a$b"));
        let missing = expand_env("Bearer ${NOPE}", lookup).unwrap_err();
        assert!(missing.contains("NOPE is not set"), "{missing}");
        let bare = expand_env("$TOKEN", lookup).unwrap_err();
        assert!(bare.contains("write `$$`"), "{bare}");
    }
}

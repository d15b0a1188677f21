//! What an MCP server is and how to reach it: [`McpServerConfig`], and the manifest's
//! `[mcp_servers.NAME]` entry it is made from.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::sandbox::{ByteSize, EnvGrant, HumanDuration, Limits};
use crate::source::SourceOptions;

/// How long a server may take to start, answer `initialize` and list its tools, unless
/// configured otherwise.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The host's environment variables a stdio server gets besides those its `env` names: the
/// ones the MCP SDKs pass by default, and the locale, time zone and temporary directory.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
];

/// Headers a configuration may not set: the transport sets them itself.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
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
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A program started by the host, speaking JSON-RPC over its stdin and stdout. It
    /// runs in a process group of its own, which is stopped with the host.
    Stdio {
        /// The program: a path, or a name looked up on `PATH`.
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables it gets besides [`INHERITED_ENV`]: `NAME` passes the
        /// host's value, `NAME=value` sets one.
        env: Vec<EnvGrant>,
        /// The directory it runs in (the host's when `None`).
        cwd: Option<PathBuf>,
    },
    /// A server at a Streamable HTTP endpoint.
    Http {
        /// The endpoint, such as `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with every request. `${NAME}` in a value is replaced by the host's
        /// environment variable `NAME` when the server is connected (`$$` is a `$`), so
        /// tokens stay out of the manifest.
        headers: Vec<(String, String)>,
    },
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

    /// What it runs or where it is: the command line, or the URL.
    pub fn endpoint(&self) -> String {
        self.transport.to_string()
    }
}

impl fmt::Display for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { program, args, .. } => {
                write!(f, "{}", program.display())?;
                for arg in args {
                    if arg.is_empty() || arg.contains(char::is_whitespace) {
                        write!(f, " {arg:?}")?;
                    } else {
                        write!(f, " {arg}")?;
                    }
                }
                Ok(())
            }
            Self::Http { url, .. } => f.write_str(url),
        }
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

/// Checks a header name a configuration gives.
pub(crate) fn check_header_name(name: &str) -> Result<(), String> {
    if http::HeaderName::try_from(name).is_err() {
        return Err(format!("`{name}` is not a valid HTTP header name"));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "the header `{name}` is set by the MCP transport itself and cannot be configured"
        ));
    }
    Ok(())
}

/// One `[mcp_servers.NAME]` of a manifest: either `command` (with `env`, `cwd`) or `url`
/// (with `headers`), and the options every source has.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawEntry")]
pub struct McpServerEntry {
    /// How to reach it (paths as written, relative to the manifest).
    pub transport: McpTransport,
    /// Put ahead of each of its tools' names.
    pub prefix: String,
    /// Offer only these of its tools (by their own names); all when absent.
    pub tools: Option<BTreeSet<String>>,
    /// Never offer these of its tools.
    pub exclude: BTreeSet<String>,
    /// The most time one request may take; the manifest's `[limits] timeout` when absent.
    pub timeout: Option<HumanDuration>,
    /// The most time starting it may take; [`DEFAULT_STARTUP_TIMEOUT`] when absent.
    pub startup_timeout: Option<HumanDuration>,
    /// The largest result; the manifest's `[limits] max_result` when absent.
    pub max_result: Option<ByteSize>,
    /// Whether a failure to start it fails the whole manifest (default true).
    pub required: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    command: Option<Vec<String>>,
    #[serde(default)]
    env: Vec<EnvGrant>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    prefix: String,
    tools: Option<BTreeSet<String>>,
    #[serde(default)]
    exclude: BTreeSet<String>,
    timeout: Option<HumanDuration>,
    startup_timeout: Option<HumanDuration>,
    max_result: Option<ByteSize>,
    #[serde(default = "yes")]
    required: bool,
}

fn yes() -> bool {
    true
}

impl TryFrom<RawEntry> for McpServerEntry {
    type Error = String;

    fn try_from(raw: RawEntry) -> Result<Self, String> {
        let transport = match (raw.command, raw.url) {
            (Some(_), Some(_)) => {
                return Err(
                    "give either `command` (a server the host starts) or `url` (a server at a \
                     Streamable HTTP endpoint), not both"
                        .to_owned(),
                );
            }
            (None, None) => {
                return Err(
                    "say how to reach the server: `command = [\"program\", \"arg\", ...]` or \
                     `url = \"http://host:port/mcp\"`"
                        .to_owned(),
                );
            }
            (Some(command), None) => {
                if !raw.headers.is_empty() {
                    return Err("`headers` are for a server at a `url`".to_owned());
                }
                let mut command = command.into_iter();
                let program = match command.next() {
                    Some(program) if !program.trim().is_empty() => program,
                    _ => return Err("`command` is empty: name the program first".to_owned()),
                };
                McpTransport::Stdio {
                    program: PathBuf::from(program),
                    args: command.collect(),
                    env: raw.env,
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                if !raw.env.is_empty() || raw.cwd.is_some() {
                    return Err(
                        "`env` and `cwd` are for a server the host starts (`command`)".to_owned(),
                    );
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("`url = {url:?}` is not an http:// or https:// URL"));
                }
                for name in raw.headers.keys() {
                    check_header_name(name)?;
                }
                McpTransport::Http {
                    url,
                    headers: raw.headers.into_iter().collect(),
                }
            }
        };
        Ok(Self {
            transport,
            prefix: raw.prefix,
            tools: raw.tools,
            exclude: raw.exclude,
            timeout: raw.timeout,
            startup_timeout: raw.startup_timeout,
            max_result: raw.max_result,
            required: raw.required,
        })
    }
}

impl McpServerEntry {
    /// The server's config: `name`, relative paths resolved against `base` (a program is
    /// looked up on `PATH` unless it has a `/`; the server runs in `base` unless `cwd` says
    /// otherwise), limits over `defaults`.
    pub fn config(&self, name: &str, base: &Path, defaults: Limits) -> McpServerConfig {
        let transport = match &self.transport {
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
        McpServerConfig {
            name: name.to_owned(),
            transport,
            timeout: self.timeout.map_or(defaults.timeout, |d| d.0),
            startup_timeout: self
                .startup_timeout
                .map_or(DEFAULT_STARTUP_TIMEOUT, |d| d.0),
            max_result: self.max_result.map_or(defaults.max_result, |b| {
                usize::try_from(b.0).unwrap_or(usize::MAX)
            }),
            options: SourceOptions {
                prefix: self.prefix.clone(),
                include: self.tools.clone(),
                exclude: self.exclude.clone(),
            },
            required: self.required,
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
        let config = entry.config("s", Path::new("/etc/tools"), Limits::default());
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
    fn an_entry_says_how_to_reach_the_server_once() {
        let both = entry("command = [\"a\"]\nurl = \"http://127.0.0.1:1/mcp\"\n").unwrap_err();
        assert!(both.contains("not both"), "{both}");
        let neither = entry("prefix = \"a_\"\n").unwrap_err();
        assert!(neither.contains("`command = ["), "{neither}");
        let empty = entry("command = []\n").unwrap_err();
        assert!(empty.contains("`command` is empty"), "{empty}");
        let scheme = entry("url = \"ftp://x\"\n").unwrap_err();
        assert!(scheme.contains("not an http://"), "{scheme}");
        let misplaced = entry("url = \"http://x/mcp\"\ncwd = \"/tmp\"\n").unwrap_err();
        assert!(misplaced.contains("`env` and `cwd`"), "{misplaced}");
        let reserved =
            entry("url = \"http://x/mcp\"\nheaders = { Mcp-Session-Id = \"1\" }\n").unwrap_err();
        assert!(reserved.contains("set by the MCP transport"), "{reserved}");
        let typo = entry("command = [\"a\"]\nrequird = true\n").unwrap_err();
        assert!(typo.contains("unknown field `requird`"), "{typo}");
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

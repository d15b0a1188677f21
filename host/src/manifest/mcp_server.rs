//! One `[mcp_servers.NAME]` of a manifest: how to reach an MCP server, and the options every
//! tool source has.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

use crate::manifest::mcp_auth::AuthEntry;
use crate::sandbox::EnvGrant;
use crate::units::{ByteSize, HumanDuration};

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
    /// The most time starting it may take; 30 s when absent.
    pub startup_timeout: Option<HumanDuration>,
    /// The largest result; the manifest's `[limits] max_result` when absent.
    pub max_result: Option<ByteSize>,
    /// Whether a failure to start it fails the whole manifest (default true).
    pub required: bool,
    /// Whether it may ask for the model during a call (`sampling/createMessage`); off by
    /// default, since that spends the user's model.
    pub sampling: bool,
    /// The directories it is told of when it asks for roots (`roots/list`), as written
    /// (relative to the manifest); none by default.
    pub roots: Vec<PathBuf>,
    /// How a server at a `url` is authorized (its `auth` table); `None` when absent.
    pub auth: Option<AuthEntry>,
    /// The MCP revision to speak to it (one of [`PROTOCOL_VERSIONS`]); when absent, the
    /// newest it speaks: 2026-07-28 if it answers `server/discover`, else a dated revision
    /// over `initialize`.
    pub protocol: Option<String>,
}

/// The MCP revisions the host can speak to a server, oldest first.
pub const PROTOCOL_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

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
    #[serde(default)]
    sampling: bool,
    #[serde(default)]
    roots: Vec<PathBuf>,
    auth: Option<AuthEntry>,
    protocol: Option<String>,
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
                if !raw.headers.is_empty() || raw.auth.is_some() {
                    return Err("`headers` and `auth` are for a server at a `url`".to_owned());
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
        if raw.roots.iter().any(|root| root.as_os_str().is_empty()) {
            return Err(
                "`roots` has an empty path: name each directory the server may know of".to_owned(),
            );
        }
        if let Some(protocol) = &raw.protocol
            && !PROTOCOL_VERSIONS.contains(&protocol.as_str())
        {
            return Err(format!(
                "`protocol = {protocol:?}` is not an MCP revision the host speaks: use one of \
                 {}, or leave it out to use the newest the server speaks",
                PROTOCOL_VERSIONS.join(", ")
            ));
        }
        Ok(Self {
            transport,
            prefix: raw.prefix,
            tools: raw.tools,
            exclude: raw.exclude,
            timeout: raw.timeout,
            startup_timeout: raw.startup_timeout,
            max_result: raw.max_result,
            required: raw.required,
            sampling: raw.sampling,
            roots: raw.roots,
            auth: raw.auth,
            protocol: raw.protocol,
        })
    }
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
        /// Environment variables it gets besides the few the MCP client always passes
        /// ([`INHERITED_ENV`](crate::mcp::client::INHERITED_ENV)): `NAME` passes the
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

/// Headers a configuration may not set: the transport sets them itself.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> Result<McpServerEntry, String> {
        toml::from_str::<McpServerEntry>(text).map_err(|e| e.to_string())
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
        let empty_root = entry("command = [\"a\"]\nroots = [\"\"]\n").unwrap_err();
        assert!(empty_root.contains("`roots`"), "{empty_root}");
        let revision = entry("command = [\"a\"]\nprotocol = \"2025-13-01\"\n").unwrap_err();
        assert!(
            revision.contains("2025-13-01") && revision.contains("2025-11-25, 2026-07-28"),
            "{revision}"
        );
        let pinned = entry("url = \"http://x/mcp\"\nprotocol = \"2025-06-18\"\n").unwrap();
        assert_eq!(pinned.protocol.as_deref(), Some("2025-06-18"));
        let typo = entry("command = [\"a\"]\nrequird = true\n").unwrap_err();
        assert!(typo.contains("unknown field `requird`"), "{typo}");
    }
}

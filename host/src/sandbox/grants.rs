//! What a tool component may use: directories, environment variables, HTTP hosts, sockets.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::spec::Capability;

/// The capabilities granted to one tool component. Deny by default.
///
/// `Grants::default()` grants nothing:
///
/// * no directories: the tool sees no file system at all;
/// * no environment variables;
/// * no outgoing HTTP: every request fails with `HTTP-request-denied`;
/// * no sockets: TCP, UDP and name lookups are refused.
///
/// Stdin is always closed; stdout and stderr are captured (bounded) into the host's log.
/// Clocks and random numbers are always available.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// Host directories the tool may see, each under a path of its own.
    #[serde(default)]
    pub dirs: Vec<DirGrant>,
    /// Environment variables the tool may read: `NAME` passes the host's value through,
    /// `NAME=value` sets it.
    #[serde(default)]
    pub env: Vec<EnvGrant>,
    /// Hosts the tool may send HTTP requests to: `example.com`, `example.com:8080` or
    /// `*.example.com` (every subdomain, not `example.com` itself; a wildcard matches names,
    /// never addresses). A name is resolved once and the request goes to an address that was
    /// checked: never to a loopback, private, link-local or metadata address (127.0.0.0/8,
    /// ::1, 10/8, 172.16/12, 192.168/16, 169.254/16, fc00::/7, fe80::/10) unless a grant
    /// names that address itself, such as `127.0.0.1:8080`.
    #[serde(default)]
    pub http: Vec<HostPattern>,
    /// `host:port` addresses the tool may open TCP or UDP connections to with `wasi:sockets`.
    #[serde(default)]
    pub sockets: Vec<HostPattern>,
    /// The working directory: one of the granted directories, by its guest path, where the
    /// relative paths the tool uses resolve (`report.txt` is `/data/report.txt` with
    /// `workdir = "/data"`), as a process's working directory does. It grants nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
}

impl Grants {
    /// Whether nothing at all is granted.
    pub fn is_empty(&self) -> bool {
        self == &Grants::default()
    }

    /// Whether these grants give what `capability` asks for.
    pub fn covers(&self, capability: &Capability) -> bool {
        match capability {
            Capability::Http(host) => covers_host(&self.http, host),
            Capability::Socket(addr) => covers_host(&self.sockets, addr),
            Capability::Env(name) => self.env.iter().any(|grant| grant.name() == name),
            Capability::ReadDir(path) => self.dirs.iter().any(|dir| dir.guest == *path),
            Capability::WriteDir(path) => {
                self.dirs.iter().any(|dir| dir.write && dir.guest == *path)
            }
        }
    }

    /// Makes relative host directories relative to `base` (the manifest's directory).
    pub fn resolve_paths(&mut self, base: &Path) {
        for dir in &mut self.dirs {
            if dir.host.is_relative() {
                dir.host = base.join(&dir.host);
            }
        }
    }
}

/// Whether `patterns` allow everything `requested` (itself a host pattern) names. A request
/// that is not a valid pattern is not covered.
fn covers_host(patterns: &[HostPattern], requested: &str) -> bool {
    let Ok(requested) = requested.parse::<HostPattern>() else {
        return false;
    };
    patterns.iter().any(|granted| {
        let port_ok = granted.port.is_none() || granted.port == requested.port;
        let host_ok = if requested.wildcard {
            // `*.a.example.com` is inside `*.example.com`, and `*.example.com` inside itself.
            granted.wildcard
                && (granted.host == requested.host || granted.matches_host(&requested.host))
        } else {
            granted.matches_host(&requested.host)
        };
        port_ok && host_ok
    })
}

/// A host directory made visible to a tool. Neither path may be empty (an empty host path
/// would grant the manifest's own directory without saying so; write `.` for that).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawDirGrant")]
pub struct DirGrant {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the tool sees it, such as `/data`.
    pub guest: String,
    /// Whether the tool may create, change and delete files in it. Read-only by default.
    #[serde(default)]
    pub write: bool,
}

/// A [`DirGrant`] as written, before its paths are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDirGrant {
    host: PathBuf,
    guest: String,
    #[serde(default)]
    write: bool,
}

impl TryFrom<RawDirGrant> for DirGrant {
    type Error = String;

    fn try_from(raw: RawDirGrant) -> Result<Self, Self::Error> {
        let empty = |key: &str, what: &str| {
            format!("the `{key}` of a directory grant (grants.dirs) is empty; give {what}")
        };
        if raw.host.as_os_str().is_empty() {
            return Err(empty(
                "host",
                "the host directory to grant (`.` for the manifest's own directory)",
            ));
        }
        if raw.guest.is_empty() {
            return Err(empty(
                "guest",
                "the path the tool sees it under, such as `/data`",
            ));
        }
        Ok(Self {
            host: raw.host,
            guest: raw.guest,
            write: raw.write,
        })
    }
}

impl DirGrant {
    /// Parses the command-line form `HOST[::GUEST]`; without `::GUEST` the tool sees the
    /// directory under its host path.
    pub fn parse(spec: &str, write: bool) -> Result<Self, String> {
        let (host, guest) = match spec.split_once("::") {
            Some((host, guest)) => (host, guest.to_owned()),
            None => (spec, spec.to_owned()),
        };
        if host.is_empty() || guest.is_empty() {
            return Err(format!(
                "`{spec}` is not a directory grant; write HOST_DIR or HOST_DIR::GUEST_DIR"
            ));
        }
        Ok(Self {
            host: PathBuf::from(host),
            guest,
            write,
        })
    }
}

/// An environment variable granted to a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvGrant {
    /// Pass the host's value of this variable through, if it is set.
    Inherit(String),
    /// Set this variable to this value.
    Set(String, String),
}

impl EnvGrant {
    /// The variable's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Inherit(name) | Self::Set(name, _) => name,
        }
    }
}

impl FromStr for EnvGrant {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let (name, value) = match spec.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (spec, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "`{spec}` is not an environment grant; write NAME (to pass the host's value) \
                 or NAME=value"
            ));
        }
        Ok(match value {
            Some(value) => Self::Set(name.to_owned(), value.to_owned()),
            None => Self::Inherit(name.to_owned()),
        })
    }
}

impl fmt::Display for EnvGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inherit(name) => f.write_str(name),
            Self::Set(name, value) => write!(f, "{name}={value}"),
        }
    }
}

/// A host, optionally with a port, or `*.domain` for every subdomain of a domain.
///
/// Hosts compare case-insensitively. Without a port, any port matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: String,
    wildcard: bool,
    port: Option<u16>,
}

impl HostPattern {
    /// Whether a request to `host` on `port` is allowed by this pattern.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        self.port.is_none_or(|p| p == port) && self.matches_host(host)
    }

    fn matches_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if self.wildcard {
            // A wildcard matches names: `*.0.0.1` is no grant of 127.0.0.1.
            if host.parse::<std::net::IpAddr>().is_ok() {
                return false;
            }
            host.len() > self.host.len() + 1
                && host.ends_with(&self.host)
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.'
        } else {
            host == self.host
        }
    }

    /// The host part (without `*.`).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, when the pattern names one.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Whether this is a `*.domain` pattern.
    pub fn is_wildcard(&self) -> bool {
        self.wildcard
    }
}

impl FromStr for HostPattern {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            Err(format!(
                "`{spec}` is not a host pattern ({why}); write a host such as `example.com`, \
                 `example.com:8080`, `127.0.0.1:8080` or `*.example.com`"
            ))
        };
        if spec.contains("://") || spec.contains('/') {
            return bad("give the host only, without scheme or path");
        }
        let (wildcard, rest) = match spec.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, spec),
        };
        // `[::1]:8080`, `[::1]`, `host:8080`, `host`.
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let Some((host, after)) = inner.split_once(']') else {
                return bad("unclosed `[`");
            };
            match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => return bad("unexpected text after `]`"),
            }
        } else {
            match rest.rsplit_once(':') {
                Some((host, port)) if !host.contains(':') => (host, Some(port)),
                Some(_) => return bad("write IPv6 addresses in brackets, like `[::1]:8080`"),
                None => (rest, None),
            }
        };
        let port = match port {
            Some(port) => match port.parse::<u16>() {
                Ok(port) => Some(port),
                Err(_) => return bad("the port is not a number from 0 to 65535"),
            },
            None => None,
        };
        let valid = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
        if !valid {
            return bad("the host has characters a host name cannot have");
        }
        Ok(Self {
            host: host.trim_end_matches('.').to_ascii_lowercase(),
            wildcard,
            port,
        })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

macro_rules! serde_via_str {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

serde_via_str!(EnvGrant);
serde_via_str!(HostPattern);

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(s: &str) -> HostPattern {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn exact_hosts_match_any_port_unless_one_is_given() {
        assert!(pattern("Example.com").matches("example.COM", 443));
        assert!(!pattern("example.com").matches("api.example.com", 443));
        assert!(pattern("127.0.0.1:8080").matches("127.0.0.1", 8080));
        assert!(!pattern("127.0.0.1:8080").matches("127.0.0.1", 8081));
    }

    #[test]
    fn wildcards_match_subdomains_only() {
        let p = pattern("*.example.com");
        assert!(p.matches("api.example.com", 443));
        assert!(p.matches("a.b.example.com", 80));
        assert!(!p.matches("example.com", 443));
        assert!(!p.matches("evilexample.com", 443));
    }

    #[test]
    fn wildcards_never_match_addresses() {
        assert!(!pattern("*.0.0.1").matches("127.0.0.1", 80));
        assert!(!pattern("*.169.254").matches("169.254.169.254", 80));
        assert!(!pattern("*.0.1").matches("::ffff:127.0.0.1", 80));
        assert!(
            pattern("127.0.0.1").matches("127.0.0.1", 80),
            "an address grant does"
        );
    }

    #[test]
    fn ipv6_needs_brackets() {
        assert!(pattern("[::1]:80").matches("::1", 80));
        assert!("::1:80".parse::<HostPattern>().is_err());
    }

    #[test]
    fn bad_patterns_say_how_to_write_one() {
        let err = "https://example.com".parse::<HostPattern>().unwrap_err();
        assert!(err.contains("without scheme"), "{err}");
        assert!("example.com:http".parse::<HostPattern>().is_err());
    }

    #[test]
    fn requested_capabilities_are_compared_with_grants() {
        let grants = Grants {
            http: vec![pattern("*.example.com"), pattern("wttr.in")],
            env: vec![EnvGrant::Inherit("TZ".into())],
            dirs: vec![DirGrant::parse("/tmp::/notes", true).unwrap_or_else(|e| panic!("{e}"))],
            ..Grants::default()
        };
        assert!(grants.covers(&Capability::Http("wttr.in".into())));
        assert!(grants.covers(&Capability::Http("api.example.com".into())));
        assert!(grants.covers(&Capability::Http("*.api.example.com".into())));
        assert!(!grants.covers(&Capability::Http("example.com".into())));
        assert!(grants.covers(&Capability::Env("TZ".into())));
        assert!(!grants.covers(&Capability::Env("HOME".into())));
        assert!(grants.covers(&Capability::WriteDir("/notes".into())));
        assert!(!grants.covers(&Capability::ReadDir("/data".into())));
        assert!(Grants::default().is_empty());
    }

    #[test]
    fn env_grants_inherit_or_set() {
        assert_eq!("HOME".parse(), Ok(EnvGrant::Inherit("HOME".into())));
        assert_eq!(
            "TZ=Europe/Paris".parse(),
            Ok(EnvGrant::Set("TZ".into(), "Europe/Paris".into()))
        );
        assert!("A-B".parse::<EnvGrant>().is_err());
    }

    #[test]
    fn dir_grants_parse_the_cli_form() {
        let d = DirGrant::parse("./data::/data", false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(d.host, PathBuf::from("./data"));
        assert_eq!(d.guest, "/data");
        assert!(DirGrant::parse("::/data", true).is_err());
    }

    #[test]
    fn dir_grants_with_an_empty_path_are_refused_in_a_manifest_too() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)] // Read by Debug only.
        struct Section {
            dirs: Vec<DirGrant>,
        }
        let read = |text: &str| toml::from_str::<Section>(text).map_err(|e| e.to_string());
        let error = read(r#"dirs = [{ host = "", guest = "/data" }]"#).unwrap_err();
        assert!(
            error.contains("the `host` of a directory grant (grants.dirs) is empty"),
            "{error}"
        );
        let error = read(r#"dirs = [{ host = "data", guest = "" }]"#).unwrap_err();
        assert!(
            error.contains("the `guest` of a directory grant"),
            "{error}"
        );
        let error = read(r#"dirs = [{ host = "data", guest = "/d", mode = 1 }]"#).unwrap_err();
        assert!(error.contains("unknown field `mode`"), "{error}");
        assert!(read(r#"dirs = [{ host = ".", guest = "/data" }]"#).is_ok());
    }
}

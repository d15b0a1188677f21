//! The real MCP peers the tests drive, installed from the registries by
//! `scripts/setup-mcp-peers.sh` (which `just test` runs) into `$TOOLHOST_CACHE/mcp-peers`:
//! `@modelcontextprotocol/server-everything` (npm), `mcp-server-time` and the Python `mcp` SDK
//! (PyPI), this repository's bad fake server (tests/mcp-peers/fake_server.py) and its server whose
//! tools change (tests/mcp-peers/changing_server.py, on the Python SDK).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Where the peers are installed.
pub fn peers_dir() -> PathBuf {
    let cache = match std::env::var_os("TOOLHOST_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("XDG_CACHE_HOME") {
            Some(dir) => PathBuf::from(dir).join("toolhost"),
            None => {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/toolhost")
            }
        },
    };
    cache.join("mcp-peers")
}

/// The installed peers; fails the test, saying what to run, when they are not installed.
pub fn peers() -> Peers {
    let dir = peers_dir();
    let missing: Vec<PathBuf> = [
        dir.join(".installed"),
        dir.join("py/bin/mcp-server-time"),
        dir.join("node_modules/.bin/mcp-server-everything"),
    ]
    .into_iter()
    .filter(|path| !path.exists())
    .collect();
    assert!(
        missing.is_empty(),
        "this test needs the MCP peers, which are not installed ({} missing); run \
         scripts/setup-mcp-peers.sh (`just test` does)",
        missing
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Peers { dir }
}

/// The installed MCP peers.
#[derive(Debug, Clone)]
pub struct Peers {
    dir: PathBuf,
}

impl Peers {
    /// The peers' Python (3.11 with the `mcp` SDK).
    pub fn python(&self) -> PathBuf {
        self.dir.join("py/bin/python")
    }

    /// `mcp-server-time`'s command line.
    pub fn time_server(&self) -> Vec<String> {
        vec![path(&self.dir.join("py/bin/mcp-server-time"))]
    }

    /// server-everything over stdio, on the machine's Node.
    pub fn everything_stdio(&self) -> Vec<String> {
        vec![
            "node".to_owned(),
            path(&self.dir.join("node_modules/.bin/mcp-server-everything")),
            "stdio".to_owned(),
        ]
    }

    /// The fake bad server with `args` (see tests/mcp-peers/fake_server.py).
    pub fn fake_server(&self, args: &[&str]) -> Vec<String> {
        let script = crate::repo_root().join("tests/mcp-peers/fake_server.py");
        let mut command = vec![path(&self.python()), path(&script)];
        command.extend(args.iter().map(|arg| (*arg).to_owned()));
        command
    }

    /// The server whose tools change while it runs (see tests/mcp-peers/changing_server.py),
    /// on the Python SDK.
    pub fn changing_server(&self) -> Vec<String> {
        let script = crate::repo_root().join("tests/mcp-peers/changing_server.py");
        vec![path(&self.python()), path(&script)]
    }

    /// Starts server-everything's Streamable HTTP mode on 127.0.0.1 (a free port), and
    /// returns it once it listens.
    pub async fn everything_http(&self) -> HttpPeer {
        let preload = crate::repo_root().join("tests/mcp-peers/loopback-only.cjs");
        let mut child = Command::new("node")
            .arg("--require")
            .arg(&preload)
            .arg(self.dir.join("node_modules/.bin/mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts server-everything");
        let stderr = child.stderr.take().expect("piped");
        let mut lines = BufReader::new(stderr).lines();
        let find_port = async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(address) = line.strip_prefix("loopback-only: listening on ") {
                    return Some(address.trim().to_owned());
                }
            }
            None
        };
        let address = tokio::time::timeout(Duration::from_secs(60), find_port)
            .await
            .ok()
            .flatten()
            .expect("server-everything says where it listens");
        // Keep reading its stderr, so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        HttpPeer {
            _child: child,
            url: format!("http://{address}/mcp"),
        }
    }

    /// Starts the fake Streamable HTTP server (tests/mcp-peers/fake_http_server.py), answering
    /// with JSON bodies or with event streams (`sse`), and returns it once it listens.
    pub async fn fake_http_server(&self, mode: &str) -> HttpPeer {
        let script = crate::repo_root().join("tests/mcp-peers/fake_http_server.py");
        let mut child = Command::new(self.python())
            .arg(&script)
            .arg(mode)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("python starts the fake HTTP server");
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let port = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .ok()
            .and_then(|line| line.ok().flatten())
            .expect("the fake HTTP server prints its port");
        HttpPeer {
            _child: child,
            url: format!("http://127.0.0.1:{}/mcp", port.trim()),
        }
    }
}

/// An HTTP server the tests started; stopped when dropped.
pub struct HttpPeer {
    _child: Child,
    /// Its endpoint.
    pub url: String,
}

fn path(path: &Path) -> String {
    path.to_str().expect("UTF-8 paths").to_owned()
}

/// Whether process `pid` is gone (a zombie nobody reaped counts as gone).
pub fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name in parentheses: `PID (comm) S ...`.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// Waits until `condition` holds, checking every 20 ms; false if it still does not after
/// `patience` (a guard against hanging, not a measurement).
pub async fn eventually(patience: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

//! A real Redis (Debian's `redis-server`, installed by scripts/setup-services.sh) started by a
//! test on 127.0.0.1, on a free port, in a private directory, with no persistence; stopped
//! with SIGTERM when dropped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `redis-server` of the test's own.
pub struct Redis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Redis {
    /// Starts it and waits until it answers `PING`; fails naming the script to run when
    /// `redis-server` is missing.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): run scripts/setup-services.sh (`just test` \
                     does)"
                )
            });
        let redis = Self {
            child,
            port,
            _dir: dir,
        };
        for _ in 0..200 {
            if redis.cli(&["PING"]).trim() == "PONG" {
                return redis;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server on port {port} never answered PING");
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// What `redis-cli` prints for `args` (an empty string when it cannot connect).
    pub fn cli(&self, args: &[&str]) -> String {
        let output = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .stderr(Stdio::null())
            .output();
        match output {
            Ok(output) => String::from_utf8_lossy(&output.stdout).into_owned(),
            Err(_) => String::new(),
        }
    }

    /// The keys matching `pattern` (`SCAN`, not `KEYS`, as one would on a shared server).
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let out = self.cli(&["--scan", "--pattern", pattern]);
        out.lines().map(str::to_owned).collect()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        crate::mcp::signal(self.child.id(), "TERM");
        let _ = self.child.wait();
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

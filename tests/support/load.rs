//! Load on `host mcp --http` from many clients at once: a JSON-RPC client that never panics
//! (every failure is an outcome to count), latency percentiles, and the server's resident
//! memory. Used by the soak (`just soak`) and the replica tests (`tests/scale_out`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp::messages;

/// What went wrong with one request, as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No answer within the client's timeout.
    Timeout,
    /// The connection failed or broke before a whole answer arrived.
    Transport(String),
    /// An HTTP status other than 2xx, with the start of the body.
    Status(u16, String),
    /// A 2xx answer without the JSON-RPC answer to the request in it.
    NoAnswer(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout => write!(f, "no answer within the timeout"),
            Self::Transport(error) => write!(f, "transport: {error}"),
            Self::Status(status, body) => write!(f, "HTTP {status}: {body}"),
            Self::NoAnswer(body) => write!(f, "no JSON-RPC answer in: {body}"),
        }
    }
}

/// A JSON-RPC answer, and the response header `x-replica` (set by a balancer the tests
/// configure) when there was one.
#[derive(Debug, Clone)]
pub struct Answer {
    pub message: Value,
    pub replica: Option<String>,
}

/// A client of one MCP endpoint (`http://HOST:PORT/mcp`) over one kept-alive connection
/// pool, with a timeout on every request.
pub struct RpcClient {
    http: reqwest::Client,
    url: String,
    /// The session, once `initialize` gave one (session mode).
    pub session: Option<String>,
    next_id: i64,
}

impl RpcClient {
    /// A client of `url` whose every request gives up after `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Self {
        let http = crate::http_client()
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .expect("an HTTP client");
        Self {
            http,
            url: url.to_owned(),
            session: None,
            next_id: 0,
        }
    }

    /// `initialize`, then `notifications/initialized`; keeps the session id when the server
    /// gave one. Forgets any previous session first.
    pub async fn initialize(&mut self) -> Result<Answer, Failure> {
        self.session = None;
        let answer = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": { "name": "toolhost-load", "version": "0" },
                }),
            )
            .await?;
        let notification = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let response = self.send(&notification).await?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(Failure::Status(status.as_u16(), clip(&body)));
        }
        Ok(answer)
    }

    /// `tools/call` of `tool` with `arguments`.
    pub async fn call(&mut self, tool: &str, arguments: &Value) -> Result<Answer, Failure> {
        self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }

    /// Sends request `method` and returns its answer, read from a JSON or an SSE body.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Answer, Failure> {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let response = self.send(&message).await?;
        if let Some(session) = response.headers().get("mcp-session-id")
            && let Ok(session) = session.to_str()
        {
            self.session = Some(session.to_owned());
        }
        let replica = response
            .headers()
            .get("x-replica")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let status = response.status();
        let body = response.text().await.map_err(failure)?;
        if !status.is_success() {
            return Err(Failure::Status(status.as_u16(), clip(&body)));
        }
        messages(&body)
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(id)))
            .map(|message| Answer { message, replica })
            .ok_or_else(|| Failure::NoAnswer(clip(&body)))
    }

    async fn send(&self, message: &Value) -> Result<reqwest::Response, Failure> {
        crate::mcp::post(&self.http, &self.url, self.session.as_deref(), message)
            .send()
            .await
            .map_err(failure)
    }
}

fn failure(error: reqwest::Error) -> Failure {
    if error.is_timeout() {
        Failure::Timeout
    } else {
        // The whole chain: "error sending request" alone does not say what broke.
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        Failure::Transport(text)
    }
}

fn clip(body: &str) -> String {
    body.chars().take(300).collect()
}

/// The text of a `tools/call` answer's first content item; an error when the answer is a
/// JSON-RPC error or a tool error.
pub fn tool_text(message: &Value) -> Result<&str, String> {
    if message.get("error").is_some() {
        return Err(format!("JSON-RPC error: {message}"));
    }
    if message["result"]["isError"] == json!(true) {
        return Err(format!("tool error: {message}"));
    }
    message["result"]["content"][0]["text"]
        .as_str()
        .ok_or_else(|| format!("no text content in {message}"))
}

/// The value at percentile `p` (0-100) of `sorted`, which must be sorted and not empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The resident memory of process `pid` in KiB (`VmRSS` of `/proc/PID/status`).
pub fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

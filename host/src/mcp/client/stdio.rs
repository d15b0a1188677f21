//! A stdio MCP server: its process (in a process group of its own, so that stopping it
//! stops whatever it started too), and a transport over its stdin and stdout that bounds
//! what it reads.
//!
//! rmcp's own stdio transport drops a line that is too long or not JSON without a word, which
//! leaves the request it answered waiting for its timeout. This one answers such a request
//! at once with an error saying what came instead.

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, watch};

use super::config::INHERITED_ENV;
use crate::lines::{Line, LineReader};
use crate::process::die_with_parent;
use crate::sandbox::EnvGrant;

/// The `data.toolhost` of an error this transport makes up for a request whose answer was too
/// large.
pub(super) const TOO_LARGE: &str = "result_too_large";
/// The same, for an answer that was not a JSON-RPC message.
pub(super) const MALFORMED: &str = "malformed_answer";

/// How many lines of a server's stderr are kept for error messages.
const STDERR_LINES: usize = 8;
/// The longest stderr line kept (the rest is cut off).
const STDERR_LINE_BYTES: usize = 2048;

/// A running server process and what is known about it.
pub(super) struct Process {
    pid: u32,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    stderr: Tail,
    exited: watch::Receiver<Option<ExitStatus>>,
    protocol: Tail,
}

/// The last lines of something, shared with the task that reads it.
#[derive(Debug, Clone, Default)]
pub(super) struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines.push_back(line);
        if lines.len() > STDERR_LINES {
            lines.pop_front();
        }
    }

    /// The lines, joined with ` | `; `None` when there are none.
    pub(super) fn text(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
    }
}

/// Starts `program args` in `cwd` with only [`INHERITED_ENV`] and `env` from the host's
/// environment, as the leader of a new process group. `max_line` bounds each line read from
/// it; `on_message` sees every message before rmcp does (to notice `tools/list_changed`
/// before the answer that follows it).
pub(super) fn spawn(
    server: &str,
    program: &Path,
    args: &[String],
    env: &[EnvGrant],
    cwd: Option<&Path>,
    max_line: usize,
    on_message: Arc<dyn Fn(&ServerJsonRpcMessage) + Send + Sync>,
) -> std::io::Result<(StdioTransport, Process)> {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(
            INHERITED_ENV
                .iter()
                .filter_map(|name| std::env::var_os(name).map(|value| (name.to_string(), value))),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    for grant in env {
        match grant {
            EnvGrant::Set(name, value) => command.env(name, value),
            EnvGrant::Inherit(name) => match std::env::var_os(name) {
                Some(value) => command.env(name, value),
                None => &mut command,
            },
        };
    }
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    die_with_parent(&mut command);
    let mut child = command.spawn()?;
    let pid = child.id().unwrap_or_default();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the server's stdio was not piped"));
    };
    let stderr_tail = Tail::default();
    tokio::spawn(read_stderr(server.to_owned(), stderr, stderr_tail.clone()));
    let (exit_tx, exited) = watch::channel(None);
    tokio::spawn(wait_for(child, exit_tx));
    let protocol = Tail::default();
    let (tx, incoming) = mpsc::channel(64);
    tokio::spawn(read_messages(
        server.to_owned(),
        stdout,
        max_line,
        tx,
        on_message,
        protocol.clone(),
    ));
    let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
    let transport = StdioTransport {
        stdin: stdin.clone(),
        incoming,
    };
    let process = Process {
        pid,
        stdin,
        stderr: stderr_tail,
        exited,
        protocol,
    };
    Ok((transport, process))
}

async fn wait_for(mut child: Child, exited: watch::Sender<Option<ExitStatus>>) {
    if let Ok(status) = child.wait().await {
        let _ = exited.send(Some(status));
    }
}

impl Process {
    /// How it ended, when it has.
    pub(super) fn exit_status(&self) -> Option<ExitStatus> {
        *self.exited.borrow()
    }

    /// The last lines it wrote to stderr.
    pub(super) fn stderr(&self) -> Option<String> {
        self.stderr.text()
    }

    /// The last lines of its stdout that were not JSON-RPC messages.
    pub(super) fn protocol_errors(&self) -> Option<String> {
        self.protocol.text()
    }

    /// Its process id, which is also its process group's.
    pub(super) fn pid(&self) -> u32 {
        self.pid
    }

    /// Stops it as the MCP specification asks: close its stdin and give it `grace` to exit,
    /// then SIGTERM its process group and give it `grace` again; then SIGKILL whatever is
    /// left of the group (what it started and left behind included).
    pub(super) async fn stop(&self, grace: Duration) {
        self.stdin.lock().await.take();
        let mut exited = self.exited.clone();
        let ended = async |exited: &mut watch::Receiver<Option<ExitStatus>>| {
            tokio::time::timeout(grace, exited.wait_for(Option::is_some))
                .await
                .is_ok()
        };
        let started = std::time::Instant::now();
        if ended(&mut exited).await {
            tracing::debug!(pid = self.pid, took = ?started.elapsed(), "an MCP server exited when its stdin closed");
        } else {
            signal_group(self.pid, libc::SIGTERM);
            if ended(&mut exited).await {
                tracing::debug!(pid = self.pid, "an MCP server exited on SIGTERM");
            } else {
                tracing::warn!(pid = self.pid, "an MCP server ignored SIGTERM; killing it");
            }
        }
        signal_group(self.pid, libc::SIGKILL);
    }
}

impl Drop for Process {
    /// Whatever happened before, nothing of the server outlives it.
    fn drop(&mut self) {
        signal_group(self.pid, libc::SIGKILL);
    }
}

/// Sends `signal` to process group `pgid`; a group that is gone is fine.
fn signal_group(pgid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg only sends a signal; it touches no memory of this process.
    #[allow(unsafe_code)]
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Logs the server's stderr (at info, so `-v` shows it) and keeps its last lines.
async fn read_stderr(server: String, stderr: impl AsyncRead + Unpin, tail: Tail) {
    let mut reader = BufReader::new(stderr);
    let mut lines = LineReader::new(STDERR_LINE_BYTES);
    while let Ok(Some(line)) = lines.next(&mut reader).await {
        let text = match line {
            Line::Whole => String::from_utf8_lossy(lines.line()).trim_end().to_owned(),
            Line::Oversized { size, .. } => format!("({size} bytes on one line, not shown)"),
        };
        if text.is_empty() {
            continue;
        }
        tracing::info!(target: "toolhost::mcp::stderr", server = %server, "{text}");
        tail.push(text);
    }
}

/// Reads the server's messages, one per line, and hands them to rmcp. A line over
/// `max_line`, or one that is JSON with an `id` but not a JSON-RPC message, is turned into
/// an error answer to that `id`; a line that is not JSON at all is logged and kept for the
/// error message of whatever call then times out.
pub(super) async fn read_messages(
    server: String,
    stdout: impl AsyncRead + Unpin,
    max_line: usize,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    on_message: Arc<dyn Fn(&ServerJsonRpcMessage) + Send + Sync>,
    protocol: Tail,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut lines = LineReader::new(max_line);
    loop {
        let line = match lines.next(&mut reader).await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(error) => {
                tracing::warn!(server = %server, "cannot read the MCP server's stdout: {error}");
                break;
            }
        };
        let message = match line {
            Line::Whole => match parse(lines.line()) {
                Parsed::Message(message) => *message,
                Parsed::Skip => continue,
                Parsed::Malformed { id, problem } => {
                    tracing::warn!(server = %server, "the MCP server answered with a malformed message: {problem}");
                    protocol.push(problem.clone());
                    error_answer(id, MALFORMED, &problem, json!({}))
                }
                Parsed::Garbage(excerpt) => {
                    let note = format!("wrote a line that is not JSON-RPC: {excerpt}");
                    tracing::warn!(server = %server, "the MCP server {note}");
                    protocol.push(note);
                    continue;
                }
            },
            Line::Oversized { size, id } => {
                let id = id.and_then(|id| serde_json::from_slice::<RequestId>(&id).ok());
                let Some(id) = id else {
                    let note = format!(
                        "wrote a line of {size} bytes (over the limit of {max_line}) with no request id"
                    );
                    tracing::warn!(server = %server, "the MCP server {note}");
                    protocol.push(note);
                    continue;
                };
                error_answer(
                    id,
                    TOO_LARGE,
                    &format!("the answer has {size} bytes"),
                    json!({ "size": size }),
                )
            }
        };
        on_message(&message);
        if tx.send(message).await.is_err() {
            break;
        }
    }
}

enum Parsed {
    Message(Box<ServerJsonRpcMessage>),
    /// A notification that is not MCP's (rmcp ignores those too).
    Skip,
    Malformed {
        id: RequestId,
        problem: String,
    },
    Garbage(String),
}

fn parse(line: &[u8]) -> Parsed {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Skip;
    }
    let error = match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
        Ok(message) => return Parsed::Message(Box::new(message)),
        Err(error) => error,
    };
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Parsed::Garbage(excerpt(line));
    };
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    match (id, value.get("method")) {
        (_, Some(_)) => {
            // A request or notification rmcp does not know: not an answer to anything.
            tracing::debug!("ignoring an unknown message from an MCP server: {error}");
            Parsed::Skip
        }
        (Some(id), None) => Parsed::Malformed {
            id,
            problem: format!("{error} in {}", excerpt(line)),
        },
        (None, None) => Parsed::Garbage(excerpt(line)),
    }
}

/// The start of `line`, for a message.
fn excerpt(line: &[u8]) -> String {
    const MAX: usize = 120;
    let text = String::from_utf8_lossy(&line[..line.len().min(MAX)]).into_owned();
    if line.len() > MAX {
        format!("`{text}...`")
    } else {
        format!("`{text}`")
    }
}

/// An error answer to request `id`, marked as made up by this transport.
fn error_answer(id: RequestId, kind: &str, message: &str, mut data: Value) -> ServerJsonRpcMessage {
    data["toolhost"] = json!(kind);
    ServerJsonRpcMessage::error(
        ErrorData::new(ErrorCode::INTERNAL_ERROR, message.to_owned(), Some(data)),
        Some(id),
    )
}

/// JSON-RPC over a server's stdin and stdout.
pub(super) struct StdioTransport {
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stdin.lock().await.take();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_that_are_not_json_rpc_are_told_apart() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
        assert!(matches!(parse(ok), Parsed::Message(_)));
        let malformed = br#"{"jsonrpc":"2.0","id":4,"error":"boom"}"#;
        assert!(
            matches!(
                parse(malformed),
                Parsed::Malformed {
                    id: RequestId::Number(4),
                    ..
                }
            ),
            "an answer that names its request fails that request"
        );
        assert!(matches!(parse(b"Listening on stdio"), Parsed::Garbage(_)));
        assert!(matches!(parse(br#"{"hello": 1}"#), Parsed::Garbage(_)));
        let foreign = br#"{"jsonrpc":"2.0","method":"$/progress","params":{}}"#;
        assert!(
            !matches!(
                parse(foreign),
                Parsed::Malformed { .. } | Parsed::Garbage(_)
            ),
            "a notification is never taken for an answer"
        );
        assert!(matches!(parse(b"  \r"), Parsed::Skip));
    }
}

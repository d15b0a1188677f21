//! MCP over stdio: one JSON-RPC message per line on stdin and stdout.
//!
//! The transport is toolhost's own rather than rmcp's, for what it does with bad input: a line
//! that is not JSON gets a parse error (-32700) and a message that is not a valid request an
//! invalid-request error (-32600, with its id when it has one), where rmcp's drops the first
//! silently; a line over the size limit is answered (-32600) and skipped without being kept in
//! memory, where rmcp's drops it and leaves the client waiting. Either way the server goes on
//! reading.

use std::future::Future;
use std::io;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rmcp::model::{
    ClientNotification, ErrorCode, ErrorData, JsonRpcError, JsonRpcMessage, JsonRpcNotification,
    RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt as _};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;

use super::McpServer;
use super::direct::DirectCalls;
use super::lines;

/// How long calls in flight may still answer after the client closed its end, as rmcp waits
/// for those of its handlers. The calls served directly get the same time, counted from the
/// same moment: the end of the input, not the end of rmcp's wait.
const CLOSED_GRACE: Duration = Duration::from_secs(5);

/// How the stdio server runs.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// The largest message read, in bytes; a longer line is answered with an error and skipped.
    pub max_message: usize,
    /// How long a shutdown waits for calls in flight before cancelling them.
    pub shutdown_grace: Duration,
}

impl Default for StdioOptions {
    /// 4 MiB messages (as over HTTP), 10 s of grace.
    fn default() -> Self {
        Self {
            max_message: 4 << 20,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Serves `server` on stdin and stdout until the client closes stdin or `shutdown` completes.
/// On `shutdown`, calls in flight get up to [`StdioOptions::shutdown_grace`] to finish
/// ([`McpServer::drain`]); the rest are cancelled.
pub async fn serve_stdio(
    server: McpServer,
    options: StdioOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    serve_lines(server, stdin, stdout, options, shutdown).await
}

/// Serves `server` over any pair of streams carrying one message per line (a socket, an
/// in-memory pipe), as [`serve_stdio`] does on stdin and stdout.
pub async fn serve_lines<R, W>(
    server: McpServer,
    input: R,
    output: W,
    options: StdioOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let grace = options.shutdown_grace;
    let transport = LineTransport::new(input, output, options.max_message);
    let (direct, output) = (transport.direct.clone(), transport.output.clone());
    let closed = transport.closed.clone();
    tokio::pin!(shutdown);
    let running = tokio::select! {
        running = server.clone().serve(transport) => {
            running.context("the MCP session did not start")?
        }
        () = &mut shutdown => return Ok(()),
    };
    // From now on, `tools/call` lines of a session that began with `initialize` are served
    // without rmcp's generic handling.
    if let Some(info) = running.peer().peer_info()
        && let Some(calls) = DirectCalls::new(server.clone(), output, &info.protocol_version)
    {
        let _ = direct.set(calls);
    }
    let stop = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        quit = &mut waiting => {
            tracing::debug!("the MCP client closed the connection: {quit:?}");
            if let Some(direct) = direct.get() {
                let since_closed = closed.get().map_or(Duration::ZERO, Instant::elapsed);
                direct.finish(CLOSED_GRACE.saturating_sub(since_closed)).await;
            }
        }
        () = &mut shutdown => {
            let drained = server.drain(grace).await;
            if !drained {
                tracing::warn!("calls still running after {grace:?} are cancelled");
            }
            if let Some(direct) = direct.get() {
                // A call that finished in time may still be writing its answer: stopping
                // it now would drop that answer.
                if drained {
                    direct.finish(grace).await;
                } else {
                    direct.stop().await;
                }
            }
            stop.cancel();
            let _ = waiting.await;
        }
    }
    Ok(())
}

/// JSON-RPC messages, one per line, with errors answered as the transport's own.
struct LineTransport<R, W> {
    input: BufReader<R>,
    output: Arc<Mutex<W>>,
    /// The line read so far (a read may be cancelled halfway and resumed).
    line: Vec<u8>,
    /// How many bytes of an oversized line were seen; it is skipped to its end.
    oversized: Option<usize>,
    max: usize,
    /// Once the session has begun: the `tools/call` requests served without rmcp.
    direct: Arc<OnceLock<DirectCalls<W>>>,
    /// When the input ended.
    closed: Arc<OnceLock<Instant>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn new(input: R, output: W, max: usize) -> Self {
        Self {
            input: BufReader::with_capacity(64 * 1024, input),
            output: Arc::new(Mutex::new(output)),
            line: Vec::new(),
            oversized: None,
            max,
            direct: Arc::new(OnceLock::new()),
            closed: Arc::new(OnceLock::new()),
        }
    }

    /// Reads up to the end of a line; `Ok(false)` at the end of the input. Cancel-safe: what
    /// was read is kept in `self` and the next call goes on.
    async fn read_line(&mut self) -> io::Result<bool> {
        loop {
            let buffer = self.input.fill_buf().await?;
            if buffer.is_empty() {
                let _ = self.closed.set(Instant::now());
                return Ok(false);
            }
            let (chunk, complete) = match buffer.iter().position(|&b| b == b'\n') {
                Some(end) => (&buffer[..end], true),
                None => (buffer, false),
            };
            let taken = chunk.len() + usize::from(complete);
            match &mut self.oversized {
                Some(seen) => *seen += chunk.len(),
                None if self.line.len() + chunk.len() > self.max => {
                    self.oversized = Some(self.line.len() + chunk.len());
                    self.line = Vec::new();
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.input.consume(taken);
            if complete {
                return Ok(true);
            }
        }
    }

    /// Answers a message that cannot be served, without waiting for the write (so that
    /// `receive` stays cancel-safe); writes keep their order through the output's lock.
    fn answer(&mut self, id: Option<RequestId>, error: ErrorData) {
        let message: TxJsonRpcMessage<RoleServer> =
            JsonRpcMessage::Error(JsonRpcError::new(id, error));
        let output = self.output.clone();
        tokio::spawn(async move { lines::write(&output, &message).await });
    }

    /// What to do with one complete line.
    fn parse(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let error = match serde_json::from_slice(line) {
            Ok(message) => return Some(message),
            Err(error) => error,
        };
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            tracing::warn!("a line on stdin is not JSON: {error}");
            self.answer(
                None,
                ErrorData::new(
                    ErrorCode::PARSE_ERROR,
                    format!("Parse error: {error}"),
                    None,
                ),
            );
            return None;
        };
        let id = value.get("id").and_then(|id| match id {
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            Value::String(s) => Some(RequestId::String(s.as_str().into())),
            _ => None,
        });
        match id {
            // A notification gets no answer, even a wrong one; unknown ones are ignored.
            None if value.get("method").is_some() => {
                tracing::debug!("ignored a notification rmcp cannot read: {error}");
            }
            id => {
                tracing::warn!("a message on stdin is not a valid JSON-RPC request: {error}");
                self.answer(
                    id,
                    ErrorData::invalid_request(format!("Invalid request: {error}"), None),
                );
            }
        }
        None
    }
}

impl<R, W> LineTransport<R, W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A `notifications/cancelled` for a call served directly cancels it (rmcp, which gets
    /// the notification too, does not know the request).
    fn see_cancelled(&self, message: &RxJsonRpcMessage<RoleServer>) {
        if let Some(direct) = self.direct.get()
            && let JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ClientNotification::CancelledNotification(cancelled),
                ..
            }) = message
            && let Some(id) = &cancelled.params.request_id
        {
            direct.cancel(id);
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        async move { lines::write(&output, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    tracing::warn!("cannot read stdin: {error}");
                    return None;
                }
            }
            if let Some(size) = self.oversized.take() {
                tracing::warn!(
                    "skipped a message of {size} bytes on stdin (limit {})",
                    self.max
                );
                self.answer(
                    None,
                    ErrorData::invalid_request(
                        format!(
                            "the message is too large: {size} bytes, the limit is {}",
                            self.max
                        ),
                        None,
                    ),
                );
                continue;
            }
            if let Some(direct) = self.direct.get()
                && direct.start(&self.line)
            {
                self.line.clear();
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let parsed = self.parse(&line);
            // Keep the buffer's allocation for the next line.
            self.line = line;
            self.line.clear();
            if let Some(message) = parsed {
                self.see_cancelled(&message);
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.lock().await.flush().await
    }
}

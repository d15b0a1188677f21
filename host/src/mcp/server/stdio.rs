//! MCP over stdio: one JSON-RPC message per line on stdin and stdout.
//!
//! The transport is toolhost's own rather than rmcp's, for what it does with bad input: a line
//! that is not JSON gets a parse error (-32700) and a message that is not a valid request an
//! invalid-request error (-32600, with its id when it has one), where rmcp's drops the first
//! silently; a line over the size limit is answered (-32600) and skipped without being kept in
//! memory, where rmcp's drops it and leaves the client waiting. Either way the server goes on
//! reading. A message that is not JSON-RPC, or a request whose params do not fit its method, is
//! answered as over HTTP ([`jsonrpc`](super::jsonrpc)). A request whose id is that of a request
//! still in flight is answered with an invalid-request error naming the id, and not served (rmcp
//! keeps one request per id, and would drop one of the two answers).
//!
//! A client that does not read its answers is not read from either: once
//! [`StdioOptions::max_pending`] answers are owed, the server reads no more requests until the
//! client reads. A client that closes stdin gives the calls in flight 5 s to answer (read or
//! not); then the session ends, whatever it still had to write.

use std::future::Future;
use std::io;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rmcp::model::{ClientNotification, ErrorData, JsonRpcMessage, JsonRpcNotification, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt as _};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};

use super::McpServer;
use super::direct::DirectCalls;
use super::jsonrpc::{self, Refused};
use super::observed::Observed;
use super::output::Output;
use crate::lines::{Line, LineReader};

/// How long calls in flight may still answer after the client closed its end, as rmcp waits
/// for those of its handlers. The calls served directly get the same time, counted from the
/// same moment: the end of the input, not the end of rmcp's wait.
const CLOSED_GRACE: Duration = Duration::from_secs(5);

/// How often a reader waiting for its client to read looks whether stdin was closed.
const HANG_UP_POLL: Duration = Duration::from_millis(100);

/// How the stdio server runs.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// The largest message read, in bytes; a longer line is answered with an error and skipped.
    pub max_message: usize,
    /// How long a shutdown waits for calls in flight before cancelling them.
    pub shutdown_grace: Duration,
    /// How many answers may be owed to the client (requests read, not yet answered) before
    /// the server stops reading until the client reads.
    pub max_pending: usize,
}

impl Default for StdioOptions {
    /// 4 MiB messages (as over HTTP), 10 s of grace, 256 answers owed.
    fn default() -> Self {
        Self {
            max_message: 4 << 20,
            shutdown_grace: Duration::from_secs(10),
            max_pending: 256,
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
    let transport = LineTransport::new(stdin, stdout, &options).with_hang_up(stdin_hung_up);
    serve(server, transport, options, shutdown).await
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
    let transport = LineTransport::new(input, output, &options);
    serve(server, transport, options, shutdown).await
}

async fn serve<R, W>(
    server: McpServer,
    transport: LineTransport<R, W>,
    options: StdioOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let grace = options.shutdown_grace;
    let (direct, output) = (transport.direct.clone(), transport.output.clone());
    let closed = transport.closed.clone();
    tokio::pin!(shutdown);
    let running = tokio::select! {
        running = Observed(server.clone()).serve(transport) => {
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
    output: Arc<Output<W>>,
    /// The lines, up to the size limit (a read may be cancelled halfway and resumed).
    lines: LineReader,
    /// Once the session has begun: the `tools/call` requests served without rmcp.
    direct: Arc<OnceLock<DirectCalls<W>>>,
    /// When the input ended (or its writer closed it, with lines still unread).
    closed: Arc<OnceLock<Instant>>,
    /// Whether the input's writer closed it, though lines may remain unread.
    hung_up: Option<fn() -> bool>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn new(input: R, output: W, options: &StdioOptions) -> Self {
        Self {
            input: BufReader::with_capacity(64 * 1024, input),
            output: Arc::new(Output::new(output, options.max_pending)),
            lines: LineReader::new(options.max_message),
            direct: Arc::new(OnceLock::new()),
            closed: Arc::new(OnceLock::new()),
            hung_up: None,
        }
    }

    /// Looks with `hung_up` whether the client closed the input, while waiting for it to
    /// read.
    fn with_hang_up(mut self, hung_up: fn() -> bool) -> Self {
        self.hung_up = Some(hung_up);
        self
    }

    /// Waits while as many answers are owed as allowed (the client is not reading); `false`
    /// when the client was given up on. Cancel-safe.
    fn wait_for_room(&self) -> impl Future<Output = bool> + Send + 'static {
        let (output, closed, hung_up) = (self.output.clone(), self.closed.clone(), self.hung_up);
        async move {
            loop {
                if output.is_abandoned() {
                    return false;
                }
                if !output.is_full() {
                    return true;
                }
                match hung_up {
                    Some(hung_up) => {
                        let _ = tokio::time::timeout(HANG_UP_POLL, output.room()).await;
                        if hung_up() {
                            input_closed(&closed, &output);
                        }
                    }
                    None => output.room().await,
                }
            }
        }
    }

    /// Answers a message that cannot be served, without waiting for the write (so that
    /// `receive` stays cancel-safe); writes keep their order through the output's lock.
    fn refuse(&self, refused: &Refused) {
        let output = self.output.clone();
        let message = refused.message();
        tokio::spawn(async move { output.send_own(&message).await });
    }

    /// Answers a line of `size` bytes, over the limit and skipped, with the id it had when
    /// that could be found.
    fn too_large(&self, size: usize, id: Option<Vec<u8>>) {
        let max = self.lines.max();
        tracing::warn!("skipped a message of {size} bytes on stdin (limit {max})");
        let id = id
            .and_then(|id| serde_json::from_slice::<RequestId>(&id).ok())
            .and_then(|id| serde_json::to_value(id).ok());
        let error = ErrorData::invalid_request(
            format!("the message is too large: {size} bytes, the limit is {max}"),
            None,
        );
        self.refuse(&Refused { id, error });
    }

    /// What to do with one complete line.
    fn parse(&self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let read = match serde_json::from_slice(line) {
            Ok(message) => jsonrpc::check_read(message).map(Some),
            Err(_) => match serde_json::from_slice::<Value>(line) {
                Ok(value) => jsonrpc::read(value),
                Err(error) => Err(Refused::parse_error(&error)),
            },
        };
        match read {
            Ok(Some(message)) => Some(message),
            // A notification gets no answer, even a wrong one; unknown ones are ignored.
            Ok(None) => {
                tracing::debug!("ignored a notification rmcp cannot read");
                None
            }
            Err(refused) => {
                tracing::warn!("refused a message on stdin: {}", refused.error.message);
                self.refuse(&refused);
                None
            }
        }
    }

    /// A request read is an answer owed; a `notifications/cancelled` settles it (a cancelled
    /// request gets no answer), and cancels it if it is a call served directly (rmcp, which
    /// gets the notification too, does not know the request). `false` for a request whose id
    /// is that of one in flight: it is answered with an error here, not served.
    fn see(&self, message: &RxJsonRpcMessage<RoleServer>) -> bool {
        match message {
            JsonRpcMessage::Request(request) if !self.output.owe(&request.id) => {
                tracing::warn!(id = %request.id, "refused a request: its id is in flight");
                self.refuse(&Refused::id_in_flight(&request.id));
                return false;
            }
            JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ClientNotification::CancelledNotification(cancelled),
                ..
            }) => {
                if let Some(id) = &cancelled.params.request_id {
                    if let Some(direct) = self.direct.get() {
                        direct.cancel(id);
                    }
                    self.output.settle(id);
                }
            }
            _ => {}
        }
        true
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
        async move { output.send(&item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.wait_for_room().await {
                tracing::warn!("the client closed stdin without reading its answers");
                return None;
            }
            let line = match self.lines.next(&mut self.input).await {
                Ok(Some(line)) => line,
                Ok(None) => {
                    input_closed(&self.closed, &self.output);
                    return None;
                }
                Err(error) => {
                    tracing::warn!("cannot read stdin: {error}");
                    return None;
                }
            };
            if let Line::Oversized { size, id } = line {
                self.too_large(size, id);
                continue;
            }
            let line = self.lines.line();
            if let Some(direct) = self.direct.get()
                && direct.start(line)
            {
                continue;
            }
            if let Some(message) = self.parse(line)
                && self.see(&message)
            {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // A client that does not read is not waited for.
        self.output.flush(Duration::from_secs(1)).await
    }
}

/// The input ended, or its writer closed it (`closed` says when): the calls in flight have
/// [`CLOSED_GRACE`] to answer, then the client is given up on.
fn input_closed<W>(closed: &OnceLock<Instant>, output: &Arc<Output<W>>)
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    if closed.set(Instant::now()).is_ok() {
        let output = output.clone();
        tokio::spawn(async move {
            tokio::time::sleep(CLOSED_GRACE).await;
            output.abandon();
        });
    }
}

/// Whether stdin is a pipe (or socket) whose writer closed it, even with lines left unread.
#[cfg(unix)]
fn stdin_hung_up() -> bool {
    let mut poll = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `poll` is one valid pollfd, and a timeout of 0 does not block: poll(2) only
    // writes its `revents`.
    #[allow(unsafe_code)]
    let ready = unsafe { libc::poll(&raw mut poll, 1, 0) };
    ready > 0 && poll.revents & libc::POLLHUP != 0
}

#[cfg(not(unix))]
fn stdin_hung_up() -> bool {
    false
}

//! The output of a stdio session: JSON-RPC messages written one per line, by the transport and
//! by the `tools/call` requests served directly, and the answers still owed to the client.
//!
//! A client that writes requests and never reads their answers would make the server hold
//! every answer: here each request read is an answer owed until it is written (or the request
//! is cancelled), and the reader waits for room ([`Output::room`]) once
//! [`StdioOptions::max_pending`](super::StdioOptions::max_pending) are owed. A session whose
//! client is gone is [abandoned](Output::abandon): every write waiting for the client fails at
//! once, so that nothing waits on a client that will never read.

use std::collections::HashSet;
use std::io;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{JsonRpcMessage, RequestId};
use rmcp::service::TxJsonRpcMessage;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::lock;

/// Where a session's messages go.
pub(super) struct Output<W> {
    writer: tokio::sync::Mutex<W>,
    owed: Mutex<Owed>,
    /// Signalled when an answer is no longer owed.
    settled: Notify,
    /// How many answers may be owed before the reader waits.
    max_owed: usize,
    abandoned: CancellationToken,
}

#[derive(Default)]
struct Owed {
    /// The requests read and not yet answered (a client may reuse an id once its request
    /// is answered).
    requests: HashSet<RequestId>,
    /// The errors the transport answers on its own, on their way out.
    own: usize,
    total: usize,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes to `writer`; the reader waits once `max_owed` answers are owed (at least one).
    pub(super) fn new(writer: W, max_owed: usize) -> Self {
        Self {
            writer: tokio::sync::Mutex::new(writer),
            owed: Mutex::new(Owed::default()),
            settled: Notify::new(),
            max_owed: max_owed.max(1),
            abandoned: CancellationToken::new(),
        }
    }

    /// Request `id` was read: its answer is owed. `false`, and nothing owed, when a request
    /// of the same id is still in flight: the two answers could not be told apart (and rmcp
    /// keeps one request per id, so it would drop one of them).
    #[must_use]
    pub(super) fn owe(&self, id: &RequestId) -> bool {
        let mut owed = lock(&self.owed);
        if !owed.requests.insert(id.clone()) {
            return false;
        }
        owed.total += 1;
        true
    }

    /// Request `id` needs no answer any more: it was answered, cancelled, or its answer lost.
    pub(super) fn settle(&self, id: &RequestId) {
        let mut owed = lock(&self.owed);
        if !owed.requests.remove(id) {
            return;
        }
        owed.total -= 1;
        drop(owed);
        self.settled.notify_waiters();
    }

    /// Whether as many answers are owed as the reader allows.
    pub(super) fn is_full(&self) -> bool {
        lock(&self.owed).total >= self.max_owed
    }

    /// Returns at once when there is room for another owed answer, else when an answer is
    /// settled or the session abandoned (check again). Cancel-safe.
    pub(super) async fn room(&self) {
        let settled = self.settled.notified();
        tokio::pin!(settled);
        settled.as_mut().enable();
        if !self.is_full() {
            return;
        }
        tokio::select! {
            () = settled => {}
            () = self.abandoned.cancelled() => {}
        }
    }

    /// Writes `message` as one line; the request it answers is settled.
    pub(super) async fn send(&self, message: &TxJsonRpcMessage<RoleServer>) -> io::Result<()> {
        let answers = match message {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let mut line = Vec::new();
        encode_line(&mut line, message)?;
        let written = self.write_lines(&line).await;
        if let Some(id) = answers {
            self.settle(id);
        }
        written
    }

    /// Writes `message`, an error the transport answers on its own, counted as owed until
    /// it is written.
    pub(super) async fn send_own(&self, message: &Value) -> io::Result<()> {
        {
            let mut owed = lock(&self.owed);
            owed.own += 1;
            owed.total += 1;
        }
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        let written = self.write_lines(&line).await;
        {
            let mut owed = lock(&self.owed);
            owed.own -= 1;
            owed.total -= 1;
        }
        self.settled.notify_waiters();
        written
    }

    /// Writes `lines` at once, and flushes them; fails at once when the session is
    /// abandoned.
    pub(super) async fn write_lines(&self, lines: &[u8]) -> io::Result<()> {
        let write = async {
            let mut writer = self.writer.lock().await;
            writer.write_all(lines).await?;
            writer.flush().await
        };
        tokio::select! {
            biased;
            () = self.abandoned.cancelled() => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the client is gone: its answers are dropped",
            )),
            written = write => written,
        }
    }

    /// Flushes what was written, waiting at most `wait` for a client that does not read.
    pub(super) async fn flush(&self, wait: Duration) -> io::Result<()> {
        let flush = async { self.writer.lock().await.flush().await };
        tokio::time::timeout(wait, flush).await.unwrap_or(Ok(()))
    }

    /// Gives up on the client: every write waiting for it, and every later one, fails.
    pub(super) fn abandon(&self) {
        self.abandoned.cancel();
    }

    /// Whether [`abandon`](Self::abandon) was called.
    pub(super) fn is_abandoned(&self) -> bool {
        self.abandoned.is_cancelled()
    }
}

/// Appends `message` to `lines` as one line of JSON.
pub(super) fn encode_line(
    lines: &mut Vec<u8>,
    message: &TxJsonRpcMessage<RoleServer>,
) -> io::Result<()> {
    serde_json::to_writer(&mut *lines, message)?;
    lines.push(b'\n');
    Ok(())
}

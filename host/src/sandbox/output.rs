//! A tool's stdout and stderr, captured in memory up to a limit.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// One captured output stream. Keeps the first `capacity` bytes and counts the rest, which
/// are dropped: a tool that prints without end neither fills the host's memory nor fails.
#[derive(Debug, Clone)]
pub(crate) struct LogPipe {
    inner: Arc<Mutex<Captured>>,
}

#[derive(Debug, Default)]
struct Captured {
    capacity: usize,
    bytes: Vec<u8>,
    dropped: u64,
}

/// What a tool wrote to one stream during a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CapturedLog {
    /// The text kept (lossily decoded as UTF-8).
    pub text: String,
    /// How many bytes were dropped past the limit.
    pub dropped: u64,
}

impl CapturedLog {
    /// Whether the tool wrote nothing.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.dropped == 0
    }
}

impl LogPipe {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Captured {
                capacity,
                ..Captured::default()
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Captured> {
        // A poisoned lock only means a writer panicked mid-append; the bytes are still valid.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn append(&self, bytes: &[u8]) {
        let mut captured = self.lock();
        let room = captured.capacity.saturating_sub(captured.bytes.len());
        let kept = room.min(bytes.len());
        captured.bytes.extend_from_slice(&bytes[..kept]);
        captured.dropped += (bytes.len() - kept) as u64;
    }

    /// What was written so far.
    pub(crate) fn take(&self) -> CapturedLog {
        let mut captured = self.lock();
        CapturedLog {
            text: String::from_utf8_lossy(&std::mem::take(&mut captured.bytes)).into_owned(),
            dropped: std::mem::take(&mut captured.dropped),
        }
    }
}

impl IsTerminal for LogPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogPipe {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for LogPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl AsyncWrite for LogPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_start_and_counts_the_rest() {
        let pipe = LogPipe::new(5);
        pipe.append(b"hello, world");
        let log = pipe.take();
        assert_eq!(log.text, "hello");
        assert_eq!(log.dropped, 7);
    }
}

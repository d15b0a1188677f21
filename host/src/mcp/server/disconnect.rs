//! The response body of a JSON-RPC request over HTTP, watched: a shutdown waits for it to be
//! sent, and in session mode a client that closes a `tools/call`'s stream cancels the call.
//!
//! rmcp keeps a session's request running when its stream closes (the client could resume
//! it). toolhost would rather free the instance: if the body of a `tools/call` answer is
//! dropped before it ended, a `notifications/cancelled` for that request is fed into the same
//! session, as the client would have sent it.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt as _, Full};
use serde_json::{Value, json};
use tokio_util::task::task_tracker::TaskTrackerToken;

use super::service::{Mcp, ResponseBody};

/// A response body that counts as an answer on its way out until it ends (or is dropped),
/// and that, when armed, cancels request `id` of the session if it is dropped unfinished.
pub(super) struct WatchedBody {
    inner: ResponseBody,
    _sending: TaskTrackerToken,
    /// What is needed to cancel: cleared when the body ends.
    armed: Option<Cancel>,
}

struct Cancel {
    mcp: Mcp,
    id: Value,
    /// The request's headers: Host, session, protocol version (and the token, if any).
    headers: http::HeaderMap,
}

impl WatchedBody {
    /// `inner`, counted by `sending`.
    pub(super) fn new(inner: ResponseBody, sending: TaskTrackerToken) -> Self {
        Self {
            inner,
            _sending: sending,
            armed: None,
        }
    }

    /// Also cancels request `id` of the session `headers` name if dropped unfinished.
    pub(super) fn cancel_on_drop(mut self, mcp: Mcp, id: Value, headers: http::HeaderMap) -> Self {
        self.armed = Some(Cancel { mcp, id, headers });
        self
    }
}

impl Body for WatchedBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            // The response went out whole: nothing to cancel.
            self.armed = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        let Some(Cancel { mcp, id, headers }) = self.armed.take() else {
            return;
        };
        // Dropped outside a runtime (at exit): nothing left to cancel.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tracing::debug!(%id, "the client closed the stream of a call: cancelling it");
        runtime.spawn(async move {
            let notification = json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": { "requestId": id, "reason": "the client closed the response stream" },
            });
            let mut request = http::Request::new(Full::new(Bytes::from(notification.to_string())));
            *request.method_mut() = http::Method::POST;
            *request.uri_mut() = http::Uri::from_static("/mcp");
            *request.headers_mut() = headers;
            request.headers_mut().remove(http::header::CONTENT_LENGTH);
            let response = mcp.handle(request).await;
            // Read the (empty) answer so the session's side of it completes.
            let _ = response.into_body().collect().await;
        });
    }
}

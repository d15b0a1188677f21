//! Session-mode HTTP: a client that closes a `tools/call`'s response stream cancels the call.
//!
//! rmcp keeps a session's request running when its stream closes (the client could resume
//! it). toolhost would rather free the instance: the response body of a `tools/call` POST is
//! wrapped, and if it is dropped before it ended, a `notifications/cancelled` for that request
//! is fed into the same session, as the client would have sent it.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt as _, Full};
use serde_json::{Value, json};

use super::http::{Mcp, ResponseBody};

/// A response body that cancels request `id` of the session if it is dropped unfinished.
pub(super) struct CancelOnDrop {
    inner: ResponseBody,
    /// What is needed to cancel: cleared when the body ends.
    armed: Option<Cancel>,
}

struct Cancel {
    mcp: Mcp,
    id: Value,
    /// The request's headers: Host, session, protocol version (and the token, if any).
    headers: http::HeaderMap,
}

impl CancelOnDrop {
    pub(super) fn new(inner: ResponseBody, mcp: Mcp, id: Value, headers: http::HeaderMap) -> Self {
        Self {
            inner,
            armed: Some(Cancel { mcp, id, headers }),
        }
    }
}

impl Body for CancelOnDrop {
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

impl Drop for CancelOnDrop {
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

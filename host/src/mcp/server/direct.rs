//! `tools/call` on stdio, answered without rmcp's generic message handling: the hot path of
//! a stdio server, where rmcp's parse of each line into its message enum, its handler task,
//! its response channel and its send task cost as much as a small tool's call.
//!
//! A line that is exactly a `tools/call` request (`jsonrpc`, `id`, `method`, and `params`
//! with `name` and an `arguments` object, nothing else: no `_meta`, no task) is decoded into
//! a borrowed struct, its arguments passed to the tool as the client wrote them, and the
//! result written as one line. It is served this way only in a session that began with
//! `initialize` and a protocol revision before 2026-07-28, whose results have one shape;
//! everything else (other methods, `_meta`, other revisions) goes to rmcp as before. The same
//! [`McpServer::answer`] runs the call either way, and a `notifications/cancelled` for such a
//! call cancels it (no answer is sent, as for any cancelled request). A call starts on the
//! reader's task, and moves to a task of its own at its first wait: a small tool's call is
//! answered before the next line is read, without waking another worker thread.

use std::borrow::Cow;
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    JsonRpcMessage, LoggingMessageNotification, ProtocolVersion, RequestId, RequestMetaObject,
    ServerNotification, ServerResult,
};
use rmcp::service::TxJsonRpcMessage;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::calls::{Answer, ToolCall, error_result};
use super::jsonrpc::Refused;
use super::metered;
use super::output::{Output, encode_line};
use super::reports::Notification;
use super::{McpServer, lock};
use crate::arguments::Arguments;

/// A `tools/call` request line, borrowed from the line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLine<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: CallParams<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// The `tools/call` requests of one stdio session that are served here.
pub(super) struct DirectCalls<W> {
    shared: Arc<Shared<W>>,
}

struct Shared<W> {
    server: McpServer,
    output: Arc<Output<W>>,
    /// The calls running, by request id, to cancel them.
    running: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Cancels every call when the session ends.
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl<W> DirectCalls<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Direct calls for a session whose client asked for `version` at `initialize`; `None`
    /// for a revision whose results rmcp shapes otherwise (2026-07-28 and later).
    pub(super) fn new(
        server: McpServer,
        output: Arc<Output<W>>,
        version: &ProtocolVersion,
    ) -> Option<Self> {
        if version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            return None;
        }
        Some(Self {
            shared: Arc::new(Shared {
                server,
                output,
                running: Mutex::new(HashMap::new()),
                stop: CancellationToken::new(),
                tasks: TaskTracker::new(),
            }),
        })
    }

    /// Starts serving `line` if it is a `tools/call` request this path takes (or refuses it,
    /// when a request of its id is in flight); `false` leaves it to rmcp.
    pub(super) fn start(&self, line: &[u8]) -> bool {
        let Ok(call) = serde_json::from_slice::<CallLine<'_>>(line) else {
            return false;
        };
        if call.jsonrpc != "2.0" || call.method != "tools/call" {
            return false;
        }
        // A call that may run as a task is rmcp's to answer (a `CreateTaskResult`).
        if self.shared.server.may_run_as_task(&call.params.name) {
            return false;
        }
        // The arguments as the client wrote them (through rmcp, a tool gets them written
        // again from a map, with the keys sorted).
        let arguments = match call.params.arguments {
            Some(raw) => match Arguments::parse(raw.get()) {
                Ok(arguments) => arguments,
                // rmcp takes arguments only as an object: it answers the others.
                Err(_) => return false,
            },
            // Clients may leave `arguments` out for a tool that takes none.
            None => Arguments::empty(),
        };
        if !self.shared.output.owe(&call.id) {
            tracing::warn!(id = %call.id, "refused a tools/call: its id is in flight");
            let output = self.shared.output.clone();
            let refused = Refused::id_in_flight(&call.id).message();
            tokio::spawn(async move { output.send_own(&refused).await });
            return true;
        }
        tracing::debug!(id = %call.id, "tools/call served directly");
        let name = call.params.name.into_owned();
        let id = call.id;
        let cancelled = self.shared.stop.child_token();
        let (running_id, running_token) = (id.clone(), cancelled.clone());
        let shared = self.shared.clone();
        let mut serve = Box::pin(self.shared.tasks.track_future(async move {
            shared.serve(id, name, arguments, cancelled).await;
        }));
        // The call runs here, on the reader's task, up to its first wait: most calls end
        // there, answered without a hand-off to a task of their own (on the multi-threaded
        // runtime, a spawned task wakes another worker, which costs as much as a small
        // tool's call). A call that waits (for I/O, for an instance slot, or at the epoch
        // tick that ends its CPU slice, so the reader is held up for at most one tick) goes
        // on in a task of its own. That task polls it at once, which finds where it stands:
        // no wake-up is lost to the no-op waker of this first poll.
        let mut cx = Context::from_waker(Waker::noop());
        match panic::catch_unwind(AssertUnwindSafe(|| serve.as_mut().poll(&mut cx))) {
            Ok(Poll::Ready(())) => {}
            // Only now can a `notifications/cancelled` for it be read.
            Ok(Poll::Pending) => {
                lock(&self.shared.running).insert(running_id, running_token);
                tokio::spawn(serve);
            }
            // As a task's panic would: that call gets no answer, the session goes on.
            Err(_) => {
                tracing::error!("a tools/call panicked; it gets no answer");
                self.shared.output.settle(&running_id);
            }
        }
        true
    }

    /// Cancels the call of request `id`, if it is one of these.
    pub(super) fn cancel(&self, id: &RequestId) {
        if let Some(cancelled) = lock(&self.shared.running).remove(id) {
            tracing::info!(%id, "cancelled");
            cancelled.cancel();
        }
    }

    /// At the end of the session: lets the calls running finish and answer for up to `grace`,
    /// then stops them.
    pub(super) async fn finish(&self, grace: Duration) {
        self.shared.tasks.close();
        if tokio::time::timeout(grace, self.shared.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("calls served directly still running are cancelled");
            self.stop().await;
        }
    }

    /// Cancels the calls running, and waits for them to stop (at once: a cancelled call
    /// drops its instance).
    pub(super) async fn stop(&self) {
        self.shared.tasks.close();
        self.shared.stop.cancel();
        self.shared.tasks.wait().await;
    }
}

impl<W> Shared<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    async fn serve(
        &self,
        id: RequestId,
        name: String,
        arguments: Arguments,
        cancelled: CancellationToken,
    ) {
        let level = Some(self.server.level());
        // Such a request has no `_meta`, so no progress token: only the tool's log lines
        // are sent, before its answer.
        let (observer, mut reports) = super::reports::channel();
        let call = ToolCall {
            id: &id,
            name: &name,
            arguments: &arguments,
            meta: &RequestMetaObject::default(),
            level,
            cancelled: &cancelled,
            observer: Some(observer),
            asker: Some(crate::asking::Asker(Arc::new(super::asking::CannotAsk(
                ASKER,
            )))),
            input: Default::default(),
            // stdio: the operator, who runs the host.
            caller: None,
            headers: None,
        };
        let started = std::time::Instant::now();
        let mut answer = self.server.answer(call).await;
        metered::stdio_call(&self.server, &name, answer.result.is_err(), started);
        cannot_ask(&name, &mut answer);
        {
            let mut running = lock(&self.running);
            // The id may have been taken by a later request meanwhile.
            if running.get(&id).is_some_and(|token| token == &cancelled) {
                running.remove(&id);
            }
        }
        // A cancelled request gets no answer.
        if cancelled.is_cancelled() {
            self.output.settle(&id);
            return;
        }
        let mut lines = Vec::with_capacity(512);
        let reported = std::iter::from_fn(|| reports.try_recv().ok()).filter_map(|report| {
            match report.notification(None, level) {
                Some(Notification::Log(log)) => Some(log),
                _ => None,
            }
        });
        for log in reported.collect::<Vec<_>>().into_iter().chain(answer.logs) {
            let message: TxJsonRpcMessage<RoleServer> =
                JsonRpcMessage::notification(ServerNotification::LoggingMessageNotification(
                    LoggingMessageNotification::new(log),
                ));
            push_line(&mut lines, &message);
        }
        let message: TxJsonRpcMessage<RoleServer> = match answer.result {
            Ok(result) => {
                // The shape of the results of the revisions before 2026-07-28, as rmcp's
                // handler gives it.
                let mut result = ServerResult::CallToolResult(result);
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
                JsonRpcMessage::response(result, id.clone())
            }
            Err(error) => JsonRpcMessage::error(error, Some(id.clone())),
        };
        push_line(&mut lines, &message);
        // A session that stops while the client does not read does not wait for it.
        let written = tokio::select! {
            written = self.output.write_lines(&lines) => written,
            () = self.stop.cancelled() => Ok(()),
        };
        if let Err(error) = written {
            tracing::debug!("cannot answer a call: {error}");
        }
        self.output.settle(&id);
    }
}

/// Who a call on this path is to whatever asks during it: it cannot ask.
const ASKER: &str = "a stdio call without `_meta` (send one, even empty, to be asked)";

/// A tool that asks for input on this path gets an error result: the path answers a call with
/// one line and cannot ask the client anything meanwhile.
fn cannot_ask(tool: &str, answer: &mut Answer) {
    if let Some(asked) = answer.asked.take() {
        let error = crate::error::CallError::input_required(tool, &asked, ASKER);
        tracing::warn!("{error}");
        answer.result = Ok(error_result(error.model_message()));
    }
}

fn push_line(lines: &mut Vec<u8>, message: &TxJsonRpcMessage<RoleServer>) {
    if let Err(error) = encode_line(lines, message) {
        tracing::error!("cannot write a message as JSON: {error}");
    }
}

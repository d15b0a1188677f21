//! What an MCP server sends while one of its tools runs, and whom it reaches: its progress
//! notifications and log messages go to the call's observer (within the per-call rate bound
//! of `sandbox::report`, like a component's reports), its requests for input to the call's
//! asker.
//!
//! A server's message does not name the call it belongs to, so:
//! - progress names the progress token the host sent with the call (each call gets its own);
//! - a log message goes to the call when exactly one of the server's calls runs; with none
//!   or several it is only logged by the host;
//! - a request (`elicitation/create`, `sampling/createMessage`) goes to the call whose
//!   progress token its `_meta` names, else to the one call that runs, else, with several, to
//!   the asker they all share; calls of different askers (two clients of `host mcp`, say)
//!   cannot be told apart, and the request is refused saying so.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ErrorData, JsonRpcMessage, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ServerJsonRpcMessage, ServerNotification,
    ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::tasks;
use crate::asking::Asker;
use crate::sandbox::LogLevel;
use crate::sandbox::report::{CallReports, CoarseClock, ReportCounts};
use crate::source::CallContext;

/// How many progress notifications that came before their call knew its token are kept.
const EARLY_PROGRESS: usize = 16;

/// The calls of one server that are running.
#[derive(Default)]
pub(super) struct Calls(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    running: Vec<Entry>,
    /// Progress whose token no call has yet: the server can answer before the call that sent
    /// the token has learnt it from rmcp.
    early: Vec<ProgressNotificationParam>,
    next: u64,
}

struct Entry {
    id: u64,
    token: Option<ProgressToken>,
    call: Arc<Running>,
}

/// One running call: where its reports go, and who answers for it.
struct Running {
    tool: String,
    reports: Mutex<CallReports>,
    /// The reports' rate bound reads this; set from `started` at each notification (a
    /// server's notifications are far rarer than a component's reports, so a clock read
    /// each costs nothing that matters).
    clock: CoarseClock,
    started: Instant,
    asker: Option<Asker>,
}

impl Running {
    /// Who answers what the server asks during this call.
    fn target(&self) -> Result<Target, String> {
        match &self.asker {
            Some(asker) => Ok(Target {
                tool: self.tool.clone(),
                asker: asker.clone(),
            }),
            None => Err(format!(
                "the call of `{}` has nobody to ask (it was made without an asker: by `host \
                 call`, a run without a terminal, or an application that passed none)",
                self.tool
            )),
        }
    }

    /// Its reports, with their clock brought to now.
    fn reports(&self) -> MutexGuard<'_, CallReports> {
        let millis = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.clock.advance_to(millis);
        lock(&self.reports)
    }
}

/// Whom a server's request for input goes to.
pub(super) struct Target {
    /// The tool that runs (as the host offers it).
    pub(super) tool: String,
    pub(super) asker: Asker,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Calls {
    /// A call of `tool` starts: its reports go to `context`'s observer.
    fn begin(self: &Arc<Self>, tool: &str, context: &CallContext) -> Registered {
        let mut inner = lock(&self.0);
        inner.next += 1;
        let id = inner.next;
        inner.running.push(Entry {
            id,
            token: None,
            call: Arc::new({
                let clock = CoarseClock::default();
                let reports = CallReports::new(tool, context.observer.clone(), clock.clone());
                Running {
                    tool: tool.to_owned(),
                    reports: Mutex::new(reports),
                    clock,
                    started: Instant::now(),
                    asker: context.asker.clone(),
                }
            }),
        });
        Registered {
            calls: self.clone(),
            id,
        }
    }

    /// Passes on what `message` reports, if it is a progress notification or a log message
    /// (seen as it arrives, before rmcp gets it: in order, and before the answer that
    /// follows it ends the call).
    pub(super) fn observe(&self, server: &str, message: &ServerJsonRpcMessage) {
        let JsonRpcMessage::Notification(notification) = message else {
            return;
        };
        match &notification.notification {
            ServerNotification::ProgressNotification(progress) => {
                self.progress(progress.params.clone());
            }
            ServerNotification::LoggingMessageNotification(log) => self.log(server, &log.params),
            _ => {}
        }
    }

    fn progress(&self, progress: ProgressNotificationParam) {
        let mut inner = lock(&self.0);
        let token = &progress.progress_token;
        match inner
            .running
            .iter()
            .find(|e| e.token.as_ref() == Some(token))
        {
            Some(entry) => report(&entry.call, progress),
            None if inner.running.iter().any(|e| e.token.is_none()) => {
                if inner.early.len() < EARLY_PROGRESS {
                    inner.early.push(progress);
                }
            }
            None => tracing::debug!("an MCP server reported progress for no running call"),
        }
    }

    fn log(&self, server: &str, message: &LoggingMessageNotificationParam) {
        let text = match &message.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let level = match message.level {
            LoggingLevel::Debug => LogLevel::Debug,
            LoggingLevel::Info => LogLevel::Info,
            LoggingLevel::Notice => LogLevel::Notice,
            LoggingLevel::Warning => LogLevel::Warning,
            _ => LogLevel::Error,
        };
        let only = match &lock(&self.0).running[..] {
            [only] => Some(only.call.clone()),
            _ => None,
        };
        match only {
            Some(call) => call.reports().log(level, text),
            None => {
                let logger = message.logger.as_deref().unwrap_or("");
                match level {
                    LogLevel::Debug => {
                        tracing::debug!(target: "toolhost::mcp::log", server, logger, "{text}")
                    }
                    LogLevel::Info | LogLevel::Notice => {
                        tracing::info!(target: "toolhost::mcp::log", server, logger, "{text}")
                    }
                    LogLevel::Warning => {
                        tracing::warn!(target: "toolhost::mcp::log", server, logger, "{text}")
                    }
                    LogLevel::Error => {
                        tracing::error!(target: "toolhost::mcp::log", server, logger, "{text}")
                    }
                }
            }
        }
    }

    /// Whom a request for input the server sent with `token` in its `_meta` (if any) goes
    /// to; the error says why nobody can answer it.
    pub(super) fn target(&self, token: Option<&ProgressToken>) -> Result<Target, String> {
        let inner = lock(&self.0);
        let named = token.and_then(|token| {
            inner
                .running
                .iter()
                .find(|e| e.token.as_ref() == Some(token))
        });
        let call = match (named, &inner.running[..]) {
            (Some(entry), _) | (None, [entry]) => entry.call.clone(),
            (None, []) => {
                return Err(
                    "it asked while none of its tools was running; the host relays only \
                            what a server asks during a call"
                        .to_owned(),
                );
            }
            (None, several) => return shared_asker(several),
        };
        call.target()
    }
}

/// The asker all of `several` running calls share, if they share one.
fn shared_asker(several: &[Entry]) -> Result<Target, String> {
    let first = &several[0].call;
    match &first.asker {
        Some(asker) if several.iter().all(|e| e.call.asker.as_ref() == Some(asker)) => Ok(Target {
            tool: first.tool.clone(),
            asker: asker.clone(),
        }),
        _ => Err(format!(
            "{} of its calls are running for different callers, and its request does not say \
             (with `_meta.progressToken`) which one it belongs to",
            several.len()
        )),
    }
}

fn report(call: &Running, progress: ProgressNotificationParam) {
    call.reports()
        .progress(progress.progress, progress.total, progress.message);
}

/// A call as [`Calls`] knows it, until it is dropped.
struct Registered {
    calls: Arc<Calls>,
    id: u64,
}

impl Registered {
    /// The call was sent with `token`: progress that came for it early is passed on now.
    fn sent(&self, token: ProgressToken) {
        let mut inner = lock(&self.calls.0);
        let inner = &mut *inner;
        let Some(entry) = inner.running.iter_mut().find(|e| e.id == self.id) else {
            return;
        };
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut inner.early)
            .into_iter()
            .partition(|p| p.progress_token == token);
        inner.early = others;
        entry.token = Some(token);
        for progress in mine {
            report(&entry.call, progress);
        }
    }

    /// The call ended: passes on the progress the rate bound held back.
    /// Who answers for this call.
    fn target(&self) -> Result<Target, String> {
        let inner = lock(&self.calls.0);
        let entry = inner.running.iter().find(|e| e.id == self.id);
        match entry {
            Some(entry) => entry.call.target(),
            None => Err("the call has ended".to_owned()),
        }
    }

    fn finish(&self) -> ReportCounts {
        let inner = lock(&self.calls.0);
        inner
            .running
            .iter()
            .find(|e| e.id == self.id)
            .map(|entry| lock(&entry.call.reports).finish())
            .unwrap_or_default()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut inner = lock(&self.calls.0);
        inner.running.retain(|e| e.id != self.id);
        if inner.running.iter().all(|e| e.token.is_some()) {
            inner.early.clear();
        }
    }
}

/// Who answers the requests of a 2026-07-28 input-required result of a call of `target`
/// (the connection's handler, under the same grants as requests sent during a call).
pub(super) trait AnswersInput: Sync {
    fn answer_input<'a>(
        &'a self,
        target: &'a Target,
        request: rmcp::model::InputRequest,
    ) -> futures::future::BoxFuture<'a, Result<Value, ErrorData>>;
}

/// The most rounds of input a call may ask for (2026-07-28 input-required results) before
/// it is given up: as many as rmcp's own client allows.
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// How a call ended.
pub(super) enum Answer {
    /// With its result.
    Done(CallToolResult),
    /// With an input-required result (2026-07-28) for a call that has nobody to ask: the
    /// caller takes the requests, and calls again with the answers and the state.
    Asks(rmcp::model::InputRequiredResult),
    /// With what the server's task for the call asks (the MCP tasks extension), for a call
    /// that has nobody to ask: the caller takes the requests, and sends the answers to the
    /// task (its next round has the task's id in its context) instead of calling again.
    TaskAsks {
        task: String,
        requests: rmcp::model::InputRequests,
    },
}

/// Sends `params` as a `tools/call` and waits for its result, while what the server reports
/// and asks goes to `context`'s observer and asker: its requests during the call (dated
/// revisions), and the input its input-required results ask for (2026-07-28), after which
/// the call is sent again with the answers and the state the server gave; a call without an
/// asker ends with what the server asks, for its caller (a paused run) to answer. Dropping
/// it (at the timeout, or when the caller gives up) sends the server
/// `notifications/cancelled`.
pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    (calls, handler): (&Arc<Calls>, &dyn AnswersInput),
    tool: &str,
    mut params: CallToolRequestParams,
    context: &CallContext,
) -> (Result<Answer, ServiceError>, ReportCounts) {
    let call = calls.begin(tool, context);
    let target = call.target();
    let ask = asker(&target, handler);
    let answer: tasks::Answer<'_> = context.asker.is_some().then_some(&ask as _);
    // The call waits in a task of the server's that asked for these answers (its caller
    // paused): they go to the task, which is followed from there; the tool is not called
    // again.
    if let Some(task) = &context.task {
        let responses = context.input_responses.clone();
        let followed = tasks::resume(peer, task.clone(), responses, answer).await;
        return (followed.map(Answer::from), call.finish());
    }
    let mut quiet_rounds = 0;
    for _ in 0..MAX_INPUT_ROUNDS {
        let asked = match send(peer, &call, params.clone()).await {
            Ok(ServerResult::InputRequiredResult(asked)) => asked,
            Ok(ServerResult::CallToolResult(result)) => {
                return (Ok(Answer::Done(result)), call.finish());
            }
            // The server runs the call as a task: followed to its end.
            Ok(ServerResult::CreateTaskResult(created)) => {
                let followed = tasks::follow(peer, created.task, answer).await;
                return (followed.map(Answer::from), call.finish());
            }
            // A server may answer a tool that returns nothing with an empty result.
            Ok(ServerResult::EmptyResult(_)) => {
                return (Ok(Answer::Done(CallToolResult::default())), call.finish());
            }
            Ok(_) => return (Err(ServiceError::UnexpectedResponse), call.finish()),
            Err(error) => return (Err(error), call.finish()),
        };
        if context.asker.is_none() && asked.input_requests.as_ref().is_some_and(|r| !r.is_empty()) {
            return (Ok(Answer::Asks(asked)), call.finish());
        }
        let requests = asked.input_requests.unwrap_or_default();
        if requests.is_empty() {
            if asked.request_state.is_none() {
                // Nothing asked and nothing to send back: the same call would get the same.
                return (Err(ServiceError::UnexpectedResponse), call.finish());
            }
            // Only state: the server wants the call again later (it is still working).
            tokio::time::sleep(Duration::from_millis(50 << quiet_rounds.min(2))).await;
            quiet_rounds += 1;
        }
        let mut answers = rmcp::model::InputResponses::new();
        for (key, request) in requests {
            match ask(request).await {
                Ok(answer) => answers.insert(key, answer),
                Err(error) => return (Err(ServiceError::McpError(error)), call.finish()),
            };
        }
        params.input_responses = (!answers.is_empty()).then_some(answers);
        params.request_state = asked.request_state;
    }
    let max_rounds = MAX_INPUT_ROUNDS;
    (
        Err(ServiceError::InputRequiredRoundsExceeded { max_rounds }),
        call.finish(),
    )
}

/// Who answers a request for input of a call to `target`: `handler`, under the connection's
/// grants; an error saying why when the call has nobody to ask.
fn asker<'a: 'b, 'b>(
    target: &'a Result<Target, String>,
    handler: &'a dyn AnswersInput,
) -> impl Fn(rmcp::model::InputRequest) -> futures::future::BoxFuture<'b, Result<Value, ErrorData>>
+ Sync
+ 'a {
    move |request| match target {
        Ok(target) => handler.answer_input(target, request),
        Err(why) => {
            let why = format!("toolhost cannot answer the server's request for input: {why}");
            Box::pin(std::future::ready(Err(ErrorData::internal_error(
                why, None,
            ))))
        }
    }
}

impl From<tasks::Followed> for Answer {
    fn from(followed: tasks::Followed) -> Self {
        match followed {
            tasks::Followed::Done(result) => Self::Done(result),
            tasks::Followed::Asks { task, requests } => Self::TaskAsks { task, requests },
        }
    }
}

/// One round of a call: `params` sent as a `tools/call`, and the answer.
async fn send(
    peer: &Peer<RoleClient>,
    call: &Registered,
    params: CallToolRequestParams,
) -> Result<ServerResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    call.sent(handle.progress_token.clone());
    let mut cancel = CancelOnDrop(Some((peer.clone(), handle.id.clone())));
    let answer = handle.await_response().await;
    cancel.0 = None;
    answer
}

/// Tells the server a call was given up on, unless disarmed.
struct CancelOnDrop(Option<(Peer<RoleClient>, rmcp::model::RequestId)>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let reason = "the host gave up on the call".to_owned();
            let param = CancelledNotificationParam::new(Some(id), Some(reason));
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

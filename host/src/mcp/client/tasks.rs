//! Calls an MCP server runs as tasks (the MCP tasks extension, which this client declares):
//! when a `tools/call` answers with a `CreateTaskResult`, the call follows the task with
//! `tasks/get` until it ends, at the interval the server suggests (at least [`FLOOR`], then
//! longer each poll that finds it unchanged, up to [`CEILING`]); what the task asks for
//! (`input_required`) is answered by the call's asker and sent with `tasks/update`; a call
//! given up on (its timeout, its caller) sends `tasks/cancel`. A poll that does not get
//! through (a connection cut, a replica gone behind a balancer) is tried again at the next
//! wait, up to [`RETRIES`] in a row. A call with nobody to ask ends
//! with the task's questions and its id, which its caller (a paused run) keeps: the next
//! round of the call sends the answers to that task and follows it ([`resume`]). Each of
//! these requests is a client span of the MCP conventions, under the call's, its trace
//! context in the request's `_meta` ([`send`]).

use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolResult, CancelTaskParams, CancelTaskRequest, ClientRequest, ErrorData, GetTaskParams,
    GetTaskRequest, InputRequest, InputRequests, InputResponses, RequestMetaObject, ServerResult,
    Task, TaskPayload, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tracing::Instrument as _;

use crate::telemetry::context;

/// The shortest wait between two polls, whatever the server suggests.
const FLOOR: Duration = Duration::from_millis(20);

/// The longest wait between two polls, however long the task has been unchanged.
const CEILING: Duration = Duration::from_secs(5);

/// How many polls in a row may fail to get through before the call fails with the last
/// one's error.
const RETRIES: usize = 5;

/// Answers one of the task's requests for input (the call's asker, under the connection's
/// grants); `None` when the call has nobody to ask.
pub(super) type Answer<'a> =
    Option<&'a (dyn Fn(InputRequest) -> BoxFuture<'a, Result<Value, ErrorData>> + Sync)>;

/// How following a task ended.
pub(super) enum Followed {
    /// With the task's result.
    Done(CallToolResult),
    /// With what the task asks for, when the call has nobody to ask: the task stays as it
    /// is on the server, for the call's caller (a paused run) to answer with [`resume`].
    Asks {
        task: String,
        requests: InputRequests,
    },
}

/// Follows `task` to its end: its result, what it asks for (when nobody here can answer),
/// or the error it failed with.
pub(super) async fn follow(
    peer: &Peer<RoleClient>,
    task: Task,
    answer: Answer<'_>,
) -> Result<Followed, ServiceError> {
    let suggested = interval(task.poll_interval_ms);
    poll(
        peer,
        task.task_id,
        suggested,
        Some(task.last_updated_at),
        answer,
    )
    .await
}

/// Goes on with task `id`, which asked for input when the call had nobody to ask (its
/// caller paused and kept the task's id): `responses` go to it with `tasks/update`, and the
/// task is followed from there as by [`follow`].
pub(super) async fn resume(
    peer: &Peer<RoleClient>,
    id: String,
    responses: InputResponses,
    answer: Answer<'_>,
) -> Result<Followed, ServiceError> {
    let mut cancel = CancelOnDrop(Some((peer.clone(), id.clone())));
    send(peer, "tasks/update", |meta| {
        let mut params = UpdateTaskParams::new(&id, responses);
        params.meta = meta;
        ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(params))
    })
    .await?;
    cancel.0 = None;
    poll(peer, id, FLOOR, None, answer).await
}

/// Polls task `id` with `tasks/get`, first after `wait`, until it ends or asks what nobody
/// here can answer; `last` is when it last changed, as far as this call has seen.
async fn poll(
    peer: &Peer<RoleClient>,
    id: String,
    mut wait: Duration,
    mut last: Option<String>,
    answer: Answer<'_>,
) -> Result<Followed, ServiceError> {
    let mut cancel = CancelOnDrop(Some((peer.clone(), id.clone())));
    let mut suggested = wait;
    let mut unsent = 0;
    loop {
        tokio::time::sleep(wait).await;
        let get = |meta| {
            let mut params = GetTaskParams::new(&id);
            params.meta = meta;
            ClientRequest::GetTaskRequest(GetTaskRequest::new(params))
        };
        let got = match send(peer, "tasks/get", get).await {
            // A poll that did not get through (a connection cut, a replica gone behind a
            // balancer) is tried again: the task goes on on the server, and a poll changes
            // nothing there. Only so often in a row, and no sooner than the next wait.
            Err(ServiceError::TransportSend(error)) if unsent < RETRIES => {
                unsent += 1;
                tracing::debug!(task = %id, "a poll of the task did not get through: {error}");
                wait = (wait * 2).min(CEILING.max(suggested));
                continue;
            }
            got => got?,
        };
        unsent = 0;
        let ServerResult::GetTaskResult(got) = got else {
            return Err(ServiceError::UnexpectedResponse);
        };
        let detailed = got.task;
        // Unchanged: wait longer next time; changed: back to what the server suggests.
        wait = if last.as_ref() == Some(&detailed.task.last_updated_at) {
            (wait * 3 / 2).min(CEILING.max(suggested))
        } else {
            suggested = interval(detailed.task.poll_interval_ms);
            suggested
        };
        last = Some(detailed.task.last_updated_at.clone());
        match detailed.payload {
            TaskPayload::Completed { result } => {
                cancel.0 = None;
                return serde_json::from_value(Value::Object(result))
                    .map(Followed::Done)
                    .map_err(|_| ServiceError::UnexpectedResponse);
            }
            TaskPayload::Failed { error } => {
                cancel.0 = None;
                let error: ErrorData =
                    serde_json::from_value(Value::Object(error)).unwrap_or_else(|e| {
                        ErrorData::internal_error(format!("the task failed ({e})"), None)
                    });
                return Err(ServiceError::McpError(error));
            }
            TaskPayload::Cancelled => {
                cancel.0 = None;
                let error = ErrorData::internal_error("the server cancelled the task", None);
                return Err(ServiceError::McpError(error));
            }
            TaskPayload::InputRequired { input_requests } => {
                let Some(answer) = answer else {
                    // Nobody here to ask: the task waits on the server for the caller's
                    // answers, so it is not cancelled.
                    cancel.0 = None;
                    return Ok(Followed::Asks {
                        task: id,
                        requests: input_requests,
                    });
                };
                answer_all(peer, &id, input_requests, answer).await?;
                wait = FLOOR;
            }
            _ => {}
        }
    }
}

/// Answers each of `requests` of task `id` with `answer`, and sends the answers with
/// `tasks/update`.
async fn answer_all<'a>(
    peer: &Peer<RoleClient>,
    id: &str,
    requests: InputRequests,
    answer: &'a (dyn Fn(InputRequest) -> BoxFuture<'a, Result<Value, ErrorData>> + Sync),
) -> Result<(), ServiceError> {
    let mut answers = InputResponses::new();
    for (key, request) in requests {
        answers.insert(key, answer(request).await.map_err(ServiceError::McpError)?);
    }
    send(peer, "tasks/update", |meta| {
        let mut params = UpdateTaskParams::new(id, answers);
        params.meta = meta;
        ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(params))
    })
    .await?;
    Ok(())
}

/// Sends the `tasks/*` request (`method`) that `request` makes, given the `_meta` to carry:
/// a client span of the MCP conventions (under the current span, the call's), whose trace
/// context the request carries in `_meta` for the server's span to take.
async fn send(
    peer: &Peer<RoleClient>,
    method: &'static str,
    request: impl FnOnce(Option<RequestMetaObject>) -> ClientRequest,
) -> Result<ServerResult, ServiceError> {
    let span = tracing::info_span!(
        "mcp_client_request",
        otel.name = method,
        otel.kind = "client",
        mcp.method.name = method,
    );
    let mut meta = RequestMetaObject::default();
    span.in_scope(|| context::inject_meta(&mut meta));
    let request = request((!meta.is_empty()).then_some(meta));
    peer.send_request(request).instrument(span).await
}

/// The server's suggested interval, within [`FLOOR`] and [`CEILING`]; a second when it
/// suggests none.
fn interval(suggested_ms: Option<u64>) -> Duration {
    let suggested = suggested_ms.map_or(Duration::from_secs(1), Duration::from_millis);
    suggested.clamp(FLOOR, CEILING)
}

/// Sends `tasks/cancel` for a task given up on, unless disarmed.
struct CancelOnDrop(Option<(Peer<RoleClient>, String)>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            // Sent on its own, its span still a child of the call's.
            let parent = tracing::Span::current();
            let cancel = async move {
                let request = |meta| {
                    let mut params = CancelTaskParams::new(id);
                    params.meta = meta;
                    ClientRequest::CancelTaskRequest(CancelTaskRequest::new(params))
                };
                let _ = send(&peer, "tasks/cancel", request).await;
            };
            runtime.spawn(cancel.instrument(parent));
        }
    }
}

//! Calls an MCP server runs as tasks (the MCP tasks extension, which this client declares):
//! when a `tools/call` answers with a `CreateTaskResult`, the call follows the task with
//! `tasks/get` until it ends, at the interval the server suggests (at least [`FLOOR`], then
//! longer each poll that finds it unchanged, up to [`CEILING`]); what the task asks for
//! (`input_required`) is answered by the call's asker and sent with `tasks/update`; a call
//! given up on (its timeout, its caller) sends `tasks/cancel`.

use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolResult, CancelTaskParams, CancelTaskRequest, ClientRequest, ErrorData, GetTaskParams,
    GetTaskRequest, InputRequest, InputResponses, ServerResult, Task, TaskPayload,
    UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;

/// The shortest wait between two polls, whatever the server suggests.
const FLOOR: Duration = Duration::from_millis(20);

/// The longest wait between two polls, however long the task has been unchanged.
const CEILING: Duration = Duration::from_secs(5);

/// Answers one of the task's requests for input (the call's asker, under the connection's
/// grants); `None` when the call has nobody to ask.
pub(super) type Answer<'a> =
    Option<&'a (dyn Fn(InputRequest) -> BoxFuture<'a, Result<Value, ErrorData>> + Sync)>;

/// Follows `task` to its end: its result, or the error it failed with.
pub(super) async fn follow(
    peer: &Peer<RoleClient>,
    task: Task,
    answer: Answer<'_>,
) -> Result<CallToolResult, ServiceError> {
    let id = task.task_id.clone();
    let mut cancel = CancelOnDrop(Some((peer.clone(), id.clone())));
    let suggested = interval(task.poll_interval_ms);
    let mut wait = suggested;
    let mut last = task.last_updated_at;
    loop {
        tokio::time::sleep(wait).await;
        let request = ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(&id)));
        let ServerResult::GetTaskResult(got) = peer.send_request(request).await? else {
            return Err(ServiceError::UnexpectedResponse);
        };
        let detailed = got.task;
        // Unchanged: wait longer next time; changed: back to what the server suggests.
        wait = if detailed.task.last_updated_at == last {
            (wait * 3 / 2).min(CEILING.max(suggested))
        } else {
            interval(detailed.task.poll_interval_ms)
        };
        last = detailed.task.last_updated_at.clone();
        match detailed.payload {
            TaskPayload::Completed { result } => {
                cancel.0 = None;
                return serde_json::from_value(Value::Object(result))
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
                    let error = ErrorData::internal_error(
                        "the server's task asks for input, and this call has nobody to ask",
                        None,
                    );
                    return Err(ServiceError::McpError(error));
                };
                let mut answers = InputResponses::new();
                for (key, request) in input_requests {
                    answers.insert(key, answer(request).await.map_err(ServiceError::McpError)?);
                }
                let params = UpdateTaskParams::new(&id, answers);
                let request = ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(params));
                peer.send_request(request).await?;
                wait = FLOOR;
            }
            _ => {}
        }
    }
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
            let request =
                ClientRequest::CancelTaskRequest(CancelTaskRequest::new(CancelTaskParams::new(id)));
            runtime.spawn(async move {
                let _ = peer.send_request(request).await;
            });
        }
    }
}

//! What a task's running call uses, wherever the task is kept (in memory, in Redis): a way to
//! ask the client and wait for `tasks/update`'s answer, a status message, and the news of a
//! `tasks/cancel`. And what every store answers alike: an unknown task, a full cap.

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::InputRequest as McpRequest;
use rmcp::task_manager::{TaskContext, TaskExit};
use serde_json::Value;

/// The running call's side of a task.
pub(super) trait Running: Send + Sync {
    /// Puts `request` in the task's `inputRequests` under `key` (the task is
    /// `input_required` while one waits), and waits for the client's answer; `Cancelled`
    /// when the task is cancelled first.
    fn request_input(
        &self,
        key: String,
        request: McpRequest,
    ) -> BoxFuture<'_, Result<Value, TaskExit>>;

    /// The task's status message from now on (what `tasks/get` shows).
    fn set_status_message(&self, message: String);

    /// Resolves once the task is cancelled.
    fn cancelled(&self) -> BoxFuture<'_, ()>;
}

/// A task kept in memory: rmcp's [`TaskContext`].
pub(super) struct InMemory(pub(super) TaskContext);

impl Running for InMemory {
    fn request_input(
        &self,
        key: String,
        request: McpRequest,
    ) -> BoxFuture<'_, Result<Value, TaskExit>> {
        Box::pin(self.0.request_input(key, request))
    }

    fn set_status_message(&self, message: String) {
        self.0.set_status_message(message);
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.cancelled())
    }
}

/// An unknown task, as the extension answers it (-32602): also what another caller's task
/// answers.
pub(super) fn unknown_task(id: &str) -> ErrorData {
    let shown: String = id.chars().take(64).collect();
    ErrorData::invalid_params(format!("unknown task: {shown}"), None)
}

/// Whether one more task fits, with `all` held in total and `mine` by its caller: an error
/// naming the `[mcp.tasks]` cap that is full.
pub(super) fn check_caps(
    all: usize,
    mine: usize,
    per_caller: usize,
    max: usize,
) -> Result<(), ErrorData> {
    let full = |cap: &str, count: usize, who: &str| {
        Err(ErrorData::internal_error(
            format!(
                "{who} holds its most tasks ({count}, `{cap}` under [mcp.tasks]); try again \
                 when some have finished and expired"
            ),
            None,
        ))
    };
    if all >= max {
        return full("max", max, "the server");
    }
    if mine >= per_caller {
        return full("max_per_caller", per_caller, "this caller");
    }
    Ok(())
}

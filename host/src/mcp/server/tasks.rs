//! Calls that outlive their request: the MCP tasks extension (`io.modelcontextprotocol/tasks`,
//! SEP-2663) as `host mcp` serves it.
//!
//! A `tools/call` of a tool whose `task` (under `[tools.NAME]`) lets it run as a task answers
//! at once with a `CreateTaskResult`; the call goes on in the background, and the client
//! polls it (`tasks/get`: `working`, `input_required` with what the tool asks, then
//! `completed` with the result, `failed` with the error, or `cancelled`), answers what it asks
//! (`tasks/update`) and may stop it (`tasks/cancel`, which drops the call's instance at the
//! next epoch tick, as a cancelled request does). The tool's progress reports become the
//! task's status message, which `tasks/get` shows.
//!
//! The tasks themselves are kept by rmcp's [`TaskManager`] (the states, the answers routed to
//! the waiting call, the expiry: a task still working after its TTL fails, a finished one is
//! removed one TTL after it finished). What this module adds is who may see a task: each is
//! bound to its caller (the verified caller's issuer and subject, or nobody's when no token
//! is asked for), and another caller's id answers exactly as an id that never existed
//! (-32602); and how many there may be: `[mcp.tasks]`'s caps per caller and in total.
//! Task ids are rmcp's random (version 4) UUIDs: 122 random bits, not guessable.
//!
//! The status words, the TTL and the poll interval are the extension's; a tool's failure
//! that the tool reported (`isError`) is a `completed` task, and a failure of the host's
//! (a trap, a limit, an instance that could not be made) a `failed` one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult,
    DetailedTask, LoggingLevel, RequestId, RequestMetaObject, Task,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::asking::{self, Asking, Input, Kind, MAX_ROUNDS};
use super::calls::{Answer, ToolCall};
use super::identity;
use super::{McpServer, lock};
use crate::arguments::Arguments;
use crate::asking::{Ask, AskError, Asker};
use crate::caller::Caller;
use crate::content::{InputRequest, InputRequired};
use crate::manifest::{TaskSupport, TasksSection};
use crate::sandbox::{CallObserver, LogLevel, Observer, Progress};

/// The tasks of one server: rmcp's manager, and who owns each.
pub(super) struct Tasks {
    manager: TaskManager,
    /// The caller each task is bound to (its `identity::caller_key`), by task id.
    owners: std::sync::Mutex<HashMap<String, String>>,
    settings: TasksSection,
}

impl Tasks {
    pub(super) fn new(settings: TasksSection) -> Self {
        Self {
            manager: TaskManager::new(),
            owners: std::sync::Mutex::new(HashMap::new()),
            settings,
        }
    }

    /// Whether `caller` may start one more task: the tasks rmcp removed (expired) are
    /// forgotten first, then the caps of `[mcp.tasks]` are checked.
    fn admit(&self, caller: &str) -> Result<(), ErrorData> {
        let mut owners = lock(&self.owners);
        owners.retain(|id, _| self.manager.get_task(id).is_ok());
        if owners.len() >= self.settings.max {
            return Err(ErrorData::internal_error(
                format!(
                    "the server holds its most tasks ({}, `max` under [mcp.tasks]); try again \
                     when some have finished and expired",
                    self.settings.max
                ),
                None,
            ));
        }
        let held = owners.values().filter(|owner| *owner == caller).count();
        if held >= self.settings.max_per_caller {
            return Err(ErrorData::internal_error(
                format!(
                    "this caller holds its most tasks ({}, `max_per_caller` under [mcp.tasks]); \
                     try again when some have finished and expired",
                    self.settings.max_per_caller
                ),
                None,
            ));
        }
        Ok(())
    }

    /// Task `id` if `caller` owns it; an unknown task (-32602) otherwise, whether it is
    /// another caller's or none at all.
    fn owned(&self, id: &str, caller: &str) -> Result<(), ErrorData> {
        match lock(&self.owners).get(id) {
            Some(owner) if owner == caller => Ok(()),
            _ => Err(unknown_task(id)),
        }
    }

    /// `tasks/get`.
    pub(super) fn get(&self, id: &str, caller: &str) -> Result<DetailedTask, ErrorData> {
        self.owned(id, caller)?;
        self.manager.get_task(id)
    }

    /// `tasks/update`: the answers reach the call that waits for them; answers to keys not
    /// asked (or asked and answered already) are ignored, as the extension has it.
    pub(super) fn update(
        &self,
        id: &str,
        caller: &str,
        responses: BTreeMap<String, Value>,
    ) -> Result<(), ErrorData> {
        self.owned(id, caller)?;
        asking::check_responses(&responses)?;
        self.manager.update_task(id, responses)
    }

    /// `tasks/cancel`: the call is stopped (its instance dropped at once); a finished task
    /// stays as it finished.
    pub(super) fn cancel(&self, id: &str, caller: &str) -> Result<(), ErrorData> {
        self.owned(id, caller)?;
        self.manager.cancel_task(id)
    }
}

/// An unknown task, as the extension answers it (-32602).
fn unknown_task(id: &str) -> ErrorData {
    let shown: String = id.chars().take(64).collect();
    ErrorData::invalid_params(format!("unknown task: {shown}"), None)
}

/// A `tools/call` that runs as a task: everything it needs, owned, for it outlives its
/// request.
pub(super) struct Job {
    pub(super) id: RequestId,
    pub(super) name: String,
    pub(super) arguments: Arguments,
    pub(super) meta: RequestMetaObject,
    pub(super) level: Option<LoggingLevel>,
    pub(super) caller: Option<Arc<Caller>>,
    /// Its caller's `identity::caller_key`, which the task is bound to.
    pub(super) owner: String,
    /// What the client may be asked (its capabilities at the call).
    pub(super) capabilities: Option<ClientCapabilities>,
    /// The client of a session, which gets the tool's output lines; none when stateless.
    pub(super) peer: Option<Peer<RoleServer>>,
    /// What the request brought for the first round (answers of earlier rounds).
    pub(super) input: Input,
}

impl McpServer {
    /// Starts `job` as a task and returns its first state, once `tasks/get` finds it.
    pub(super) fn start_task(&self, job: Job) -> Result<Task, ErrorData> {
        let tasks = self.tasks()?;
        tasks.admit(&job.owner)?;
        let options = TaskOptions::new()
            .with_ttl_ms(millis(tasks.settings.ttl.0))
            .with_poll_interval_ms(millis(tasks.settings.poll_interval.0).max(1));
        let owner = job.owner.clone();
        let server = self.clone();
        let task = tasks
            .manager
            .spawn(options, move |cx| Box::pin(server.run_task(job, cx)));
        lock(&tasks.owners).insert(task.task_id.clone(), owner);
        tracing::info!(task = %task.task_id, "task started");
        Ok(task)
    }

    /// The server's tasks, once the host is loaded (which sets `[mcp.tasks]`).
    pub(super) fn tasks(&self) -> Result<Arc<Tasks>, ErrorData> {
        self.shared
            .tasks
            .get()
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("the server's tools are still loading", None))
    }

    /// Runs the task's call round by round: what a round asks for is the task's
    /// `input_required` until `tasks/update` answers it; a `tasks/cancel` stops the call.
    async fn run_task(self, job: Job, cx: TaskContext) -> Result<CallToolResult, TaskExit> {
        let stop = CancellationToken::new();
        let asked_by_server = Arc::new(AtomicUsize::new(0));
        let mut input = job.input;
        for round in 0..MAX_ROUNDS {
            let call = ToolCall {
                id: &job.id,
                name: &job.name,
                arguments: &job.arguments,
                meta: &job.meta,
                level: job.level,
                cancelled: &stop,
                observer: Some(Observer(Arc::new(StatusReports(cx.clone())))),
                asker: Some(Asker(Arc::new(TaskAsker {
                    cx: cx.clone(),
                    asked: asked_by_server.clone(),
                }))),
                input,
                caller: job.caller.clone(),
            };
            let answer = self.answer(call);
            tokio::pin!(answer);
            let answer = loop {
                tokio::select! {
                    answer = &mut answer => break answer,
                    // The call sees the cancellation and drops its instance.
                    () = cx.cancelled(), if !stop.is_cancelled() => stop.cancel(),
                }
            };
            if stop.is_cancelled() {
                return Err(TaskExit::Cancelled);
            }
            send_logs(job.peer.as_ref(), &answer).await;
            let Some(asked) = answer.asked else {
                return settle(answer);
            };
            input = Input {
                responses: surface(&cx, round, &asked, job.capabilities.as_ref()).await?,
                state: asked.state,
            };
        }
        Err(TaskExit::Error(ErrorData::internal_error(
            format!(
                "`{}` asked for input {MAX_ROUNDS} times without finishing; it was given up on",
                job.name
            ),
            None,
        )))
    }
}

/// Milliseconds of `duration`, as the extension writes them (whole numbers).
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// How a round that did not ask for input ends the task: its result (`completed`, a tool's
/// reported failure included), or `failed` when the host could not run the tool to its end.
fn settle(answer: Answer) -> Result<CallToolResult, TaskExit> {
    let result = answer.result.map_err(TaskExit::Error)?;
    // The failures of the host's side, not of the tool's: no result of the tool's exists.
    let host_failed = matches!(
        answer.outcome,
        "trap" | "exited" | "instantiate" | "unavailable" | "memory_limit" | "timeout"
    );
    if !host_failed {
        return Ok(result);
    }
    let text: Vec<&str> = (result.content.iter())
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    let data = serde_json::json!({ "kind": answer.outcome });
    Err(TaskExit::Error(ErrorData::internal_error(
        text.join("\n"),
        Some(data),
    )))
}

/// The tool's output lines, to the client of a session (a stateless client has no stream
/// left to read them on).
async fn send_logs(peer: Option<&Peer<RoleServer>>, answer: &Answer) {
    let Some(peer) = peer else { return };
    for message in &answer.logs {
        if let Err(error) = peer.notify_logging_message(message.clone()).await {
            tracing::debug!("cannot send a task's output to the client: {error}");
            return;
        }
    }
}

/// Puts what round `round` asked for in the task's `inputRequests` (the requests the client
/// can answer; -32021 as the task's error when it can answer none), and waits for every
/// answer. A key is the tool's own in the first round and gets `.N` in round N after, so that
/// no key is used twice in a task.
async fn surface(
    cx: &TaskContext,
    round: usize,
    asked: &InputRequired,
    capabilities: Option<&ClientCapabilities>,
) -> Result<BTreeMap<String, Value>, TaskExit> {
    let requests = asking::allowed(asked, capabilities)?;
    let waits = requests.into_iter().map(|(key, request)| async move {
        let surfaced = match round {
            0 => key.clone(),
            n => format!("{key}.{n}"),
        };
        let answer = cx.request_input(surfaced, request).await?;
        Ok::<_, TaskExit>((key, answer))
    });
    let answers = futures::future::try_join_all(waits).await?;
    Ok(answers.into_iter().collect())
}

/// A task's tool's progress, as the task's status message (what `tasks/get` shows).
struct StatusReports(TaskContext);

impl CallObserver for StatusReports {
    fn progress(&self, _tool: &str, progress: &Progress) {
        let amount = match progress.total {
            Some(total) => format!("{}/{total}", progress.done),
            None => format!("{}", progress.done),
        };
        let message = match &progress.message {
            Some(message) => format!("{amount}: {message}"),
            None => amount,
        };
        self.0.set_status_message(message);
    }

    fn log(&self, _tool: &str, _level: LogLevel, _message: &str) {}
}

/// Whoever answers what a task's call asks while it runs (what an MCP server of the
/// manifest asks during one of its tools): the client, through the task's `inputRequests`.
struct TaskAsker {
    cx: TaskContext,
    /// How many requests were surfaced this way, for their keys.
    asked: Arc<AtomicUsize>,
}

impl Ask for TaskAsker {
    fn ask<'a>(
        &'a self,
        _asker: &'a str,
        request: &'a InputRequest,
    ) -> BoxFuture<'a, Result<Value, AskError>> {
        Box::pin(async move {
            let request =
                asking::to_mcp(request).map_err(|e| AskError::Unsupported(e.message.into()))?;
            let key = format!("server-{}", self.asked.fetch_add(1, Ordering::Relaxed));
            self.cx
                .request_input(key, request)
                .await
                .map_err(|_| AskError::Failed("the task was cancelled".to_owned()))
        })
    }
}

impl McpServer {
    /// Whether a call of `name` may run as a task (its `task` is not `never`): such calls
    /// are not served on stdio's direct path.
    pub(super) fn may_run_as_task(&self, name: &str) -> bool {
        self.host().is_none_or(|host| {
            host.tool_options(name)
                .is_some_and(|options| options.task != TaskSupport::Never)
        })
    }

    /// Whether the `tools/call` of `name` in `cx` runs as a task: never for a tool whose
    /// `task` is `never` (the default) or that this caller may not use (refused as within a
    /// request); when the client declared the extension for an `optional` one; always for a
    /// `required` one (-32021 for a client that did not declare it); and for an
    /// `after_input` one, once the request brings answers (`answering`) on 2026-07-28,
    /// from the start in a session.
    pub(super) async fn runs_as_task(
        &self,
        name: &str,
        cx: &RequestContext<RoleServer>,
        answering: bool,
    ) -> Result<bool, ErrorData> {
        let host = tokio::select! {
            biased;
            () = cx.ct.cancelled() => return Ok(false),
            host = self.loaded_host() => host,
        };
        let support = host.tool_options(name).map(|options| options.task);
        let support = match support {
            None | Some(TaskSupport::Never) => return Ok(false),
            Some(support) => support,
        };
        let Some(served) = self.served() else {
            return Ok(false);
        };
        let allowed = served.access.allowed(identity::caller_of(cx).as_deref());
        if served.get(name).is_none() || !allowed.tool(name) {
            return Ok(false);
        }
        let declared = cx
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        let stateless = cx
            .meta
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        match support {
            TaskSupport::Optional => Ok(declared),
            _ if !declared => Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            )),
            TaskSupport::AfterInput if stateless => Ok(answering),
            _ => Ok(true),
        }
    }

    /// Starts the `tools/call` of `request` as a task, with what an earlier round of it
    /// (2026-07-28) sent back, and answers the task's first state. `level` is the least
    /// level of the tool's output lines the client wants, `caller` the caller's
    /// `identity::caller_key`, which the task is bound to.
    pub(super) async fn serve_task(
        &self,
        mut request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
        arguments: Arguments,
        level: Option<LoggingLevel>,
        caller: String,
    ) -> Result<CallToolResponse, ErrorData> {
        let stateless = cx
            .meta
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        let responses = request.input_responses.take().unwrap_or_default();
        asking::check_responses(&responses)?;
        let state = match request.request_state.as_deref() {
            Some(token) => {
                let asking = Asking {
                    kind: Kind::Tool,
                    name: &request.name,
                    arguments: arguments.text(),
                    caller: &caller,
                };
                self.state_key()?.open(token, asking)?
            }
            None => None,
        };
        let job = Job {
            id: cx.id.clone(),
            name: request.name.into_owned(),
            arguments,
            meta: cx.meta.clone(),
            level,
            caller: identity::caller_of(&cx),
            owner: caller,
            capabilities: cx.client_capabilities(),
            peer: (!stateless).then(|| cx.peer.clone()),
            input: Input { responses, state },
        };
        let task = self.start_task(job)?;
        Ok(CreateTaskResult::new(task).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task of `owner` in `tasks` that waits until it is cancelled; its id.
    fn waiting(tasks: &Tasks, owner: &str) -> Result<String, ErrorData> {
        tasks.admit(owner)?;
        let task = tasks.manager.spawn(TaskOptions::new(), |cx| {
            Box::pin(async move {
                cx.cancelled().await;
                Err(TaskExit::Cancelled)
            })
        });
        lock(&tasks.owners).insert(task.task_id.clone(), owner.to_owned());
        Ok(task.task_id)
    }

    #[tokio::test]
    async fn a_task_answers_its_caller_only_and_the_caps_hold() {
        let settings = TasksSection {
            max_per_caller: 2,
            max: 3,
            ..TasksSection::default()
        };
        let tasks = Tasks::new(settings);
        let alices = waiting(&tasks, "alice").unwrap_or_else(|e| panic!("{e:?}"));
        assert!(tasks.get(&alices, "alice").is_ok());
        // Bob, and a caller with no identity, get what an id that never was gets.
        let never = tasks.get("no-such-task", "bob").unwrap_err().message;
        for caller in ["bob", ""] {
            let refused = tasks.get(&alices, caller).unwrap_err();
            assert_eq!(refused.code.0, -32602);
            assert_eq!(refused.message.replace(&alices, "no-such-task"), never);
            assert!(tasks.cancel(&alices, caller).is_err());
            assert!(tasks.update(&alices, caller, BTreeMap::new()).is_err());
        }
        let working = tasks
            .get(&alices, "alice")
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(working.status(), rmcp::model::TaskStatus::Working);

        waiting(&tasks, "alice").unwrap_or_else(|e| panic!("{e:?}"));
        let third = waiting(&tasks, "alice").unwrap_err().message;
        assert!(third.contains("max_per_caller"), "{third}");
        waiting(&tasks, "bob").unwrap_or_else(|e| panic!("{e:?}"));
        let over = waiting(&tasks, "carol").unwrap_err().message;
        assert!(over.contains("`max` under [mcp.tasks]"), "{over}");
        // Ids are random UUIDs, never two alike.
        let ids: std::collections::HashSet<String> = lock(&tasks.owners).keys().cloned().collect();
        assert_eq!(ids.len(), 3);
        assert!(ids.iter().all(|id| uuid_like(id)), "{ids:?}");
    }

    fn uuid_like(id: &str) -> bool {
        id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4
    }
}

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
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, Peer, RoleServer};
#[cfg(feature = "redis-tasks")]
use rmcp::{model::TaskStatus, task_manager::current_timestamp};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::asking::{self, Asking, Input, Kind, MAX_ROUNDS};
use super::calls::{Answer, ToolCall};
use super::identity;
use super::running::{InMemory, Running, check_caps, unknown_task};
#[cfg(feature = "redis-tasks")]
use super::tasks_redis::RedisTasks;
use super::{McpServer, lock};
use crate::arguments::Arguments;
use crate::asking::{Ask, AskError, Asker};
use crate::caller::Caller;
use crate::content::{InputRequest, InputRequired};
use crate::manifest::{TaskSupport, TasksSection};
use crate::sandbox::{CallObserver, LogLevel, Observer, Progress};

/// The tasks of one server, and how they are kept (`[mcp.tasks]`).
pub(super) struct Tasks {
    store: Store,
    settings: TasksSection,
}

/// Where tasks are kept.
enum Store {
    /// In memory: rmcp's manager, and the caller each task is bound to (its
    /// `identity::caller_key`), by task id.
    Memory {
        manager: TaskManager,
        owners: std::sync::Mutex<HashMap<String, String>>,
    },
    /// In Redis, shared by replicas.
    #[cfg(feature = "redis-tasks")]
    Redis(Arc<RedisTasks>),
    /// A store that cannot be used (a URL that is not Redis's, a build without the feature):
    /// every task request gets this error.
    Broken(String),
}

impl Tasks {
    pub(super) fn new(settings: TasksSection) -> Self {
        let store = match settings.store.as_deref() {
            None => Store::Memory {
                manager: TaskManager::new(),
                owners: std::sync::Mutex::new(HashMap::new()),
            },
            #[cfg(feature = "redis-tasks")]
            Some(url) => match RedisTasks::new(url) {
                Ok(redis) => Store::Redis(Arc::new(redis)),
                Err(problem) => Store::Broken(format!("[mcp.tasks] store: {problem}")),
            },
            #[cfg(not(feature = "redis-tasks"))]
            Some(_) => Store::Broken(
                "[mcp.tasks] store names a Redis, and this build has no `redis-tasks` feature"
                    .to_owned(),
            ),
        };
        if let Store::Broken(problem) = &store {
            tracing::error!("{problem}: no call can run as a task");
        }
        Self { store, settings }
    }

    /// Whether `caller` may start one more task: the expired ones are forgotten first, then
    /// the caps of `[mcp.tasks]` are checked.
    async fn admit(&self, caller: &str) -> Result<(), ErrorData> {
        let (per_caller, max) = (self.settings.max_per_caller, self.settings.max);
        match &self.store {
            Store::Memory { manager, owners } => {
                let mut owners = lock(owners);
                let counted = |owners: &HashMap<String, String>| {
                    let mine = owners.values().filter(|owner| *owner == caller).count();
                    check_caps(owners.len(), mine, per_caller, max)
                };
                if counted(&owners).is_ok() {
                    return Ok(());
                }
                // At a cap: forget the tasks the manager has let go (finished and past their
                // TTL), then count again. Only here, not at every task: each look-up sweeps
                // all of the manager's tasks, so doing it for every kept id at every new task
                // cost time in the square of the tasks kept (3.6 ms a task at 2,000 kept,
                // `BENCH=tasks`, release), and the ids kept never outnumber `max`.
                owners.retain(|id, _| manager.get_task(id).is_ok());
                counted(&owners)
            }
            #[cfg(feature = "redis-tasks")]
            Store::Redis(redis) => redis.admit(caller, per_caller, max).await,
            Store::Broken(problem) => Err(broken(problem)),
        }
    }

    /// In memory: task `id` if `caller` owns it; an unknown task (-32602) otherwise, whether
    /// it is another caller's or none at all.
    fn owned(
        owners: &std::sync::Mutex<HashMap<String, String>>,
        id: &str,
        caller: &str,
    ) -> Result<(), ErrorData> {
        match lock(owners).get(id) {
            Some(owner) if owner == caller => Ok(()),
            _ => Err(unknown_task(id)),
        }
    }

    /// `tasks/get`.
    pub(super) async fn get(&self, id: &str, caller: &str) -> Result<DetailedTask, ErrorData> {
        match &self.store {
            Store::Memory { manager, owners } => {
                Self::owned(owners, id, caller)?;
                manager.get_task(id)
            }
            #[cfg(feature = "redis-tasks")]
            Store::Redis(redis) => redis.get(id, caller).await,
            Store::Broken(problem) => Err(broken(problem)),
        }
    }

    /// `tasks/update`: the answers reach the call that waits for them; answers to keys not
    /// asked (or asked and answered already) are ignored, as the extension has it.
    pub(super) async fn update(
        &self,
        id: &str,
        caller: &str,
        responses: BTreeMap<String, Value>,
    ) -> Result<(), ErrorData> {
        match &self.store {
            Store::Memory { manager, owners } => {
                Self::owned(owners, id, caller)?;
                asking::check_responses(&responses)?;
                manager.update_task(id, responses)
            }
            #[cfg(feature = "redis-tasks")]
            Store::Redis(redis) => {
                asking::check_responses(&responses)?;
                redis.update(id, caller, responses).await
            }
            Store::Broken(problem) => Err(broken(problem)),
        }
    }

    /// `tasks/cancel`: the call is stopped (its instance dropped at once); a finished task
    /// stays as it finished.
    pub(super) async fn cancel(&self, id: &str, caller: &str) -> Result<(), ErrorData> {
        match &self.store {
            Store::Memory { manager, owners } => {
                Self::owned(owners, id, caller)?;
                manager.cancel_task(id)
            }
            #[cfg(feature = "redis-tasks")]
            Store::Redis(redis) => redis.cancel(id, caller).await,
            Store::Broken(problem) => Err(broken(problem)),
        }
    }
}

fn broken(problem: &str) -> ErrorData {
    ErrorData::internal_error(format!("{problem}; fix it in the manifest"), None)
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
    pub(super) async fn start_task(&self, job: Job) -> Result<Task, ErrorData> {
        let tasks = self.tasks()?;
        tasks.admit(&job.owner).await?;
        let ttl = millis(tasks.settings.ttl.0);
        let poll = millis(tasks.settings.poll_interval.0).max(1);
        let owner = job.owner.clone();
        let server = self.clone();
        let task = match &tasks.store {
            Store::Memory { manager, owners } => {
                let options = TaskOptions::new()
                    .with_ttl_ms(ttl)
                    .with_poll_interval_ms(poll);
                let task = manager.spawn(options, move |cx| {
                    Box::pin(server.run_task(job, Arc::new(InMemory(cx))))
                });
                lock(owners).insert(task.task_id.clone(), owner);
                task
            }
            #[cfg(feature = "redis-tasks")]
            Store::Redis(redis) => {
                let now = current_timestamp();
                let mut task = Task::new(random_id()?, TaskStatus::Working, now.clone(), now);
                task.ttl_ms = Some(ttl);
                task.poll_interval_ms = Some(poll);
                redis.create(&task, &owner).await?;
                let running = redis.running(&task.task_id).await?;
                let (redis, id) = (redis.clone(), task.task_id.clone());
                tokio::spawn(async move {
                    let ended = server.run_task(job, running.clone()).await;
                    running.end();
                    redis.finish(&id, ended).await;
                });
                task
            }
            Store::Broken(problem) => return Err(broken(problem)),
        };
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
    async fn run_task(self, job: Job, cx: Arc<dyn Running>) -> Result<CallToolResult, TaskExit> {
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
                // A task outlives its request: its trace context comes from the `_meta`
                // the call was made with.
                headers: None,
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

/// A task id for the Redis store: 128 random bits, as hex.
#[cfg(feature = "redis-tasks")]
fn random_id() -> Result<String, ErrorData> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ErrorData::internal_error("no randomness for a task id", None))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
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
    cx: &Arc<dyn Running>,
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
struct StatusReports(Arc<dyn Running>);

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
    cx: Arc<dyn Running>,
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
        let task = self.start_task(job).await?;
        Ok(CreateTaskResult::new(task).into())
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::TaskStatus;

    use super::*;

    /// A task of `owner` in `tasks` (in memory) that waits until it is cancelled; its id.
    async fn waiting(tasks: &Tasks, owner: &str) -> Result<String, ErrorData> {
        tasks.admit(owner).await?;
        let Store::Memory { manager, owners } = &tasks.store else {
            panic!("the tasks are in memory");
        };
        let task = manager.spawn(TaskOptions::new(), |cx| {
            Box::pin(async move {
                cx.cancelled().await;
                Err(TaskExit::Cancelled)
            })
        });
        lock(owners).insert(task.task_id.clone(), owner.to_owned());
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
        let alices = waiting(&tasks, "alice")
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(tasks.get(&alices, "alice").await.is_ok());
        // Bob, and a caller with no identity, get what an id that never was gets.
        let never = tasks.get("no-such-task", "bob").await.unwrap_err().message;
        for caller in ["bob", ""] {
            let refused = tasks.get(&alices, caller).await.unwrap_err();
            assert_eq!(refused.code.0, -32602);
            assert_eq!(refused.message.replace(&alices, "no-such-task"), never);
            assert!(tasks.cancel(&alices, caller).await.is_err());
            assert!(
                tasks
                    .update(&alices, caller, BTreeMap::new())
                    .await
                    .is_err()
            );
        }
        let working = tasks.get(&alices, "alice").await;
        let working = working.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(working.status(), TaskStatus::Working);

        waiting(&tasks, "alice")
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let third = waiting(&tasks, "alice").await.unwrap_err().message;
        assert!(third.contains("max_per_caller"), "{third}");
        waiting(&tasks, "bob")
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let over = waiting(&tasks, "carol").await.unwrap_err().message;
        assert!(over.contains("`max` under [mcp.tasks]"), "{over}");
    }

    #[test]
    fn a_store_that_is_not_redis_is_an_error_naming_the_key() {
        let settings = TasksSection {
            store: Some("postgres://db/tasks".to_owned()),
            ..TasksSection::default()
        };
        let Store::Broken(problem) = Tasks::new(settings).store else {
            panic!("a broken store");
        };
        assert!(problem.starts_with("[mcp.tasks] store: "), "{problem}");
        assert!(problem.contains("postgres://db/tasks"), "{problem}");
    }
}

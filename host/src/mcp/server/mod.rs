//! A [`Host`]'s tools served over MCP, on stdio ([`serve_stdio`]) or Streamable HTTP
//! ([`serve_http`]): what `host mcp` runs.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use std::sync::Arc;
//! use toolhost::mcp::server::{McpServer, StdioOptions, serve_stdio};
//!
//! let host = toolhost::Host::load("example-tools/toolhost.toml").await?;
//! let server = McpServer::new(Arc::new(host));
//! let stop = async {
//!     let _ = tokio::signal::ctrl_c().await;
//! };
//! serve_stdio(server, StdioOptions::default(), stop).await?;
//! # Ok(()) }
//! ```
//!
//! `tools/list` answers the toolbox's catalog, in its order; `tools/call` runs a tool through
//! [`Toolbox::call`](crate::toolbox::Toolbox::call): the arguments are checked against the schema, and
//! a component's tool runs in a fresh sandboxed instance under its grants and limits. What a
//! call can get wrong (invalid arguments, a failure, a denied capability, a timeout, a trap)
//! is an `isError` result with the text a model is shown; an unknown tool is a JSON-RPC error
//! (-32602). A tool with an output schema answers `structuredContent` and the same JSON as
//! text. What the tool wrote to stdout and stderr goes to the client as logging
//! notifications, one per line. A cancelled request (`notifications/cancelled`, or a closed
//! HTTP stream) drops the call, which drops its instance at the next epoch tick.
//!
//! A server can start before its host is loaded ([`McpServer::loading`]): it answers
//! `initialize` at once, lists no tools until [`McpServer::loaded`], then announces them with
//! `notifications/tools/list_changed`; a call meanwhile waits for them. That is how `host mcp`
//! keeps a client from timing out while a first start compiles big components.

// MCP logging (notifications/message, logging/setLevel) is deprecated in rmcp by SEP-2577 but
// is still what clients speak.
#![allow(deprecated)]

mod asking;
mod direct;
mod disconnect;
mod http;
mod jsonrpc;
mod lines;
mod offers;
mod options;
mod reports;
mod router;
mod service;
mod stdio;
mod tools;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, RequestId, RequestMetaObject,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, Tool,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResponse, SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::arguments::Arguments;
use crate::content::InputRequired;
use crate::error::{CallError, ErrorKind};
use crate::host::Host;
use crate::sandbox::{CapturedLog, Observer};
use crate::source::{CallContext, ToolOutput};
use reports::{Notification, Report};

pub use http::serve_http;
pub use options::HttpOptions;
pub use stdio::{StdioOptions, serve_lines, serve_stdio};

use tools::Served;

/// The MCP server of a [`Host`]: an rmcp [`ServerHandler`]. Cheap to clone; every clone
/// serves the same tools and counts the same calls in flight. Each session (an HTTP session,
/// the one stdio connection) gets its own from [`session`](Self::session), for its own
/// logging level.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    /// The least level of the logging notifications this session's client wants.
    level: Arc<Mutex<LoggingLevel>>,
}

struct Shared {
    /// The host, once loaded.
    host: watch::Sender<Option<Arc<Host>>>,
    /// The tools served, once the host is loaded.
    served: Mutex<Option<Arc<Served>>>,
    /// The clients that began a session while the host was loading: told when it is loaded.
    waiting: Mutex<Vec<Peer<RoleServer>>>,
    /// Every call in flight, so that a shutdown can wait for them.
    calls: TaskTracker,
    /// Set when the server is shutting down: no new call is taken.
    draining: AtomicBool,
    /// What the `requestState`s of calls that ask for input are sealed with (none only if
    /// the system had no randomness to make it).
    state_key: Mutex<Option<Arc<asking::StateKey>>>,
}

impl McpServer {
    /// Serves `host`'s tools; the `_meta` keys that reach the tools are those of
    /// [`Host::mcp_config`].
    pub fn new(host: Arc<Host>) -> Self {
        let server = Self::loading();
        let served = Served::new(&host, host.toolbox().catalog());
        *lock(&server.shared.served) = Some(Arc::new(served));
        server.shared.host.send_replace(Some(host));
        server
    }

    /// A server whose host is still loading: it answers `initialize`, lists no tools, and
    /// holds calls until [`loaded`](Self::loaded).
    pub fn loading() -> Self {
        Self {
            shared: Arc::new(Shared {
                host: watch::Sender::new(None),
                served: Mutex::new(None),
                waiting: Mutex::new(Vec::new()),
                calls: TaskTracker::new(),
                draining: AtomicBool::new(false),
                state_key: Mutex::new(
                    asking::StateKey::random()
                        .inspect_err(|e| tracing::error!("{e}: tools cannot ask for input"))
                        .ok()
                        .map(Arc::new),
                ),
            }),
            level: Arc::new(Mutex::new(LoggingLevel::Info)),
        }
    }

    /// Serves `host`'s tools from now on, and tells the clients that began a session
    /// meanwhile (`notifications/tools/list_changed`, which may reach a client before its
    /// `notifications/initialized` was read). The `_meta` keys that reach the tools
    /// are those of [`Host::mcp_config`].
    pub async fn loaded(&self, host: Arc<Host>) {
        let waiting = {
            let mut waiting = lock(&self.shared.waiting);
            let served = Served::new(&host, host.toolbox().catalog());
            *lock(&self.shared.served) = Some(Arc::new(served));
            self.shared.host.send_replace(Some(host));
            std::mem::take(&mut *waiting)
        };
        tracing::info!("{} tools loaded", self.tool_count());
        for peer in waiting {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!("cannot tell a client the tools are loaded: {error}");
            }
        }
    }

    /// A handler for another session: the same tools and calls, a logging level of its own.
    pub fn session(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            level: Arc::new(Mutex::new(LoggingLevel::Info)),
        }
    }

    /// The host whose tools are served, once loaded.
    pub fn host(&self) -> Option<Arc<Host>> {
        self.shared.host.borrow().clone()
    }

    /// Whether the host is loaded (see [`loading`](Self::loading)).
    pub fn is_loaded(&self) -> bool {
        self.shared.host.borrow().is_some()
    }

    /// How many tools are served (none while the host is loading).
    pub fn tool_count(&self) -> usize {
        self.served().map_or(0, |served| served.tools.len())
    }

    /// How many calls are running.
    pub fn calls_in_flight(&self) -> usize {
        self.shared.calls.len()
    }

    /// Stops taking new calls (they get a JSON-RPC error), and waits up to `grace` for the
    /// calls in flight to finish. Returns whether they all did; those still running are
    /// cancelled when the transport closes.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.shared.draining.store(true, Ordering::SeqCst);
        self.shared.calls.close();
        let running = self.shared.calls.len();
        if running > 0 {
            tracing::info!("waiting up to {grace:?} for {running} call(s) in flight");
        }
        tokio::time::timeout(grace, self.shared.calls.wait())
            .await
            .is_ok()
    }

    /// Whether [`drain`](Self::drain) was called.
    pub fn is_draining(&self) -> bool {
        self.shared.draining.load(Ordering::SeqCst)
    }

    /// The served tools of the toolbox's catalog now (made again when it changed); `None`
    /// while the host is loading.
    fn served(&self) -> Option<Arc<Served>> {
        let host = self.host()?;
        let catalog = host.toolbox().catalog();
        let mut served = lock(&self.shared.served);
        let current = served.as_ref()?;
        if !Arc::ptr_eq(&current.catalog, &catalog) {
            *served = Some(Arc::new(Served::new(&host, catalog)));
        }
        served.clone()
    }

    /// The host, once it is loaded.
    async fn loaded_host(&self) -> Arc<Host> {
        let mut host = self.shared.host.subscribe();
        let loaded = host.wait_for(Option::is_some).await;
        match loaded.as_deref().ok().and_then(Option::as_ref) {
            Some(host) => host.clone(),
            // The sender lives as long as `self`.
            None => unreachable!("the server's host channel closed"),
        }
    }

    /// The call's context: the request id, and the `_meta` values `host`'s manifest lets
    /// through (a value that is not a string passes as its JSON text).
    fn context(
        host: &Host,
        id: &RequestId,
        meta: &RequestMetaObject,
        observer: Option<Observer>,
    ) -> CallContext {
        let pass_meta: &BTreeSet<String> = &host.mcp_config().pass_meta;
        let values = if pass_meta.is_empty() {
            Default::default()
        } else {
            meta.iter()
                .filter(|(key, _)| pass_meta.contains(key.as_str()))
                .map(|(key, value)| {
                    let value = match value {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    (key.clone(), value)
                })
                .collect()
        };
        CallContext {
            call_id: id.to_string(),
            values,
            observer,
            ..CallContext::default()
        }
    }

    /// The least level of the logging notifications this session's client wants.
    fn level(&self) -> LoggingLevel {
        *lock(&self.level)
    }

    /// Runs a `tools/call`, however it arrived: refused while draining, a span of its own,
    /// counted among the calls in flight.
    async fn answer(&self, call: ToolCall<'_>) -> Answer {
        if self.is_draining() {
            let error = ErrorData::internal_error(
                "the server is shutting down and takes no new calls",
                None,
            );
            return Answer::error(error);
        }
        // Each call is a span: the tool, the request, how it ended and how long it took.
        let span = tracing::info_span!(
            "mcp_call",
            tool = shortened(call.name).as_ref(),
            id = %call.id,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        let call = self.call(call, span.clone()).instrument(span);
        self.shared.calls.track_future(call).await
    }

    /// Runs the call; `span` is the one it runs in, where its outcome is recorded.
    async fn call(&self, call: ToolCall<'_>, span: tracing::Span) -> Answer {
        let host = tokio::select! {
            biased;
            () = call.cancelled.cancelled() => {
                return Answer::error(ErrorData::internal_error("cancelled", None));
            }
            host = self.loaded_host() => host,
        };
        let Some(served) = self.served() else {
            unreachable!("the tools are served once the host is loaded");
        };
        let name = call.name;
        if served.get(name).is_none() {
            return Answer::error(unknown_tool(name, &served.catalog.names()));
        }
        let mut context = Self::context(&host, call.id, call.meta, call.observer);
        context.input_responses = call.input_responses;
        context.request_state = call.request_state;
        let started = Instant::now();
        let outcome = tokio::select! {
            biased;
            () = call.cancelled.cancelled() => None,
            result = host.toolbox().call_parsed(name, call.arguments, &context) => {
                Some(result)
            }
        };
        let duration_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut logs = Vec::new();
        let (outcome, result) = match outcome {
            // Dropping the call dropped its store, and so its instance.
            None => {
                let error = CallError::Cancelled {
                    tool: name.to_owned(),
                };
                ("cancelled", error_result(error.model_message()))
            }
            Some(Ok(output)) if output.input_required.is_some() => {
                span.record("outcome", "input_required");
                return Answer {
                    logs: log_messages(name, &output, call.level),
                    result: Ok(CallToolResult::success(Vec::new())),
                    asked: output.input_required,
                };
            }
            Some(Ok(output)) => {
                logs = log_messages(name, &output, call.level);
                match served.result(name, output) {
                    Ok(result) => ("ok", result),
                    Err(problem) => {
                        tracing::warn!("`{name}` {problem}");
                        let text = "the tool returned a malformed result".to_owned();
                        ("malformed_result", error_result(text))
                    }
                }
            }
            Some(Err(CallError::UnknownTool { name, available })) => {
                // The tools changed between the look-up and the call.
                return Answer::error(unknown_tool(&name, &available));
            }
            Some(Err(error)) => {
                match error.kind() {
                    ErrorKind::InvalidArguments | ErrorKind::ToolFailed => {
                        tracing::info!("{error}");
                    }
                    _ => tracing::warn!("{}", crate::error::chain(&error)),
                }
                (error.kind().as_str(), error_result(error.model_message()))
            }
        };
        span.record("outcome", outcome);
        span.record("duration_ms", duration_ms);
        tracing::info!(tool = name, id = %call.id, duration_ms, outcome, "tools/call");
        Answer {
            logs,
            result: Ok(result),
            asked: None,
        }
    }
}

/// A `tools/call` as the server runs it, from rmcp's handler or straight from a stdio line.
struct ToolCall<'a> {
    id: &'a RequestId,
    name: &'a str,
    /// The arguments (`{}` when the client left them out).
    arguments: &'a Arguments,
    /// The request's `_meta`, whose keys the manifest lets through reach the tool.
    meta: &'a RequestMetaObject,
    /// The least level of the logging notifications the client wants; none at all when
    /// `None`.
    level: Option<LoggingLevel>,
    cancelled: &'a CancellationToken,
    /// Who gets the tool's progress reports and log lines.
    observer: Option<Observer>,
    /// The answers to what the tool asked for in an earlier round, by key.
    input_responses: BTreeMap<String, Value>,
    /// The tool's own state from that round.
    request_state: Option<String>,
}

/// What a call answers: what the tool wrote to stdout and stderr as logging notifications
/// (to be sent first), then the result; or what the tool asks for before it can finish.
struct Answer {
    logs: Vec<LoggingMessageNotificationParam>,
    result: Result<CallToolResult, ErrorData>,
    asked: Option<InputRequired>,
}

impl Answer {
    fn error(error: ErrorData) -> Self {
        Self {
            logs: Vec::new(),
            result: Err(error),
            asked: None,
        }
    }
}

/// What the tool wrote to stdout and stderr, one logging notification per line (logger: the
/// tool's name), those at `level` or above.
fn log_messages(
    tool: &str,
    output: &ToolOutput,
    level: Option<LoggingLevel>,
) -> Vec<LoggingMessageNotificationParam> {
    let Some(level) = level else {
        return Vec::new();
    };
    if output.stdout.is_empty() && output.stderr.is_empty() {
        return Vec::new();
    }
    [("stdout", &output.stdout), ("stderr", &output.stderr)]
        .into_iter()
        .flat_map(|(stream, log)| log_lines(stream, log))
        .filter(|(at, _)| *at as u8 >= level as u8)
        .map(|(at, data)| LoggingMessageNotificationParam::new(at, data).with_logger(tool))
        .collect()
}

/// The lines of a captured stream as logging notifications: each non-empty line at info, and
/// a warning when some of it was dropped.
fn log_lines(stream: &str, log: &CapturedLog) -> Vec<(LoggingLevel, Value)> {
    let mut lines: Vec<(LoggingLevel, Value)> = log
        .text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| (LoggingLevel::Info, Value::from(line)))
        .collect();
    if log.dropped > 0 {
        lines.push((
            LoggingLevel::Warning,
            Value::from(format!(
                "... {} more bytes of {stream} dropped",
                log.dropped
            )),
        ));
    }
    lines
}

fn error_result(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// An unknown tool is a JSON-RPC error: -32602, as the MCP specification's example has it
/// (-32601 would become HTTP 404 on stateless HTTP). The name is echoed shortened.
fn unknown_tool(name: &str, available: &[String]) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "there is no tool `{}`; the tools are: {}",
            shortened(name),
            available.join(", ")
        ),
        None,
    )
}

/// The most characters of a name a client sent that are echoed (in errors, in the log).
const ECHOED: usize = 64;

/// `name` as echoed: its first [`ECHOED`] characters, and `...` if there were more.
fn shortened(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(ECHOED) {
        Some((end, _)) => format!("{}... ({} bytes)", &name[..end], name.len()).into(),
        None => name.into(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a holder panicked; the value is still whole.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        if let Some(host) = self.host() {
            offers::capabilities(&mut capabilities, &host.toolbox().offers());
        }
        ServerConfig::new(capabilities)
        .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Tools run by toolhost: each call runs in a fresh WebAssembly sandbox with only the \
             capabilities its manifest grants, under limits on memory, CPU and wall-clock time.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.served().map(|served| served.tools.clone());
        Ok(ListToolsResult::with_all_items(tools.unwrap_or_default()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.served()?.get(name).cloned()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        cx.peer.set_peer_info(request.clone());
        // A client that begins while the tools load is told when they are loaded.
        let mut waiting = lock(&self.shared.waiting);
        if !self.is_loaded() {
            waiting.retain(|peer| !peer.is_transport_closed());
            waiting.push(cx.peer);
        }
        drop(waiting);
        self.negotiate_initialize(&request)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        offers::resources(&self.loaded_host().await.toolbox().offers())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        offers::templates(&self.loaded_host().await.toolbox().offers())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let host = self.loaded_host().await;
        offers::read(&host, &request.uri).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        offers::prompts(&self.loaded_host().await.toolbox().offers())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let host = self.loaded_host().await;
        offers::get(&host, &request.name, request.arguments)
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let host = self.loaded_host().await;
        offers::complete(&host, request).await
    }

    /// `subscriptions/listen` (revision 2026-07-28): the tools' list is the one thing that
    /// changes, once, when the tools finish loading.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
        Some(accepted)
    }

    /// Holds a subscription until the client ends it; tells it when the tools are loaded,
    /// if they were not when it began.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        if subscription.accepted().tools_list_changed == Some(true) && !self.is_loaded() {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                _ = self.loaded_host() => {}
            }
            if let Err(error) = subscription.sink().notify_tool_list_changed().await {
                tracing::debug!("cannot tell a subscriber the tools are loaded: {error}");
            }
        }
        subscription.cancelled().await;
        Ok(())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *lock(&self.level) = request.level;
        Ok(())
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Clients may leave `arguments` out for a tool that takes none.
        let arguments = match request.arguments.take() {
            Some(arguments) => Arguments::from_object(arguments),
            None => Arguments::empty(),
        };
        // A request of the stateless revision says which logs it wants, or gets none; in a
        // session, the session's level (`logging/setLevel`) applies.
        let stateless = cx
            .meta
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        let level = match cx.meta.log_level() {
            Some(level) => Some(level),
            None if stateless => None,
            None => Some(self.level()),
        };
        // A later round of a call that asked for input: the answers, and the tool's state
        // (only if this server sealed it for this very call).
        let responses = request.input_responses.take().unwrap_or_default();
        asking::check_responses(&responses)?;
        let mut input = Input {
            responses,
            state: match &request.request_state {
                Some(token) => self
                    .state_key()?
                    .open(token, &request.name, arguments.text())?,
                None => None,
            },
        };
        for _round in 0..asking::MAX_ROUNDS {
            let answer = self
                .answer_streaming(&cx, &request.name, &arguments, level, input)
                .await;
            let Some(asked) = answer.asked else {
                return answer.result.map(Into::into);
            };
            if stateless {
                let requests = asking::allowed(&asked, cx.meta.client_capabilities().as_ref())?;
                let state = self
                    .state_key()?
                    .seal(&request.name, arguments.text(), asked.state);
                return Ok(asking::input_required_result(requests, state).into());
            }
            // In a session the server asks the client itself, and calls again.
            input = Input {
                responses: asking::ask(&cx.peer, &asked).await?,
                state: asked.state,
            };
        }
        Err(ErrorData::internal_error(
            format!(
                "`{}` asked for input {} times without finishing; it was given up on",
                request.name,
                asking::MAX_ROUNDS
            ),
            None,
        ))
    }
}

impl McpServer {
    /// Seals the request states of calls that ask for input (2026-07-28) with a key made from
    /// `secret` instead of a random one: replicas behind a balancer share it, so that the
    /// next round of a call may reach any of them. At least 32 bytes.
    pub fn use_state_key(&self, secret: &[u8]) -> Result<(), String> {
        let key = asking::StateKey::from_secret(secret)?;
        *lock(&self.shared.state_key) = Some(Arc::new(key));
        Ok(())
    }

    fn state_key(&self) -> Result<Arc<asking::StateKey>, ErrorData> {
        lock(&self.shared.state_key).clone().ok_or_else(|| {
            ErrorData::internal_error(
                "this server cannot seal request states (no randomness)",
                None,
            )
        })
    }
}

/// What a later round of a call gets: the client's answers and the tool's state.
#[derive(Default)]
struct Input {
    responses: BTreeMap<String, Value>,
    state: Option<String>,
}

impl McpServer {
    /// Runs one round of a `tools/call` from rmcp's handler: the tool's reports go out while
    /// it runs, on the stream of its answer, and its output lines after them.
    async fn answer_streaming(
        &self,
        cx: &RequestContext<RoleServer>,
        name: &str,
        arguments: &Arguments,
        level: Option<LoggingLevel>,
        input: Input,
    ) -> Answer {
        let (observer, mut reports) = reports::channel();
        let call = ToolCall {
            id: &cx.id,
            name,
            arguments,
            meta: &cx.meta,
            level,
            cancelled: &cx.ct,
            observer: Some(observer),
            input_responses: input.responses,
            request_state: input.state,
        };
        let token = cx.meta.get_progress_token();
        let answer = self.answer(call);
        tokio::pin!(answer);
        let answer = loop {
            tokio::select! {
                biased;
                answer = &mut answer => break answer,
                Some(report) = reports.recv() => {
                    notify(&cx.peer, report, token.as_ref(), level).await;
                }
            }
        };
        while let Ok(report) = reports.try_recv() {
            notify(&cx.peer, report, token.as_ref(), level).await;
        }
        for message in &answer.logs {
            if let Err(error) = cx.peer.notify_logging_message(message.clone()).await {
                tracing::debug!("cannot send the tool's output to the client: {error}");
                break;
            }
        }
        answer
    }
}

/// Sends the notification for a tool's `report`, if the client wants one.
async fn notify(
    peer: &Peer<RoleServer>,
    report: Report,
    token: Option<&rmcp::model::ProgressToken>,
    level: Option<LoggingLevel>,
) {
    let sent = match report.notification(token, level) {
        Some(Notification::Progress(param)) => peer.notify_progress(param).await,
        Some(Notification::Log(param)) => peer.notify_logging_message(param).await,
        None => return,
    };
    if let Err(error) = sent {
        tracing::debug!("cannot send a tool's report to the client: {error}");
    }
}

/// Waits for SIGTERM (Unix): the signal `host mcp` drains and stops on. The signal is watched
/// from this call on, before the future is first polled, so a SIGTERM that arrives while the
/// tools are still loading is not lost.
pub fn terminated() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let watched = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    async move {
        #[cfg(unix)]
        match watched {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(error) => {
                tracing::warn!("cannot watch for SIGTERM: {error}");
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await;
    }
}

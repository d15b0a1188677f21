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
//!
//! The tools change later when an MCP server of the manifest changes its list: the server is
//! listed again, `tools/list` answers the new list, a tool that went is an unknown tool, and
//! every session's client and every `subscriptions/listen` stream that asked for
//! `toolsListChanged` gets `notifications/tools/list_changed` (see [`changes`]).

// MCP logging (notifications/message, logging/setLevel) is deprecated in rmcp by SEP-2577 but
// is still what clients speak.
#![allow(deprecated)]

mod approval;
mod asking;
pub mod auth;
#[cfg(test)]
mod callers_tests;
mod calls;
mod changes;
#[cfg(feature = "code-mode")]
mod code;
mod content;
mod direct;
mod disconnect;
mod fair;
mod http;
mod identity;
mod jsonrpc;
mod metered;
mod observed;
mod offers;
mod options;
mod output;
mod owners;
mod reports;
mod router;
mod running;
mod service;
mod stdio;
mod subscriptions;
mod tasks;
#[cfg(feature = "redis-tasks")]
mod tasks_redis;
mod tools;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

use crate::caller::Caller;
use crate::host::Host;

pub use http::serve_http;
pub use options::HttpServerOptions;
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
    /// The resources this session's client subscribed to (`resources/subscribe`).
    subscribed: subscriptions::Subscribed,
}

struct Shared {
    /// The host, once loaded.
    host: watch::Sender<Option<Arc<Host>>>,
    /// The tools served, once the host is loaded.
    served: Mutex<Option<Arc<Served>>>,
    /// The sessions and listen streams told when the tools change.
    listeners: Mutex<changes::Listeners>,
    /// Every call in flight, so that a shutdown can wait for them.
    calls: TaskTracker,
    /// Set when the server is shutting down: no new call is taken.
    draining: AtomicBool,
    /// What the `requestState`s of calls that ask for input are sealed with (none only if
    /// the system had no randomness to make it).
    state_key: Mutex<Option<Arc<asking::StateKey>>>,
    /// Whoever subscribed to resources: sessions and listen streams.
    subscribers: Mutex<Vec<subscriptions::Subscriber>>,
    /// The calls running as tasks, and those finished and kept (set with the host, whose
    /// manifest says how they are kept).
    tasks: OnceLock<Arc<tasks::Tasks>>,
}

impl McpServer {
    /// Serves `host`'s tools; the `_meta` keys that reach the tools are those of
    /// [`Host::mcp_config`].
    pub fn new(host: Arc<Host>) -> Self {
        let server = Self::loading();
        server.serve(host);
        server
    }

    /// A server whose host is still loading: it answers `initialize`, lists no tools, and
    /// holds calls until [`loaded`](Self::loaded).
    pub fn loading() -> Self {
        Self {
            shared: Arc::new(Shared {
                host: watch::Sender::new(None),
                served: Mutex::new(None),
                listeners: Mutex::default(),
                calls: TaskTracker::new(),
                draining: AtomicBool::new(false),
                state_key: Mutex::new(
                    asking::StateKey::random()
                        .inspect_err(|e| tracing::error!("{e}: tools cannot ask for input"))
                        .ok()
                        .map(Arc::new),
                ),
                subscribers: Mutex::new(Vec::new()),
                tasks: OnceLock::new(),
            }),
            level: Arc::new(Mutex::new(LoggingLevel::Info)),
            subscribed: Arc::default(),
        }
    }

    /// Serves `host`'s tools from now on, and tells the clients that began a session or a
    /// listen stream meanwhile (`notifications/tools/list_changed`, which may reach a client
    /// before its `notifications/initialized` was read). The `_meta` keys that reach the
    /// tools are those of [`Host::mcp_config`].
    pub async fn loaded(&self, host: Arc<Host>) {
        self.serve(host);
        tracing::info!("{} tools loaded", self.tool_count());
        self.announce().await;
    }

    /// Serves `host`'s tools from now on, and each change of them (see [`changes`]).
    fn serve(&self, host: Arc<Host>) {
        // Watched before the catalog is read: a change in between is not lost.
        let changes = host.toolbox().changes();
        let served = Arc::new(Served::new(&host, host.toolbox().catalog()));
        let settings = host.mcp_config().tasks.clone();
        let _ = (self.shared.tasks).get_or_init(|| Arc::new(tasks::Tasks::new(settings)));
        *lock(&self.shared.served) = Some(served.clone());
        self.shared.host.send_replace(Some(host.clone()));
        self.follow_changes(&host, changes, served);
    }

    /// A handler for another session: the same tools and calls, a logging level of its own.
    pub fn session(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            level: Arc::new(Mutex::new(LoggingLevel::Info)),
            subscribed: Arc::default(),
        }
    }

    /// The tools served, and what the sources offer besides, once loaded (waits for it).
    async fn loaded_served(&self) -> Arc<Served> {
        self.loaded_host().await;
        match self.served() {
            Some(served) => served,
            None => unreachable!("the tools are served once the host is loaded"),
        }
    }

    /// What the sources offer besides tools that the caller of `cx` may use (see
    /// [`Allowed::offers`](crate::toolbox::access::Allowed::offers)), once loaded.
    /// Whether `caller` may read the resource `uri` (one of a template included); before the
    /// tools are loaded, any (nothing is served then).
    pub(super) fn may_read_resource(&self, caller: &Caller, uri: &str) -> bool {
        let Some(served) = self.served() else {
            return true;
        };
        (served.access.allowed(Some(caller)).offers(&served.offers)).has_resource(uri)
    }

    async fn offers_for(&self, cx: &RequestContext<RoleServer>) -> crate::offers::Offers {
        let served = self.loaded_served().await;
        let allowed = served.access.allowed(identity::caller_of(cx).as_deref());
        allowed.offers(&served.offers)
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

    /// The least level of the logging notifications this session's client wants.
    fn level(&self) -> LoggingLevel {
        *lock(&self.level)
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
            .enable_tasks()
            .build();
        if let Some(served) = self.served() {
            offers::capabilities(&mut capabilities, &served.offers);
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
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Some(served) = self.served() else {
            return Ok(ListToolsResult::with_all_items(Vec::new()));
        };
        let allowed = served.access.allowed(identity::caller_of(&cx).as_deref());
        let tools = (served.tools.iter())
            .filter(|tool| allowed.tool(&tool.name))
            .cloned()
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// rmcp asks without the request's context (to check a `tools/call`'s `Mcp-Param-*`
    /// headers against the tool's schema): the HTTP front tells who the request is from
    /// ([`identity::request_caller`]), and a tool the caller may not use is, here too, no
    /// tool.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let served = self.served()?;
        let caller = identity::request_caller();
        if !served.access.allowed(caller.as_deref()).tool(name) {
            return None;
        }
        served.get(name).cloned()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        cx.peer.set_peer_info(request.clone());
        // Its client is told when the tools are loaded, and when they change.
        self.tell_session(cx.peer);
        self.negotiate_initialize(&request)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        offers::resources(&self.offers_for(&cx).await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        offers::templates(&self.offers_for(&cx).await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let host = self.loaded_host().await;
        let caller = identity::caller_of(&cx);
        offers::read(
            &host,
            &self.offers_for(&cx).await,
            &request.uri,
            caller.as_deref(),
        )
        .await
        .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        offers::prompts(&self.offers_for(&cx).await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let host = self.loaded_host().await;
        offers::get(self, &host, &self.offers_for(&cx).await, request, &cx).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let host = self.loaded_host().await;
        let caller = identity::caller_of(&cx);
        offers::complete(
            &host,
            &self.offers_for(&cx).await,
            request,
            caller.as_deref(),
        )
        .await
    }

    /// `subscriptions/listen` (revision 2026-07-28): the tools' list, which changes when the
    /// tools finish loading and when a source's list changes (see [`changes`]); and resources
    /// (see [`subscriptions`]).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
        accepted.resource_subscriptions = self.accepted_resources(requested);
        Some(accepted)
    }

    /// Holds a subscription until the client ends it; tells it when the tools change
    /// (they finish loading, a source's list changes), and when its resources may have
    /// changed.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let resources = subscription.accepted().resource_subscriptions.clone();
        let subscribed = resources.map(|uris| self.listen_for(subscription.sink().clone(), uris));
        let tools = (subscription.accepted().tools_list_changed == Some(true))
            .then(|| self.tell_stream(subscription.sink().clone()));
        subscription.cancelled().await;
        if let Some(subscribed) = subscribed {
            self.forget(&subscribed);
        }
        if let Some(stream) = tools {
            self.stop_telling(stream);
        }
        Ok(())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_resource(&request.uri, cx).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.unsubscribe_resource(&request.uri, &cx).await
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
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.serve_call(request, cx).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = identity::caller_key(identity::caller_of(&cx).as_deref());
        let task = self.tasks()?.get(&request.task_id, &caller).await?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = identity::caller_key(identity::caller_of(&cx).as_deref());
        let tasks = self.tasks()?;
        (tasks.update(&request.task_id, &caller, request.input_responses)).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = identity::caller_key(identity::caller_of(&cx).as_deref());
        self.tasks()?.cancel(&request.task_id, &caller).await
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

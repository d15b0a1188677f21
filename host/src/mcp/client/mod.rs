//! Tools from MCP servers: an [`McpClient`] is a [`ToolSource`] whose tools are those a
//! server lists, over stdio (a program the host starts) or Streamable HTTP.
//!
//! **Not sandboxed.** A stdio server runs as the user who runs the host, with that user's
//! files, network and environment (only [`INHERITED_ENV`] and what its `env` names); an
//! HTTP server does whatever it does. Only the host's components are sandboxed.
//!
//! What the host does for each server:
//! - starts it (a stdio server as the leader of a process group of its own) and lists its
//!   tools, within [`McpServerConfig::startup_timeout`];
//! - calls a tool with [`McpServerConfig::timeout`]; a call that takes longer fails, and the
//!   server is sent `notifications/cancelled`;
//! - bounds every answer by [`McpServerConfig::max_result`]: a longer one is read and thrown
//!   away (never kept in memory) and the call fails, at once;
//! - restarts a server that died, once: the call that was running fails, the next one runs
//!   on the new process; a server that dies again stays down (its calls fail);
//! - lists the tools again when the server says they changed
//!   (`notifications/tools/list_changed`), at once and again before the next model turn,
//!   and tells whoever waits for it ([`ToolSource::tool_changes`]);
//! - stops it with the host: its stdin is closed, then its process group gets SIGTERM,
//!   then SIGKILL ([`ToolSource::shutdown`]); when the host is dropped or interrupted, the
//!   group is killed at once. Nothing it started outlives the host.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolhost::mcp::client::{McpClient, McpServerConfig};
//! use toolhost::{CallContext, SourceOptions, Toolbox};
//!
//! # async fn example(runtime: toolhost::Runtime) -> anyhow::Result<()> {
//! let time = McpClient::connect(McpServerConfig::stdio("time", ["mcp-server-time"])).await?;
//! let toolbox = Toolbox::builder(&runtime)
//!     .source(Arc::new(time), SourceOptions::default())
//!     .build()
//!     .await?;
//! let now = toolbox
//!     .call("get_current_time", r#"{"timezone": "Asia/Tokyo"}"#, &CallContext::default())
//!     .await?;
//! println!("{}", now.text);
//! toolbox.shutdown().await;
//! # Ok(()) }
//! ```

#![allow(deprecated)] // rmcp marks MCP's logging types deprecated (SEP-2577); they still work.

pub mod auth;
mod config;
mod connection;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod http;
mod relay;
pub(crate) mod result;
mod stdio;
mod tasks;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use futures::future::BoxFuture;
use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, ErrorCode, Tool};
use serde::Serialize;
use serde_json::Value;

pub use config::{DEFAULT_STARTUP_TIMEOUT, INHERITED_ENV, McpServerConfig};
// How a manifest writes a server, under the names the client's users know.
pub use crate::manifest::mcp_server::{McpServerEntry, McpTransport};

use crate::arguments::Arguments;
use crate::error::TimeLimit;
use crate::error::{CallError, LoadError};
use crate::source::{CallContext, ToolOutput};
use crate::source::{Origin, ToolSource};
use crate::spec::ToolSpec;
use crate::telemetry::context;
use connection::{Connection, max_answer};
use handler::ToolsWatcher;
use tracing::Instrument as _;

/// The tools of one MCP server. See the [module documentation](self).
pub struct McpClient {
    shared: Arc<Shared>,
}

struct Shared {
    config: McpServerConfig,
    origin: Origin,
    tools: RwLock<Listed>,
    /// Moves each time a listing differs from the last ([`ToolSource::tool_changes`]).
    generation: tokio::sync::watch::Sender<u64>,
    /// The server said its tools changed, and they have not been listed since.
    stale: AtomicBool,
    refreshing: tokio::sync::Mutex<()>,
    state: tokio::sync::Mutex<State>,
    /// The one restart has been used.
    restarted: AtomicBool,
    identity: RwLock<Option<ServerIdentity>>,
    /// Its calls that are running, which get what it reports and asks meanwhile.
    calls: Arc<relay::Calls>,
}

#[derive(Default)]
struct Listed {
    specs: Vec<ToolSpec>,
    /// The server's name of each tool, by the name toolhost offers it under.
    own_names: HashMap<String, String>,
}

enum State {
    Up(Arc<Connection>),
    /// Down for good, and why.
    Down(String),
    Stopped,
}

/// What a server says it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerIdentity {
    /// Its name (`serverInfo.name`).
    pub name: String,
    /// Its version.
    pub version: String,
    /// The MCP version the two sides agreed on.
    pub protocol_version: String,
}

impl ToolsWatcher for Shared {
    fn mark_stale(&self) {
        self.stale.store(true, Ordering::Release);
    }

    fn relist(self: Arc<Self>) {
        tokio::spawn(async move { self.refresh().await });
    }
}

impl Shared {
    /// Starts (or reaches) the server and lists its tools; remembers what it says it is.
    async fn connect(self: &Arc<Self>) -> anyhow::Result<(Connection, Vec<Tool>)> {
        let watcher: Arc<dyn ToolsWatcher> = self.clone();
        let (connection, tools) =
            connection::connect(&self.config, Arc::downgrade(&watcher), self.calls.clone()).await?;
        self.remember_identity(&connection);
        Ok((connection, tools))
    }
}

impl McpClient {
    /// Starts (or connects to) the server `config` names and lists its tools. The error
    /// says why it failed: the program that cannot be started, the server's exit status and
    /// the end of its stderr, the timeout it ran into, the header variable that is not set.
    pub async fn connect(config: McpServerConfig) -> Result<Self, LoadError> {
        let origin = Origin::Mcp {
            name: config.name.clone(),
            endpoint: config.endpoint(),
        };
        let shared = Arc::new(Shared {
            config,
            origin,
            tools: RwLock::new(Listed::default()),
            generation: tokio::sync::watch::Sender::new(0),
            stale: AtomicBool::new(false),
            refreshing: tokio::sync::Mutex::new(()),
            state: tokio::sync::Mutex::new(State::Down(String::new())),
            restarted: AtomicBool::new(false),
            identity: RwLock::new(None),
            calls: Arc::default(),
        });
        let (connection, tools) = shared.connect().await.map_err(|source| LoadError::Source {
            origin: format!("{} ({})", shared.origin, shared.config.endpoint()),
            source,
        })?;
        shared.set_tools(&tools);
        *shared.state.lock().await = State::Up(Arc::new(connection));
        Ok(Self { shared })
    }

    /// Its configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.shared.config
    }

    /// What the server said it is, when it is connected.
    pub fn identity(&self) -> Option<ServerIdentity> {
        self.shared
            .identity
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The process id of a stdio server while it runs (also its process group's id).
    pub async fn pid(&self) -> Option<u32> {
        match &*self.shared.state.lock().await {
            State::Up(connection) => connection.process.as_ref().map(stdio::Process::pid),
            _ => None,
        }
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.shared.config.name)
            .field("endpoint", &self.shared.config.endpoint())
            .finish_non_exhaustive()
    }
}

impl ToolSource for McpClient {
    fn origin(&self) -> &Origin {
        &self.shared.origin
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.shared
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .specs
            .clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Arguments,
        context: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
        // The call context's values (tenant, user) are the embedding application's business;
        // they are not sent to a server that is not part of it. Its observer and asker get
        // what the server reports and asks during the call.
        Box::pin(self.shared.call(tool, arguments, context))
    }

    fn generation(&self) -> u64 {
        *self.shared.generation.borrow()
    }

    fn tool_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.shared.generation.subscribe())
    }

    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shared.refresh())
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shared.shutdown())
    }
}

impl Shared {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn remember_identity(&self, connection: &Connection) {
        let identity = connection.service.peer().peer_info().map(|info| {
            let (name, version) = info
                .server_info
                .as_ref()
                .map(|server| (server.name.clone(), server.version.clone()))
                .unwrap_or_default();
            ServerIdentity {
                name,
                version,
                protocol_version: info.protocol_version.to_string(),
            }
        });
        *self.identity.write().unwrap_or_else(|e| e.into_inner()) = identity;
    }

    /// Takes a new listing: tools models cannot use are left out with a warning; a listing
    /// that differs from the last bumps the generation.
    fn set_tools(&self, tools: &[Tool]) {
        let mut listed = Listed::default();
        for tool in tools {
            match result::spec(tool) {
                Ok((spec, own)) => {
                    if listed.own_names.contains_key(&spec.name) {
                        tracing::warn!(
                            server = self.name(),
                            "MCP server `{}`: tool `{own}` is left out: its name, made callable \
                             as `{}`, is taken by another of its tools",
                            self.name(),
                            spec.name
                        );
                        continue;
                    }
                    if spec.name != own {
                        tracing::info!(
                            "MCP server `{}`: tool `{own}` is offered as `{}` (models accept only \
                             letters, digits, `_` and `-`)",
                            self.name(),
                            spec.name
                        );
                    }
                    listed.own_names.insert(spec.name.clone(), own);
                    listed.specs.push(spec);
                }
                Err(problem) => tracing::warn!(
                    "MCP server `{}`: tool `{}` is left out: it {problem}",
                    self.name(),
                    tool.name
                ),
            }
        }
        let mut current = self.tools.write().unwrap_or_else(|e| e.into_inner());
        if current.specs != listed.specs {
            *current = listed;
            // After the new list is in: whoever wakes up reads it.
            drop(current);
            self.generation.send_modify(|generation| *generation += 1);
        }
    }

    /// The live connection: the current one, or, when the server died, a new one (once).
    async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, String> {
        let mut state = self.state.lock().await;
        let fate = match &*state {
            State::Up(connection) if !connection.is_closed() => return Ok(connection.clone()),
            State::Up(connection) => connection.fate().await,
            State::Down(why) => return Err(why.clone()),
            State::Stopped => {
                return Err(format!(
                    "MCP server `{}` was stopped (the host is shutting down)",
                    self.name()
                ));
            }
        };
        if self.restarted.swap(true, Ordering::AcqRel) {
            let why = format!(
                "MCP server `{}` stopped again after it had been restarted once (it {fate}); it \
                 is not restarted again",
                self.name()
            );
            tracing::error!("{why}");
            *state = State::Down(why.clone());
            return Err(why);
        }
        tracing::warn!(
            "MCP server `{}` stopped (it {fate}); restarting it",
            self.name()
        );
        match self.connect().await {
            Ok((connection, tools)) => {
                self.set_tools(&tools);
                let connection = Arc::new(connection);
                *state = State::Up(connection.clone());
                Ok(connection)
            }
            Err(error) => {
                let why = format!(
                    "MCP server `{}` stopped (it {fate}) and could not be restarted: {error:#}",
                    self.name()
                );
                tracing::error!("{why}");
                *state = State::Down(why.clone());
                Err(why)
            }
        }
    }

    /// The name the server knows tool `tool` by.
    fn own_name(&self, tool: &str) -> String {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .own_names
            .get(tool)
            .cloned()
            .unwrap_or_else(|| tool.to_owned())
    }

    async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: &Arguments,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let started = Instant::now();
        let own = self.own_name(tool);
        let unavailable = |message: String| CallError::Unavailable {
            tool: tool.to_owned(),
            message,
            source: None,
        };
        let connection = self.connection().await.map_err(unavailable)?;
        let mut params = CallToolRequestParams::new(own).with_arguments(arguments.to_object());
        // A call asked before (its caller paused for the answers): the answers, and the
        // server's state as it gave it.
        if !context.input_responses.is_empty() {
            params.input_responses = Some(context.input_responses.clone());
        }
        params.request_state = context.request_state.clone();
        // Dropping the call (at the timeout, or when the caller gives up) sends the server
        // `notifications/cancelled`.
        let peer = connection.service.peer();
        let relay: (_, &dyn relay::AnswersInput) = (&self.calls, connection.service.service());
        // The MCP conventions' client span; the server gets its trace context in `_meta`.
        let span = tracing::info_span!(
            "mcp_client_call",
            otel.name = %format_args!("tools/call {}", params.name),
            otel.kind = "client",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = %params.name,
            server = self.name(),
        );
        span.in_scope(|| {
            let meta = params.meta.get_or_insert_with(Default::default);
            context::inject_meta(meta);
        });
        let call = relay::call_tool(peer, relay, tool, params, context).instrument(span);
        let Ok((answer, reports)) = tokio::time::timeout(self.config.timeout, call).await else {
            if let Some(protocol) = connection
                .process
                .as_ref()
                .and_then(|p| p.protocol_errors())
            {
                tracing::warn!(
                    "MCP server `{}` did not answer in time; on stdout it {protocol}",
                    self.name()
                );
            }
            return Err(CallError::Timeout {
                tool: tool.to_owned(),
                kind: TimeLimit::WallClock,
                limit: self.config.timeout,
            });
        };
        match answer {
            Ok(relay::Answer::Done(result)) => {
                let output =
                    result::output(tool, result, self.config.max_result, started.elapsed());
                output.map(|output| ToolOutput { reports, ..output })
            }
            Ok(relay::Answer::Asks(asked)) => {
                let mut output = ToolOutput::text("", started.elapsed());
                output.input_required = Some(result::input_required(tool, asked)?);
                Ok(ToolOutput { reports, ..output })
            }
            Ok(relay::Answer::TaskAsks { task, requests }) => {
                let mut output = ToolOutput::text("", started.elapsed());
                output.input_required = Some(result::task_asks(tool, task, requests)?);
                Ok(ToolOutput { reports, ..output })
            }
            Err(error) => Err(self.failed(tool, &connection, error).await),
        }
    }

    /// What the server's error answer to a call means: a result too large for the host's
    /// stdio reader, a malformed message, invalid arguments, or the tool's own failure.
    fn refused(&self, tool: String, error: rmcp::ErrorData) -> CallError {
        let data = |key: &str| error.data.as_ref().and_then(|data| data.get(key));
        match data("toolhost").and_then(Value::as_str) {
            Some(stdio::TOO_LARGE) => CallError::ResultTooLarge {
                tool,
                size: data("size")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |size| {
                        usize::try_from(size).unwrap_or(usize::MAX)
                    }),
                limit: self.config.max_result,
            },
            Some(_) => CallError::Unavailable {
                tool,
                message: format!(
                    "MCP server `{}` answered with a malformed message: {}",
                    self.name(),
                    error.message
                ),
                source: None,
            },
            None if error.code == ErrorCode::INVALID_PARAMS => CallError::InvalidArguments {
                tool,
                message: error.message.into_owned(),
            },
            None => CallError::ToolFailed {
                tool,
                message: format!("{} (MCP error {})", error.message, error.code.0),
            },
        }
    }

    /// Why a call that got no result failed.
    async fn failed(&self, tool: &str, connection: &Connection, error: ServiceError) -> CallError {
        let tool = tool.to_owned();
        match error {
            ServiceError::McpError(error) => self.refused(tool, error),
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
                if connection.is_closed() || connection.process.is_some() =>
            {
                let next = if self.restarted.load(Ordering::Acquire) {
                    "it was restarted once already, so it stays down"
                } else {
                    "it will be restarted for the next call"
                };
                CallError::Unavailable {
                    tool,
                    message: format!(
                        "MCP server `{}` stopped during the call (it {}); {next}",
                        self.name(),
                        connection.fate().await
                    ),
                    source: None,
                }
            }
            // Over HTTP, a JSON answer over the transport's bound is refused by rmcp...
            ServiceError::TransportSend(error)
                if crate::error::chain(&error).contains("exceeded the maximum size") =>
            {
                CallError::ResultTooLarge {
                    tool,
                    size: max_answer(self.config.max_result),
                    limit: self.config.max_result,
                }
            }
            // ... and an event stream with an event over it is cut, which is all rmcp says.
            ServiceError::TransportClosed => CallError::Unavailable {
                tool,
                message: format!(
                    "MCP server `{}` ended the call's answer stream before the answer (a stream \
                     whose answer is over {} is cut off this way: raise `max_result` if its \
                     results are that large)",
                    self.name(),
                    crate::units::format_bytes(max_answer(self.config.max_result) as u64)
                ),
                source: None,
            },
            ServiceError::UnexpectedResponse => CallError::Unavailable {
                tool,
                message: format!(
                    "MCP server `{}` answered `tools/call` with something that is not a tool \
                     result",
                    self.name()
                ),
                source: None,
            },
            ServiceError::Cancelled { .. } => CallError::Cancelled { tool },
            other => CallError::Unavailable {
                tool,
                message: format!(
                    "the call to MCP server `{}` failed: {}",
                    self.name(),
                    crate::error::chain(&other)
                ),
                source: None,
            },
        }
    }

    async fn refresh(&self) {
        // Taken also when nothing is stale: a refresh under way finishes first.
        let _refreshing = self.refreshing.lock().await;
        if !self.stale.swap(false, Ordering::AcqRel) {
            return;
        }
        let connection = match &*self.state.lock().await {
            State::Up(connection) => connection.clone(),
            _ => return,
        };
        let listing = connection::list_tools(connection.service.peer());
        match tokio::time::timeout(self.config.timeout, listing).await {
            Ok(Ok(tools)) => self.set_tools(&tools),
            Ok(Err(error)) => tracing::warn!(
                "MCP server `{}` said its tools changed, but listing them failed ({error}); the \
                 old list stays",
                self.name()
            ),
            Err(_) => tracing::warn!(
                "MCP server `{}` said its tools changed, but did not list them within {}; the \
                 old list stays",
                self.name(),
                humantime::format_duration(self.config.timeout)
            ),
        }
    }

    async fn shutdown(&self) {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::Stopped);
        if let State::Up(connection) = previous {
            connection.stop().await;
        }
    }
}

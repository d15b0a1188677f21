//! A connection to an MCP server: starting it (a process on stdio, or a Streamable HTTP
//! endpoint), the handshake and first listing within the startup timeout, and what became of
//! a server that went away.

use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::anyhow;
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage, ServerNotification, Tool,
};
use rmcp::model::{PaginatedRequestParams, RequestMetaObject};
use rmcp::service::Peer;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::Transport;
use rmcp::{RoleClient, ServiceError};
use tracing::Instrument as _;

use super::config::McpServerConfig;
use super::handler::{Handler, ToolsWatcher};
use super::relay::Calls;
use super::{http, stdio};
use crate::manifest::mcp_server::McpTransport;
use crate::sandbox::EnvGrant;
use crate::telemetry::context;

/// How long a stdio server gets to exit after its stdin is closed, and again after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// An MCP server's answers may be longer than the result they carry (JSON escapes, the
/// envelope); this much more than `max_result` is read before an answer counts as too large
/// on its face. The result itself is then held to `max_result`.
pub(super) fn max_answer(max_result: usize) -> usize {
    max_result.saturating_mul(4).saturating_add(64 * 1024)
}

/// A connected server.
pub(super) struct Connection {
    pub(super) service: RunningService<RoleClient, Handler>,
    pub(super) process: Option<stdio::Process>,
}

/// Starts the server and lists its tools, within the startup timeout. What it reports and
/// asks during a call goes to the call `calls` knows it belongs to.
///
/// Unless the configuration pins a revision, the server is asked `server/discover` at
/// 2026-07-28 first; one that answers with a JSON-RPC error speaks only the dated revisions,
/// and is started again (or, over HTTP, reached again) and greeted with `initialize`. (rmcp's
/// own fallback gives a server 10 s to answer, which a Python server starting on a busy
/// machine can take, and then reads its late answer as a broken handshake.)
pub(super) async fn connect(
    config: &McpServerConfig,
    tools: Weak<dyn ToolsWatcher>,
    calls: Arc<Calls>,
) -> anyhow::Result<(Connection, Vec<Tool>)> {
    let pinned = config.protocol_version().map_err(anyhow::Error::msg)?;
    if pinned.is_some() {
        return connect_with(config, tools, calls, lifecycle(pinned)).await;
    }
    let discover = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match connect_with(config, tools.clone(), calls.clone(), discover).await {
        Err(error) if error.is::<DatedServer>() => {
            tracing::debug!(
                "MCP server `{}`: {error}; it is greeted with `initialize`",
                config.name
            );
            connect_with(config, tools, calls, ClientLifecycleMode::Initialize).await
        }
        connected => connected,
    }
}

/// A server that answered `server/discover` with an error: it speaks a dated revision.
#[derive(Debug, thiserror::Error)]
#[error("it does not speak 2026-07-28 (`server/discover` was answered: {0})")]
struct DatedServer(String);

/// [`connect`] with `lifecycle`.
async fn connect_with(
    config: &McpServerConfig,
    tools: Weak<dyn ToolsWatcher>,
    calls: Arc<Calls>,
    lifecycle: ClientLifecycleMode,
) -> anyhow::Result<(Connection, Vec<Tool>)> {
    let watcher: Arc<dyn Fn(&ServerJsonRpcMessage) + Send + Sync> = {
        let tools = tools.clone();
        let calls = calls.clone();
        let server = config.name.clone();
        Arc::new(move |message: &ServerJsonRpcMessage| {
            if is_list_changed(message)
                && let Some(tools) = tools.upgrade()
            {
                tools.mark_stale();
            }
            calls.observe(&server, message);
        })
    };
    let handler = Handler::new(config, tools, calls);
    let limit = max_answer(config.max_result);
    match &config.transport {
        McpTransport::Stdio {
            program,
            args,
            env,
            cwd,
        } => {
            let command = Command {
                program,
                args,
                env,
                cwd: cwd.as_deref(),
            };
            connect_stdio(config, command, (handler, lifecycle), limit, watcher).await
        }
        McpTransport::Http { .. } => {
            let (transport, listening) = http::transport(config, limit)
                .await
                .map_err(anyhow::Error::msg)?;
            let transport = Watched {
                inner: transport,
                watcher,
            };
            let startup = config.startup_timeout;
            let started = start(handler, lifecycle, transport, startup, Some(listening));
            match tokio::time::timeout(config.startup_timeout, started).await {
                Ok(Ok((service, tools))) => {
                    let connection = Connection {
                        service,
                        process: None,
                    };
                    Ok((connection, tools))
                }
                Ok(Err(error)) => Err(error),
                Err(_) => Err(anyhow!(
                    "it did not answer `initialize` and `tools/list` within {} (raise \
                     `startup_timeout` if it needs longer)",
                    humantime::format_duration(config.startup_timeout)
                )),
            }
        }
    }
}

/// How a stdio server is started.
struct Command<'a> {
    program: &'a Path,
    args: &'a [String],
    env: &'a [EnvGrant],
    cwd: Option<&'a Path>,
}

/// Starts the server `command` names and lists its tools, within the startup timeout; a
/// failure says how the process ended and what it wrote to stderr last.
async fn connect_stdio(
    config: &McpServerConfig,
    command: Command<'_>,
    (handler, lifecycle): (Handler, ClientLifecycleMode),
    limit: usize,
    watcher: Arc<dyn Fn(&ServerJsonRpcMessage) + Send + Sync>,
) -> anyhow::Result<(Connection, Vec<Tool>)> {
    let timeout = config.startup_timeout;
    let (transport, process) = stdio::spawn(
        &config.name,
        command.program,
        command.args,
        command.env,
        command.cwd,
        limit,
        watcher,
    )
    .map_err(|error| anyhow!("cannot start `{}`: {error}", command.program.display()))?;
    match tokio::time::timeout(timeout, start(handler, lifecycle, transport, timeout, None)).await {
        Ok(Ok((service, tools))) => {
            let connection = Connection {
                service,
                process: Some(process),
            };
            Ok((connection, tools))
        }
        Ok(Err(error)) if error.is::<DatedServer>() => Err(error),
        Ok(Err(error)) => {
            let exit = exit_of(&process).await;
            Err(anyhow!(
                "{error}{}{}",
                exit.map(|exit| format!("; the server {exit}"))
                    .unwrap_or_default(),
                stderr_note(&process)
            ))
        }
        Err(_) => Err(anyhow!(
            "it did not answer `initialize` and `tools/list` within {} (raise \
             `startup_timeout` if it needs longer){}",
            humantime::format_duration(timeout),
            stderr_note(&process)
        )),
    }
}

/// How the client starts with a server pinned to `protocol` (`None`: the newest revision
/// with a handshake).
fn lifecycle(protocol: Option<ProtocolVersion>) -> ClientLifecycleMode {
    match protocol {
        Some(version) if !version.has_initialize() => ClientLifecycleMode::Discover {
            preferred_versions: vec![version],
        },
        // The handler's `initialize` names the version.
        Some(_) | None => ClientLifecycleMode::Initialize,
    }
}

/// The MCP handshake (or discovery), the subscription to tool changes where the server
/// needs one, then the first listing of the tools, all within `startup`. Over HTTP,
/// `listening` turns `true` once the server can send requests of its own (a session's
/// standalone stream is open).
async fn start<T, E>(
    handler: Handler,
    lifecycle: ClientLifecycleMode,
    transport: T,
    startup: Duration,
    listening: Option<tokio::sync::watch::Receiver<bool>>,
) -> anyhow::Result<(RunningService<RoleClient, Handler>, Vec<Tool>)>
where
    T: Transport<RoleClient, Error = E> + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let discovers = matches!(lifecycle, ClientLifecycleMode::Discover { .. });
    let follower = handler.clone();
    let service = handler
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .map_err(|error| match error {
            ClientInitializeError::JsonRpcError(answer) if discovers => {
                anyhow::Error::new(DatedServer(answer.message.to_string()))
            }
            error => anyhow!("the MCP handshake failed: {error}"),
        })?;
    // rmcp keeps listings in a cache that answers from an old page when listing fails:
    // toolhost wants to know.
    service
        .peer()
        .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
        .await;
    // A server may send a request of its own (an elicitation) on the session's standalone
    // stream, which rmcp opens in the background once the handshake is done, and drop it
    // when the stream is not open yet (the TypeScript SDK does): a first call made before
    // then could wait forever for the answer to a question nobody heard. A quarter of the
    // start-up time at most (a stream that never opens is a server that never asks).
    // (A stateless server, found by discovery, has no such stream.)
    if let Some(mut listening) = listening.filter(|_| !discovers) {
        let _ = tokio::time::timeout(startup / 4, listening.wait_for(|open| *open)).await;
    }
    // A server that never acknowledges keeps half the start-up time; the listing has the
    // rest, and the server is used without following its changes.
    let subscription = follower
        .subscribe_to_tool_changes(service.peer(), startup / 2)
        .await;
    let tools = list_tools(service.peer())
        .await
        .map_err(|error| anyhow!("listing its tools failed: {error}"))?;
    if let Some(subscription) = subscription {
        follower.follow_tool_changes(subscription);
    }
    Ok((service, tools))
}

/// Every tool `peer` lists, page after page: each page a `tools/list` request, a client span of
/// the MCP conventions whose trace context goes in the request's `_meta` (as rmcp's
/// `list_all_tools` would list them, without a way to set `_meta`).
pub(super) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let span = tracing::info_span!(
            "mcp_client_request",
            otel.name = "tools/list",
            otel.kind = "client",
            mcp.method.name = "tools/list",
        );
        let mut meta = RequestMetaObject::default();
        span.in_scope(|| context::inject_meta(&mut meta));
        let mut params = PaginatedRequestParams::default().with_cursor(cursor);
        params.meta = (!meta.is_empty()).then_some(meta);
        let page = peer.list_tools(Some(params)).instrument(span).await?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(tools);
        }
    }
}

fn is_list_changed(message: &ServerJsonRpcMessage) -> bool {
    matches!(
        message,
        JsonRpcMessage::Notification(notification)
            if matches!(notification.notification, ServerNotification::ToolListChangedNotification(_))
    )
}

/// How the process ended, waiting a moment for it when its output ended first.
async fn exit_of(process: &stdio::Process) -> Option<String> {
    for _ in 0..20 {
        if let Some(status) = process.exit_status() {
            return Some(describe_exit(status));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => format!("ended ({status})"),
    }
}

fn stderr_note(process: &stdio::Process) -> String {
    let mut note = String::new();
    if let Some(stderr) = process.stderr() {
        note.push_str(&format!("; its stderr ends: {stderr}"));
    }
    if let Some(protocol) = process.protocol_errors() {
        note.push_str(&format!("; on stdout it {protocol}"));
    }
    note
}

impl Connection {
    pub(super) fn is_closed(&self) -> bool {
        self.service.is_closed()
            || self.service.peer().is_transport_closed()
            || self
                .process
                .as_ref()
                .is_some_and(|process| process.exit_status().is_some())
    }

    /// What became of it, for messages.
    pub(super) async fn fate(&self) -> String {
        match &self.process {
            Some(process) => {
                let exit = exit_of(process)
                    .await
                    .unwrap_or_else(|| "closed its stdout".to_owned());
                format!("{exit}{}", stderr_note(process))
            }
            None => "closed the connection".to_owned(),
        }
    }

    pub(super) async fn stop(&self) {
        if let Some(process) = &self.process {
            process.stop(STOP_GRACE).await;
        }
        self.service.cancellation_token().cancel();
    }
}

/// A transport that shows every incoming message to `watcher` before rmcp gets it, so a
/// `tools/list_changed` marks the tools stale before the answer that follows it arrives.
struct Watched<T> {
    inner: T,
    watcher: Arc<dyn Fn(&ServerJsonRpcMessage) + Send + Sync>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await;
        if let Some(message) = &message {
            (self.watcher)(message);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

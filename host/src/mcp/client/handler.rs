//! What the host answers an MCP server, and what it offers it: elicitation always (a
//! server's request goes to the asker of the call that runs, see [`relay`](super::relay)),
//! sampling only when its configuration grants it (it spends the user's model), roots only
//! the directories its configuration lists (none by default).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, ErrorCode, ErrorData,
    Implementation, ListRootsResult, ProtocolVersion, Root, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, Subscription};
use rmcp::{ClientHandler, Peer, RoleClient};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::config::McpServerConfig;
use super::relay::{AnswersInput, Calls, Target};
use crate::asking::AskError;
use crate::content::InputRequest;

/// Whoever keeps the server's tools: told when the server says they changed.
pub(super) trait ToolsWatcher: Send + Sync + 'static {
    /// The tools changed: they are stale until listed again.
    fn mark_stale(&self);
    /// The tools changed: list them again now.
    fn relist(self: Arc<Self>);
}

/// The host's side of one connection to a server.
#[derive(Clone)]
pub(super) struct Handler {
    server: Arc<str>,
    tools: Weak<dyn ToolsWatcher>,
    calls: Arc<Calls>,
    sampling: bool,
    roots: Arc<[PathBuf]>,
    /// The revision `initialize` names: the one the configuration pins, else the newest
    /// with a handshake.
    protocol: ProtocolVersion,
}

impl Handler {
    pub(super) fn new(
        config: &McpServerConfig,
        tools: Weak<dyn ToolsWatcher>,
        calls: Arc<Calls>,
    ) -> Self {
        Self {
            server: config.name.clone().into(),
            tools,
            calls,
            sampling: config.sampling,
            roots: config.roots.clone().into(),
            protocol: config
                .protocol_version()
                .ok()
                .flatten()
                .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE),
        }
    }

    /// Passes the server's request `method` with `params` to the asker of the call it
    /// belongs to, and reads its answer as a `T`.
    async fn relay<P: Serialize, T: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        context: &RequestContext<RoleClient>,
    ) -> Result<T, ErrorData> {
        let server = &self.server;
        let target = self
            .calls
            .target(context.meta.get_progress_token().as_ref())
            .map_err(|why| {
                tracing::info!("MCP server `{server}` sent `{method}`, which is refused: {why}");
                ErrorData::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("toolhost cannot answer `{method}`: {why}"),
                    None,
                )
            })?;
        self.ask(&target, method, params).await
    }

    /// Asks `target`'s asker the server's request `method` with `params`, and reads its
    /// answer as a `T`.
    async fn ask<P: Serialize, T: DeserializeOwned>(
        &self,
        target: &Target,
        method: &str,
        params: &P,
    ) -> Result<T, ErrorData> {
        let server = &self.server;
        let request = InputRequest {
            method: method.to_owned(),
            params: serde_json::to_value(params).unwrap_or_default(),
        };
        let asker = format!("MCP server `{server}` (tool `{}`)", target.tool);
        let answer = target.asker.ask(&asker, &request).await.map_err(|error| {
            let code = match error {
                AskError::Unsupported(_) => ErrorCode::METHOD_NOT_FOUND,
                AskError::Failed(_) => ErrorCode::INTERNAL_ERROR,
            };
            tracing::info!("`{method}` of MCP server `{server}` got no answer: {error}");
            ErrorData::new(code, format!("toolhost got no answer: {error}"), None)
        })?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(
                format!("toolhost's answer to `{method}` is not one MCP allows: {e}"),
                None,
            )
        })
    }

    /// The answer to one request of an input-required result (2026-07-28) of a call of
    /// `target`: what its asker answers, under the same grants as the requests a server
    /// sends during a call of the dated revisions.
    async fn answer(
        &self,
        target: &Target,
        request: rmcp::model::InputRequest,
    ) -> Result<Value, ErrorData> {
        use rmcp::model::InputRequest as Asked;
        let answer = match request {
            Asked::Elicitation(request) => {
                let answer: ElicitResult = self
                    .ask(target, "elicitation/create", &request.params)
                    .await?;
                serde_json::to_value(answer)
            }
            Asked::CreateMessage(request) => {
                self.may_sample()?;
                let answer: CreateMessageResult = self
                    .ask(target, "sampling/createMessage", &request.params)
                    .await?;
                serde_json::to_value(answer)
            }
            Asked::ListRoots(_) => serde_json::to_value(self.roots()?),
            // A kind of request newer than this host: say so rather than guess an answer.
            _ => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    "toolhost does not know this kind of request for input".to_owned(),
                    None,
                ));
            }
        };
        answer.map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    /// Refused unless the server's configuration lets it use the model.
    fn may_sample(&self) -> Result<(), ErrorData> {
        if self.sampling {
            return Ok(());
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "toolhost has no model for the sampling requests of MCP server `{}`: it may \
                 use the user's model only when its manifest entry says `sampling = true`",
                self.server
            ),
            None,
        ))
    }

    /// The roots the server's configuration grants; an error when it grants none.
    fn roots(&self) -> Result<ListRootsResult, ErrorData> {
        if self.roots.is_empty() {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "no roots are granted to MCP server `{}`: list the directories it may know \
                     of in its manifest entry's `roots`",
                    self.server
                ),
                None,
            ));
        }
        Ok(ListRootsResult::new(
            self.roots.iter().map(|path| root(path)).collect(),
        ))
    }
}

impl Handler {
    /// Over 2026-07-28 a server tells of changes to its tools only on a subscription
    /// (`subscriptions/listen`): if `peer` speaks it and says its tools may change, opens one
    /// and waits (up to `patience`) for its acknowledgment. Called before the first listing,
    /// so that no change falls between that listing and the subscription.
    pub(super) async fn subscribe_to_tool_changes(
        &self,
        peer: &Peer<RoleClient>,
        patience: Duration,
    ) -> Option<Subscription> {
        let info = peer.peer_info()?;
        let changes = info
            .capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed);
        if info.protocol_version.has_initialize() || changes != Some(true) {
            return None;
        }
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let refused = match tokio::time::timeout(patience, peer.listen(filter)).await {
            Ok(Ok(subscription)) => return Some(subscription),
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!(
                "no acknowledgment within {}",
                humantime::format_duration(patience)
            ),
        };
        tracing::info!(
            "MCP server `{}` refused a subscription to its tool changes ({refused}); they are \
             seen only at its restarts",
            self.server
        );
        None
    }

    /// Lists the tools again on each change `subscription` tells of, as the dated revisions'
    /// `notifications/tools/list_changed` does, in a task that ends with the connection.
    pub(super) fn follow_tool_changes(&self, mut subscription: Subscription) {
        let tools = self.tools.clone();
        tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                if !matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    continue;
                }
                let Some(tools) = tools.upgrade() else {
                    return;
                };
                tools.mark_stale();
                tools.relist();
            }
        });
    }
}

impl AnswersInput for Handler {
    fn answer_input<'a>(
        &'a self,
        target: &'a Target,
        request: rmcp::model::InputRequest,
    ) -> BoxFuture<'a, Result<Value, ErrorData>> {
        Box::pin(self.answer(target, request))
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Calls a server runs as tasks are followed to their end (`tasks.rs`).
        let mut capabilities = json!({
            "elicitation": { "form": {} },
            "extensions": { "io.modelcontextprotocol/tasks": {} },
        });
        if self.sampling {
            capabilities["sampling"] = json!({});
        }
        if !self.roots.is_empty() {
            capabilities["roots"] = json!({ "listChanged": false });
        }
        ClientConfig::new(
            serde_json::from_value::<ClientCapabilities>(capabilities).unwrap_or_default(),
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(self.protocol.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relay("elicitation/create", &request, &context).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.may_sample()?;
        self.relay("sampling/createMessage", &params, &context)
            .await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.roots()
    }

    /// A request rmcp could not read as what its method names (an elicitation whose schema is
    /// not an object, say) arrives as a custom one: the server hears what is wrong with it,
    /// rather than that the method is unknown; nobody is asked.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        let params = request.params.unwrap_or_default();
        let problem = match request.method.as_str() {
            "elicitation/create" => serde_json::from_value::<ElicitRequestParams>(params)
                .err()
                .map(|e| {
                    format!(
                        "{e}; a form's `requestedSchema` is an object schema whose properties \
                         are strings, numbers, booleans or choices"
                    )
                }),
            "sampling/createMessage" => {
                serde_json::from_value::<CreateMessageRequestParams>(params)
                    .err()
                    .map(|e| e.to_string())
            }
            method => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("toolhost does not answer `{method}`"),
                    None,
                ));
            }
        };
        let server = &self.server;
        let method = &request.method;
        let why = problem.unwrap_or_else(|| "it is not one MCP allows".to_owned());
        tracing::info!("MCP server `{server}` sent a `{method}` toolhost cannot read: {why}");
        Err(ErrorData::invalid_params(
            format!("toolhost cannot read this `{method}`: {why}"),
            None,
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // The transport already marked the tools stale; list them now rather than at the
        // next model turn, for whoever looks at them sooner.
        if let Some(tools) = self.tools.upgrade() {
            tools.mark_stale();
            tools.relist();
        }
    }
    // Progress and log messages are taken as they arrive, in order, by the transport's
    // watcher (`Calls::observe`), not here: rmcp hands notifications to the handler on tasks
    // of their own, which may run after the call's answer.
}

/// A directory as a root: its `file://` URI, named by its last component.
fn root(path: &Path) -> Root {
    let uri = url::Url::from_directory_path(path).map_or_else(
        |()| format!("file://{}", path.display()),
        |url| url.as_str().trim_end_matches('/').to_owned(),
    );
    let mut root = Root::new(uri);
    root.name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned());
    root
}

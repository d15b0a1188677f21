//! Telling `host mcp`'s clients that the tools changed: when they finish loading, and each
//! time a source's list changes afterwards (an MCP server of the manifest sent
//! `notifications/tools/list_changed` and its tools were listed again).
//!
//! Who is told: the client of every live session (dated revisions: the notification goes to
//! its peer), and every `subscriptions/listen` stream (2026-07-28) that accepted
//! `toolsListChanged`, for as long as it is open. What `tools/list` answers and which tools
//! a call may name are made again from the new catalog before anyone is told.

use std::sync::{Arc, Mutex, Weak};

use rmcp::model::LoggingLevel;
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};

use super::tools::Served;
use super::{McpServer, Shared, lock};
use crate::host::Host;
use crate::toolbox::ToolChanges;

/// Everyone who wants to know when the tools change.
#[derive(Default)]
pub(super) struct Listeners {
    /// The clients of the sessions (closed ones are dropped as they are seen).
    sessions: Vec<Peer<RoleServer>>,
    /// The listen streams that accepted `toolsListChanged`, by a number of their own.
    streams: Vec<(u64, SubscriptionSink)>,
    /// The number of the next stream.
    next: u64,
}

impl McpServer {
    /// Tells the client of the session `peer` when the tools change, while it is open.
    pub(super) fn tell_session(&self, peer: Peer<RoleServer>) {
        let mut listeners = lock(&self.shared.listeners);
        listeners
            .sessions
            .retain(|peer| !peer.is_transport_closed());
        listeners.sessions.push(peer);
    }

    /// Tells the listen stream `sink` when the tools change, until
    /// [`stop_telling`](Self::stop_telling) with the number returned.
    pub(super) fn tell_stream(&self, sink: SubscriptionSink) -> u64 {
        let mut listeners = lock(&self.shared.listeners);
        let id = listeners.next;
        listeners.next += 1;
        listeners.streams.push((id, sink));
        id
    }

    /// The listen stream numbered `id` has ended.
    pub(super) fn stop_telling(&self, id: u64) {
        lock(&self.shared.listeners)
            .streams
            .retain(|(stream, _)| *stream != id);
    }

    /// Tells every live session and listen stream that the tools changed.
    pub(super) async fn announce(&self) {
        let (sessions, streams) = {
            let mut listeners = lock(&self.shared.listeners);
            listeners
                .sessions
                .retain(|peer| !peer.is_transport_closed());
            let streams: Vec<SubscriptionSink> =
                listeners.streams.iter().map(|(_, s)| s.clone()).collect();
            (listeners.sessions.clone(), streams)
        };
        let sessions = sessions.iter().map(|peer| async move {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!("cannot tell a client the tools changed: {error}");
            }
        });
        let streams = streams.iter().map(|sink| async move {
            if let Err(error) = sink.notify_tool_list_changed().await {
                tracing::debug!("cannot tell a listen stream the tools changed: {error}");
            }
        });
        futures::future::join(
            futures::future::join_all(sessions),
            futures::future::join_all(streams),
        )
        .await;
    }

    /// From now on, while the server lives: on each change of `host`'s tools (`changes`,
    /// made before `served` was), serves the new tools and tells everyone who listens.
    pub(super) fn follow_changes(&self, host: &Host, changes: ToolChanges, served: Arc<Served>) {
        if !changes.can_change() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                "{} tools served outside a Tokio runtime: changes to them are not announced",
                host.toolbox().catalog().len()
            );
            return;
        };
        runtime.spawn(follow(Arc::downgrade(&self.shared), changes, served));
    }
}

/// Serves and announces each change of the tools, until the server or the sources are gone.
async fn follow(shared: Weak<Shared>, mut changes: ToolChanges, mut announced: Arc<Served>) {
    while changes.changed().await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let server = McpServer {
            shared,
            level: Arc::new(Mutex::new(LoggingLevel::Info)),
            subscribed: Arc::default(),
        };
        let Some(served) = server.served() else {
            continue;
        };
        // A change of tools that are not served (excluded by the manifest) is no change here.
        if served.tools == announced.tools {
            continue;
        }
        tracing::info!("the tools changed: {} served now", served.tools.len());
        announced = served;
        server.announce().await;
    }
}

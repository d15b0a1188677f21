//! Resource subscriptions: `resources/subscribe` and `resources/unsubscribe` in a session
//! (revisions up to 2025-11-25), `subscriptions/listen`'s `resourceSubscriptions` (2026-07-28),
//! and when a subscriber hears `notifications/resources/updated`.
//!
//! toolhost cannot see inside a component, so it cannot know when a resource changes; the rule
//! is what it can know: after a `tools/call` of a tool that succeeded and is not served as
//! read-only (its `readOnlyHint`, the manifest's override included, is not `true`), every
//! subscribed URI of a resource of
//! that tool's own source (component) is notified, once per subscriber. A read-only tool, a
//! failed call, or another component's tool notifies nobody.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{ErrorData, SubscriptionFilter};
use rmcp::service::{RequestContext, SubscriptionSink};
use rmcp::{Peer, RoleServer};

use super::tools::Served;
use super::{McpServer, lock, offers};
use crate::host::Host;

/// The most resources one session (or one `subscriptions/listen` stream) may subscribe to.
pub(super) const MAX_SUBSCRIPTIONS: usize = 1000;

/// The URIs one session or listen stream is subscribed to.
pub(super) type Subscribed = Arc<Mutex<BTreeSet<String>>>;

/// Someone told when subscribed resources may have changed.
pub(super) struct Subscriber {
    to: To,
    uris: Subscribed,
}

#[derive(Clone)]
enum To {
    /// The client of a session.
    Session(Peer<RoleServer>),
    /// A `subscriptions/listen` stream.
    Listen(SubscriptionSink),
}

impl To {
    async fn notify(&self, uri: String) {
        let sent = match self {
            Self::Session(peer) => peer
                .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri))
                .await
                .map_err(|e| e.to_string()),
            Self::Listen(sink) => sink
                .notify_resource_updated(uri)
                .await
                .map_err(|e| e.to_string()),
        };
        if let Err(error) = sent {
            tracing::debug!("cannot tell a subscriber a resource may have changed: {error}");
        }
    }

    fn is_gone(&self) -> bool {
        match self {
            Self::Session(peer) => peer.is_transport_closed(),
            Self::Listen(_) => false,
        }
    }
}

impl McpServer {
    /// `resources/subscribe`: `uri` must be a resource (listed, or of a template), and the
    /// session may hold at most [`MAX_SUBSCRIPTIONS`].
    pub(super) async fn subscribe_resource(
        &self,
        uri: &str,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        offers::check_subscribable(&self.offers_for(&cx).await, uri)?;
        let peer = cx.peer;
        {
            let mut uris = lock(&self.subscribed);
            if !uris.contains(uri) && uris.len() >= MAX_SUBSCRIPTIONS {
                return Err(ErrorData::invalid_params(
                    format!(
                        "this session is subscribed to {MAX_SUBSCRIPTIONS} resources, the most \
                         it may be; unsubscribe from one first"
                    ),
                    Some(serde_json::json!({ "uri": uri })),
                ));
            }
            uris.insert(uri.to_owned());
        }
        let mut subscribers = lock(&self.shared.subscribers);
        // The sessions that ended (closed, or expired) are let go here too, not only after a
        // call: a server whose tools never write would keep them all.
        subscribers.retain(|s| !s.to.is_gone());
        if !subscribers
            .iter()
            .any(|s| Arc::ptr_eq(&s.uris, &self.subscribed))
        {
            subscribers.push(Subscriber {
                to: To::Session(peer),
                uris: self.subscribed.clone(),
            });
        }
        Ok(())
    }

    /// `resources/unsubscribe`: the session hears no more of `uri` (unsubscribing from a URI
    /// it was not subscribed to is no error).
    pub(super) async fn unsubscribe_resource(
        &self,
        uri: &str,
        cx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        offers::check_subscribable(&self.offers_for(cx).await, uri)?;
        lock(&self.subscribed).remove(uri);
        Ok(())
    }

    /// Of the `resourceSubscriptions` a `subscriptions/listen` asks for, those it gets: the
    /// URIs of resources there are (none while the tools load), at most
    /// [`MAX_SUBSCRIPTIONS`].
    pub(super) fn accepted_resources(&self, requested: &SubscriptionFilter) -> Option<Vec<String>> {
        let served = self.served()?;
        let accepted: Vec<String> = requested
            .resource_subscriptions
            .as_ref()?
            .iter()
            .filter(|uri| served.offers.has_resource(uri))
            .take(MAX_SUBSCRIPTIONS)
            .cloned()
            .collect();
        (!accepted.is_empty()).then_some(accepted)
    }

    /// Tells `sink` (a listen stream) of changes to `uris` until [`forget`](Self::forget).
    pub(super) fn listen_for(&self, sink: SubscriptionSink, uris: Vec<String>) -> Subscribed {
        let uris = Arc::new(Mutex::new(uris.into_iter().collect()));
        lock(&self.shared.subscribers).push(Subscriber {
            to: To::Listen(sink),
            uris: Arc::clone(&uris),
        });
        uris
    }

    /// Stops telling the listen stream that holds `uris`.
    pub(super) fn forget(&self, uris: &Subscribed) {
        lock(&self.shared.subscribers).retain(|s| !Arc::ptr_eq(&s.uris, uris));
    }

    /// After tool `tool`'s call succeeded: if it is not served as read-only (its annotations,
    /// the manifest's overrides included), every subscriber to a resource of its source hears
    /// that the resource may have changed (see the module's rule).
    pub(super) async fn after_call(&self, host: &Host, served: &Served, tool: &str) {
        let toolbox = host.toolbox();
        let writes = served.get(tool).is_some_and(|tool| {
            tool.annotations
                .as_ref()
                .and_then(|annotations| annotations.read_only_hint)
                != Some(true)
        });
        let Some(source) = toolbox.source_of(tool).filter(|_| writes) else {
            return;
        };
        let of_source = |uri: &String| {
            toolbox
                .resource_source(uri)
                .is_some_and(|owner| Arc::ptr_eq(owner, &source))
        };
        let told: Vec<(To, Vec<String>)> = {
            let mut subscribers = lock(&self.shared.subscribers);
            subscribers.retain(|s| !s.to.is_gone());
            subscribers
                .iter()
                .filter_map(|s| {
                    let uris: Vec<String> = lock(&s.uris)
                        .iter()
                        .filter(|&uri| of_source(uri))
                        .cloned()
                        .collect();
                    (!uris.is_empty()).then(|| (s.to.clone(), uris))
                })
                .collect()
        };
        for (to, uris) in told {
            for uri in uris {
                to.notify(uri).await;
            }
        }
    }
}

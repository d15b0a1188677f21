//! How the HTTP server runs: what it accepts, and the limits on what a peer can make it hold.

use std::time::Duration;

use super::auth::ResourceServerConfig;
use crate::telemetry::MetricsPage;

/// How the HTTP server runs.
#[derive(Debug, Clone)]
pub struct HttpServerOptions {
    /// `Host` header values accepted besides the loopback ones (`localhost`, `127.0.0.1`,
    /// `::1`) and the bound address: `example.com` (any port) or `example.com:8080`. Any other
    /// `Host` is refused with 403, against DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// `Origin` header values accepted besides the loopback ones (`http://localhost:*`, ...):
    /// `https://app.example.com:443`, `http://example.com:*`. A request with another `Origin`
    /// is refused with 403; one without an `Origin` (not from a browser) passes.
    pub allowed_origins: Vec<String>,
    /// The bearer token every request to `/mcp` must carry (`Authorization: Bearer ...`);
    /// required to listen on an address other than loopback.
    pub token: Option<String>,
    /// The access tokens accepted, as an OAuth 2.1 resource server (the manifest's
    /// `[mcp.auth]`): a request to `/mcp` needs one, and its caller reaches the handlers.
    /// Not together with `token`.
    pub auth: Option<ResourceServerConfig>,
    /// Serve without sessions: every POST stands alone, there is no standalone SSE stream.
    pub stateless: bool,
    /// The largest request body, in bytes: one declared larger gets 413 before it is read,
    /// one that turns out larger gets 413 when it passes the limit.
    pub max_body: usize,
    /// How long a client may take to send a request's headers, and then its body (and how
    /// long an idle connection stays open); past it the connection is closed (a body cut off
    /// gets 408 first).
    pub read_timeout: Duration,
    /// The most connections served at once. Past it a connection gets 503 to any request
    /// (`/health` still answers) and is closed; past 64 more, it is closed unanswered.
    pub max_connections: usize,
    /// The most sessions kept at once; an `initialize` past it gets 503, with a JSON-RPC
    /// error saying so.
    pub max_sessions: usize,
    /// How long a session may go without a request before it ends (its client then gets 404
    /// and starts a new one, as MCP says).
    pub session_idle_timeout: Duration,
    /// How long a shutdown waits for calls in flight before cancelling them.
    pub shutdown_grace: Duration,
    /// What `GET /metrics` answers (behind the same checks as `/mcp`); without it, 404.
    pub metrics: Option<MetricsPage>,
}

impl Default for HttpServerOptions {
    /// Loopback hosts and origins only, no token nor resource server, sessions, 4 MiB bodies read within 30 s,
    /// 512 connections, 1,000 sessions ending after 2 minutes idle, 10 s of grace, no `/metrics`.
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            token: None,
            auth: None,
            stateless: false,
            max_body: 4 << 20,
            read_timeout: Duration::from_secs(30),
            max_connections: 512,
            max_sessions: 1000,
            session_idle_timeout: Duration::from_secs(120),
            shutdown_grace: Duration::from_secs(10),
            metrics: None,
        }
    }
}

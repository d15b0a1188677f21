//! How the HTTP server runs: what it accepts, and the limits on what a peer can make it hold.

use std::time::Duration;

/// How the HTTP server runs.
#[derive(Debug, Clone)]
pub struct HttpOptions {
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
    /// Serve without sessions: every POST stands alone, there is no standalone SSE stream.
    pub stateless: bool,
    /// The largest request body, in bytes (larger ones get 413).
    pub max_body: usize,
    /// How long a shutdown waits for calls in flight before cancelling them.
    pub shutdown_grace: Duration,
}

impl Default for HttpOptions {
    /// Loopback hosts and origins only, no token, sessions, 4 MiB bodies, 10 s of grace.
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            token: None,
            stateless: false,
            max_body: 4 << 20,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

//! What a stored login holds, for `host auth status`: never the tokens themselves.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::TokenResponse;

use super::server::ServerAuth;
use super::store::FileTokenStore;
use crate::mcp::client::config::McpServerConfig;

/// A server's stored login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginStatus {
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// How long the access token is still valid for (zero once expired), when the server
    /// said how long it lasts.
    pub expires_in: Option<Duration>,
    /// Whether a refresh token is kept (then an expired access token is renewed without a
    /// login).
    pub refreshable: bool,
}

/// The login kept in `dir` for the server `config` names, if there is one. An error when
/// it is not a server at a URL, or the store cannot be trusted or read.
pub fn status(config: &McpServerConfig, dir: &Path) -> anyhow::Result<Option<LoginStatus>> {
    let server = ServerAuth::new(config, dir)?;
    of(&server.store)
}

pub(super) fn of(store: &FileTokenStore) -> anyhow::Result<Option<LoginStatus>> {
    let Some(file) = store.read().map_err(anyhow::Error::msg)? else {
        return Ok(None);
    };
    let credentials = file.credentials;
    let Some(token) = credentials.token_response else {
        return Ok(None);
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let expires_in = match (token.expires_in(), credentials.token_received_at) {
        (Some(lasts), Some(received)) => {
            let left = lasts.as_secs().saturating_sub(now.saturating_sub(received));
            Some(Duration::from_secs(left))
        }
        _ => None,
    };
    let scopes = match token.scopes() {
        Some(scopes) if credentials.granted_scopes.is_empty() => {
            scopes.iter().map(|scope| scope.to_string()).collect()
        }
        _ => credentials.granted_scopes,
    };
    Ok(Some(LoginStatus {
        scopes,
        expires_in,
        refreshable: token.refresh_token().is_some(),
    }))
}

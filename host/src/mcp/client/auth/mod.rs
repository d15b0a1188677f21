//! Authorization for MCP servers at a URL, as the MCP authorization spec has it (OAuth 2.1):
//! rmcp's implementation (metadata discovery by RFC 9728 and RFC 8414 with the issuer
//! checks, dynamic registration, Client ID Metadata Documents, PKCE, resource indicators,
//! refresh) with the host's parts around it: the manifest's `auth` table, a token store in
//! the cache directory, a person's login on a loopback redirect, and errors that say what to
//! run.
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! use toolhost::mcp::client::McpServerConfig;
//! use toolhost::mcp::client::auth::{self, ScriptedBrowser};
//!
//! let notes = McpServerConfig::http("notes", "http://127.0.0.1:8931/mcp");
//! let dir = auth::default_token_dir().expect("a cache directory");
//! let login = auth::login(&notes, &dir, &ScriptedBrowser, &[], std::time::Duration::from_secs(60)).await?;
//! println!("logged in to notes, scopes {:?}", login.scopes);
//! # Ok(()) }
//! ```

pub(crate) mod browser;
pub(crate) mod client;
pub(crate) mod explained;
mod login;
pub(crate) mod server;
mod status;
pub(crate) mod store;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow};

pub use browser::{Browser, RunBrowser, ScriptedBrowser};
pub use status::{LoginStatus, status};
pub use store::{FileTokenStore, default_token_dir};

pub use crate::manifest::mcp_auth::{AuthEntry, ClientIdentity};

use crate::mcp::client::config::McpServerConfig;
use server::ServerAuth;

/// What a login got.
#[derive(Debug, Clone)]
pub struct Login {
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// How long the access token is valid for, when the server said.
    pub expires_in: Option<Duration>,
    /// Whether a refresh token came with it (then an expired token is renewed without a
    /// login).
    pub refreshable: bool,
    /// The file the tokens are kept in (`0600`).
    pub path: PathBuf,
}

/// Logs in to the server `config` names, through `browser` (the authorization URL opened,
/// the redirect received on 127.0.0.1), waiting up to `timeout`; the tokens are kept in
/// `dir`, replacing an earlier login only when this one succeeds. `extra_scopes` are asked
/// for besides the manifest's and the server's.
pub async fn login(
    config: &McpServerConfig,
    dir: &Path,
    browser: &dyn Browser,
    extra_scopes: &[String],
    timeout: Duration,
) -> anyhow::Result<Login> {
    let server = ServerAuth::new(config, dir)?;
    let failed = || format!("logging in to `{}` failed", server.name);
    let challenge = client::challenge(&server).await.with_context(failed)?;
    // A new login asks again for what the last one was granted (a step-up adds to it).
    let mut scopes = match status::of(&server.store) {
        Ok(Some(last)) if !extra_scopes.is_empty() => last.scopes,
        _ => Vec::new(),
    };
    scopes.extend(extra_scopes.iter().cloned());
    login::authorize(&server, challenge.as_deref(), browser, &scopes, timeout)
        .await
        .with_context(failed)?;
    let status = status::of(&server.store)
        .with_context(failed)?
        .ok_or_else(|| anyhow!("the login left no tokens"))
        .with_context(failed)?;
    Ok(Login {
        scopes: status.scopes,
        expires_in: status.expires_in,
        refreshable: status.refreshable,
        path: server.store.path().to_owned(),
    })
}

/// Forgets the login to `config`'s server kept in `dir`; `true` when there was one.
pub fn logout(config: &McpServerConfig, dir: &Path) -> anyhow::Result<bool> {
    let server = ServerAuth::new(config, dir)?;
    server.store.remove().map_err(anyhow::Error::msg)
}

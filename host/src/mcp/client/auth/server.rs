//! One server's authorization settings, resolved from its configuration, and the rmcp
//! authorization manager made for it.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use rmcp::transport::auth::AuthorizationManager;

use super::browser::Browser;
use super::store::FileTokenStore;
use crate::manifest::mcp_auth::AuthEntry;
use crate::manifest::mcp_server::McpTransport;
use crate::mcp::client::config::{McpServerConfig, expand_env};

/// A server's authorization settings, resolved: its name, URL, `auth` table (or the
/// defaults), static headers, and where its login is kept.
#[derive(Clone)]
pub(crate) struct ServerAuth {
    pub(crate) name: String,
    pub(crate) url: String,
    pub(crate) entry: AuthEntry,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) store: FileTokenStore,
    /// Who logs in again when the server turns the token down during a run (the scripted
    /// browser of a test harness, whose logins stay in memory); nobody, in `host run`.
    pub(crate) browser: Option<Arc<dyn Browser>>,
}

impl ServerAuth {
    /// The settings of `config`, whose logins are kept in `dir`; an error when it is not
    /// a server at a URL.
    pub(crate) fn new(config: &McpServerConfig, dir: &Path) -> anyhow::Result<Self> {
        let McpTransport::Http { url, headers } = &config.transport else {
            return Err(anyhow!(
                "`{}` is not a server at a `url`: there is nothing to log in to",
                config.name
            ));
        };
        Ok(Self {
            name: config.name.clone(),
            url: url.clone(),
            entry: config.auth.clone().unwrap_or_default(),
            headers: headers.clone(),
            store: FileTokenStore::new(dir, &config.name, url),
            browser: config.browser.as_ref().map(|browser| browser.0.clone()),
        })
    }

    /// The value of a `${NAME}` secret reference; the error names the key and the variable,
    /// never a value.
    pub(crate) fn secret(&self, reference: &str) -> anyhow::Result<String> {
        expand_env(reference, |name| std::env::var(name).ok())
            .map_err(|problem| anyhow!("`auth.client_secret`: {problem}"))
    }

    /// Whether a header of the manifest already authorizes (then OAuth stays out of it).
    pub(crate) fn has_static_authorization(&self) -> bool {
        self.headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    }
}

/// An rmcp authorization manager for `server`, its tokens in the server's store when
/// `stored` and no run browser logs in (else in memory).
pub(crate) async fn manager_for(
    server: &ServerAuth,
    stored: bool,
) -> anyhow::Result<AuthorizationManager> {
    crate::tls::install_crypto_provider();
    let mut manager = AuthorizationManager::new(server.url.as_str())
        .await
        .with_context(|| format!("`{}` is not a URL OAuth can use", server.url))?;
    if !crate::tls::extra_roots()?.is_empty() {
        // rmcp's own OAuth clients trust the platform's roots only. With the CA bundle named,
        // the host's client is used instead, which trusts it too; rmcp then checks only the
        // host names of the URLs the metadata names, not the addresses they resolve to.
        let client = crate::tls::client_builder()?
            .timeout(std::time::Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::limited(10))
            .build()?;
        manager.with_client(client)?;
    }
    if stored && server.browser.is_none() {
        manager.set_credential_store(server.store.clone());
    }
    Ok(manager)
}

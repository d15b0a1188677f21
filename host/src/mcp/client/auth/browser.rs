//! Who opens an authorization URL: a person (the command line shows it to them) or a
//! script; and the browser a run may log in with.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

/// Who opens an authorization URL: a person (the URL is shown to them) or a script.
pub trait Browser: Send + Sync {
    /// Opens `url`. The authorization server sends the browser on to the login's redirect
    /// URI when the person (or the script) has approved; the login waits for that, so this
    /// may return at once.
    fn open<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// The browser that logs in to a server when it asks for authorization during a run (a test
/// harness's script; a run has none by default, and then fails with a message naming
/// `host auth login`). Logins it makes are kept in memory only, for the run.
#[derive(Clone)]
pub struct RunBrowser(pub Arc<dyn Browser>);

impl std::fmt::Debug for RunBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunBrowser")
    }
}

impl PartialEq for RunBrowser {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A browser that is a script: it sends a GET to the authorization URL and follows the
/// redirects, up to the redirect URI. What an authorization server that approves at once
/// (a test's, the conformance suite's) needs, no more.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScriptedBrowser;

impl Browser for ScriptedBrowser {
    fn open<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let client = crate::tls::client_builder()
                .map_err(|e| e.to_string())?
                .redirect(reqwest::redirect::Policy::limited(10))
                .timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| e.to_string())?;
            let response = client
                .get(url)
                .send()
                .await
                .map_err(|e| format!("the authorization URL could not be fetched: {e}"))?;
            if !response.status().is_success() {
                return Err(format!(
                    "the authorization server answered {} to the authorization URL",
                    response.status()
                ));
            }
            Ok(())
        })
    }
}

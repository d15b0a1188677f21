//! Sessions bound to the caller that opened them: an `Mcp-Session-Id` is honoured only for
//! requests of the same verified caller (issuer and subject) as the `initialize` that made
//! it. Anyone else presenting it (another token, or none) is answered 404, as for a session
//! there is not: MCP's security best practices ask servers to bind session ids to the user,
//! and a 404 tells the other caller nothing about the session (a 403 would say it exists),
//! while a client that gets 404 starts a session of its own, which is what it should do.

use std::collections::HashMap;
use std::sync::Mutex;

use http::HeaderMap;

use super::lock;

/// The header that names a session.
const SESSION: &str = "mcp-session-id";

/// Who opened each session: its id, and its caller's key (see
/// [`identity::caller_key`](super::identity::caller_key)).
#[derive(Default)]
pub(super) struct SessionOwners {
    owners: Mutex<HashMap<String, String>>,
}

impl SessionOwners {
    /// Binds the session an `initialize`'s answer names (in `answer`, its headers) to the
    /// caller `key`. An answer without a session (stateless, or refused) binds nothing.
    pub(super) fn bind(&self, answer: &HeaderMap, key: String) {
        if let Some(id) = session(answer) {
            lock(&self.owners).insert(id.to_owned(), key);
        }
    }

    /// Whether a request with `headers` names a session another caller than `key` opened.
    pub(super) fn refuses(&self, headers: &HeaderMap, key: &str) -> bool {
        let Some(id) = session(headers) else {
            return false;
        };
        lock(&self.owners).get(id).is_some_and(|owner| owner != key)
    }

    /// Forgets the sessions that ended (`alive` says which still are), so that the owners
    /// kept never outnumber the sessions.
    pub(super) fn forget_ended(&self, alive: impl Fn(&str) -> bool) {
        lock(&self.owners).retain(|id, _| alive(id));
    }
}

/// The session `headers` name, if any.
fn session(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION)?.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naming(id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            SESSION,
            http::HeaderValue::from_str(id).expect("a header value"),
        );
        headers
    }

    #[test]
    fn a_session_serves_only_the_caller_that_opened_it() {
        let owners = SessionOwners::default();
        owners.bind(&naming("s1"), "alice".to_owned());
        owners.bind(&HeaderMap::new(), "bob".to_owned());
        assert!(!owners.refuses(&naming("s1"), "alice"));
        assert!(owners.refuses(&naming("s1"), "bob"));
        assert!(
            owners.refuses(&naming("s1"), ""),
            "the operator's (no caller) too"
        );
        // Sessions it does not know are left to rmcp (404 when they do not exist).
        assert!(!owners.refuses(&naming("s2"), "bob"));
        assert!(!owners.refuses(&HeaderMap::new(), "bob"));
        owners.forget_ended(|id| id != "s1");
        assert!(!owners.refuses(&naming("s1"), "bob"));
    }
}

//! Who made a request to `host mcp`: the [`Caller`] the HTTP front verified, as rmcp hands it
//! to a handler, and what the server binds to it (the caller's part of the tools, a session,
//! a `requestState`).
//!
//! The HTTP front puts an `Arc<Caller>` in the extensions of each request whose access token
//! it verified; rmcp's Streamable HTTP service passes the request's `http::request::Parts` to
//! handlers in the request context's extensions. Nothing else sets it: no header names an
//! identity. stdio and a static bearer token have none (the operator).

use std::fmt::Write as _;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::Extensions;
use rmcp::service::RequestContext;
use sha2::{Digest as _, Sha256};

use crate::caller::Caller;

/// The verified caller of the request `cx` answers, if the HTTP front verified one.
pub(super) fn caller_of(cx: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
    caller_in(&cx.extensions)
}

tokio::task_local! {
    /// The verified caller of the HTTP request rmcp is handling, while it handles it: for
    /// what rmcp asks of the server without a request context (`get_tool`).
    static REQUEST_CALLER: Option<Arc<Caller>>;
}

/// Runs `handling` (rmcp handling an HTTP request) with `caller` as its
/// [`request_caller`].
pub(super) async fn handled_for<F: Future>(caller: Option<Arc<Caller>>, handling: F) -> F::Output {
    REQUEST_CALLER.scope(caller, handling).await
}

/// The verified caller of the HTTP request being handled, if there is one (none on stdio,
/// or outside [`handled_for`]).
pub(super) fn request_caller() -> Option<Arc<Caller>> {
    REQUEST_CALLER.try_with(Clone::clone).ok().flatten()
}

/// The verified caller among a handler's `extensions`: in the HTTP request's parts.
fn caller_in(extensions: &Extensions) -> Option<Arc<Caller>> {
    extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<Arc<Caller>>()
        .cloned()
}

/// What tells callers apart where something is bound to one (a session, a `requestState`):
/// the SHA-256 of its issuer and subject, hex; empty for the operator (no verified caller).
/// Two issuers may use the same subject for different people, hence both.
pub(super) fn caller_key(caller: Option<&Caller>) -> String {
    let Some(caller) = caller else {
        return String::new();
    };
    let mut hash = Sha256::new();
    hash.update(caller.issuer.as_bytes());
    // A separator no issuer URL holds, so that ("ab", "c") and ("a", "bc") differ.
    hash.update([0]);
    hash.update(caller.subject.as_bytes());
    let mut key = String::with_capacity(64);
    for byte in hash.finalize() {
        // Writing to a String cannot fail.
        let _ = write!(key, "{byte:02x}");
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(issuer: &str, subject: &str) -> Caller {
        Caller {
            subject: subject.to_owned(),
            issuer: issuer.to_owned(),
            ..Caller::default()
        }
    }

    #[test]
    fn callers_are_told_apart_by_issuer_and_subject() {
        let alice = caller_key(Some(&caller("https://a.example", "alice")));
        assert_eq!(
            alice,
            caller_key(Some(&caller("https://a.example", "alice")))
        );
        assert_ne!(
            alice,
            caller_key(Some(&caller("https://b.example", "alice")))
        );
        assert_ne!(alice, caller_key(Some(&caller("https://a.example", "bob"))));
        assert_ne!(
            caller_key(Some(&caller("ab", "c"))),
            caller_key(Some(&caller("a", "bc")))
        );
        assert_eq!(caller_key(None), "");
    }

    #[test]
    fn the_caller_is_found_in_the_request_parts_rmcp_hands_on() {
        let mut request = http::Request::new(());
        let alice = Arc::new(caller("https://a.example", "alice"));
        request.extensions_mut().insert(alice.clone());
        let (parts, ()) = request.into_parts();
        let mut extensions = Extensions::default();
        extensions.insert(parts);
        assert_eq!(caller_in(&extensions), Some(alice));
        assert_eq!(caller_in(&Extensions::default()), None);
    }
}

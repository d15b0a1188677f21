//! Whoever can answer what a tool, a prompt or an MCP server asks for while a call runs
//! (contract 0.2's `input-required`, an MCP server's `elicitation/create`,
//! `sampling/createMessage` and `roots/list`): the person at `host run` (a form on the
//! terminal), the client of a `host mcp` session, or an embedding application.
//!
//! A call that asks and has no [`Asker`] fails with a message that says why; a library run
//! without one pauses instead, like an approval (see `agent::state`).

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::content::InputRequest;

/// Why an [`Asker`] gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// It cannot answer this kind of request (a terminal has no model to sample; sampling
    /// was not granted to this server; ...). The message says which and what to change.
    #[error("{0}")]
    Unsupported(String),
    /// It could not ask (no terminal, the client went away, the person interrupted).
    #[error("{0}")]
    Failed(String),
}

/// Answers requests for input, one at a time.
pub trait Ask: Send + Sync {
    /// Answers `request` on behalf of `asker` (the tool or server that asks, for the person to
    /// see): the result as MCP has it, a JSON object (an elicitation's `{"action": "accept",
    /// "content": {...}}`, a sampling's message, a roots list).
    fn ask<'a>(
        &'a self,
        asker: &'a str,
        request: &'a InputRequest,
    ) -> BoxFuture<'a, Result<Value, AskError>>;
}

/// An [`Ask`] to pass with a call.
#[derive(Clone)]
pub struct Asker(pub Arc<dyn Ask>);

impl Asker {
    /// Asks `request` on behalf of `asker`.
    pub async fn ask(&self, asker: &str, request: &InputRequest) -> Result<Value, AskError> {
        self.0.ask(asker, request).await
    }
}

impl fmt::Debug for Asker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Asker")
    }
}

impl PartialEq for Asker {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Asker {}

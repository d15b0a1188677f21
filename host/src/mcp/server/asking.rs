//! A tool that asks for input before it can finish (tool contract 0.2's `input-required`), as
//! `host mcp` serves it:
//!
//! - **2026-07-28** (a stateless request): the answer is an `InputRequiredResult` with the
//!   tool's requests, only those the client's capabilities allow (none left: -32021), and a
//!   `requestState` the client sends back with its answers. The state is the tool's own state
//!   sealed with HMAC-SHA256 under a key of this server, bound to the tool and its arguments
//!   and good for an hour: a state changed by the client, made for another call, or from
//!   another server is refused (-32602), never given to a tool.
//! - **Earlier revisions** (a session): the server asks the client itself
//!   (`elicitation/create`, `sampling/createMessage`, `roots/list`) while the call waits, and
//!   calls the tool again with the answers, for at most [`MAX_ROUNDS`] rounds.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, ErrorData, InputRequest as McpRequest, InputRequiredResult, ServerRequest,
};
use rmcp::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::asking::{Ask, AskError};
use crate::content::{InputRequest, InputRequired};

/// How many times a call may ask for input before it is given up on.
pub(super) const MAX_ROUNDS: usize = 8;

/// How long a `requestState` is good for.
const STATE_LIFETIME: Duration = Duration::from_secs(3600);

/// The key `requestState`s are sealed with: random, made when the server starts.
pub(super) struct StateKey(ring::hmac::Key);

impl StateKey {
    /// The key made from `secret` (at least 32 bytes), which replicas share so that any of
    /// them can open a state another made.
    pub(super) fn from_secret(secret: &[u8]) -> Result<Self, String> {
        if secret.len() < 32 {
            return Err(format!(
                "a request-state key needs at least 32 bytes, this one has {}; make one with \
                 `head -c 32 /dev/urandom > state.key`",
                secret.len()
            ));
        }
        Ok(Self(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret)))
    }

    /// A fresh random key.
    pub(super) fn random() -> Result<Self, String> {
        let key =
            ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
                .map_err(|_| "no randomness for the request-state key".to_owned())?;
        Ok(Self(key))
    }
}

/// What a `requestState` holds.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// The tool.
    t: String,
    /// The SHA-256 of its arguments, hex.
    a: String,
    /// The tool's own state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<String>,
    /// Until when it is good, seconds since the epoch.
    e: u64,
}

fn digest(arguments: &str) -> String {
    Sha256::digest(arguments.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

impl StateKey {
    /// `state` of tool `tool` called with `arguments`, sealed.
    pub(super) fn seal(&self, tool: &str, arguments: &str, state: Option<String>) -> String {
        let sealed = Sealed {
            t: tool.to_owned(),
            a: digest(arguments),
            s: state,
            e: now() + STATE_LIFETIME.as_secs(),
        };
        let payload = B64.encode(serde_json::to_vec(&sealed).unwrap_or_default());
        let tag = ring::hmac::sign(&self.0, payload.as_bytes());
        format!("{payload}.{}", B64.encode(tag.as_ref()))
    }

    /// The tool's state inside `token`, if this server sealed it for this tool and these
    /// arguments and it has not expired; otherwise an invalid-params error that says which.
    pub(super) fn open(
        &self,
        token: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Option<String>, ErrorData> {
        let refused = |why: &str| {
            ErrorData::invalid_params(
                format!("the requestState is refused: {why}; call the tool again without it"),
                None,
            )
        };
        let (payload, tag) = token
            .split_once('.')
            .ok_or_else(|| refused("it is not one this server made"))?;
        let tag = B64
            .decode(tag)
            .map_err(|_| refused("it is not one this server made"))?;
        ring::hmac::verify(&self.0, payload.as_bytes(), &tag)
            .map_err(|_| refused("it was changed, or made by another server"))?;
        let sealed: Sealed = B64
            .decode(payload)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| refused("it is not one this server made"))?;
        if sealed.t != tool || sealed.a != digest(arguments) {
            return Err(refused("it was made for another tool or other arguments"));
        }
        if sealed.e < now() {
            return Err(refused("it has expired"));
        }
        Ok(sealed.s)
    }
}

/// Whether a client's answers can be what it was asked: each is a request's result, a JSON
/// object; -32602 naming the first that is not.
pub(super) fn check_responses(responses: &BTreeMap<String, Value>) -> Result<(), ErrorData> {
    match responses.iter().find(|(_, answer)| !answer.is_object()) {
        Some((key, answer)) => Err(ErrorData::invalid_params(
            format!(
                "inputResponses.{} is not a result (a JSON object) but {}",
                key.chars().take(64).collect::<String>(),
                crate::arguments::kind(answer)
            ),
            None,
        )),
        None => Ok(()),
    }
}

/// The tool's requests that `capabilities` (the client's) allow, as MCP has them; -32021 when
/// none is left.
pub(super) fn allowed(
    asked: &InputRequired,
    capabilities: Option<&ClientCapabilities>,
) -> Result<BTreeMap<String, McpRequest>, ErrorData> {
    let declared = capabilities
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null);
    let mut allowed = BTreeMap::new();
    let mut missing = serde_json::Map::new();
    for (key, request) in &asked.requests {
        let capability = request.capability();
        if declared.get(capability).is_none() {
            missing.insert(capability.to_owned(), json!({}));
            continue;
        }
        allowed.insert(key.clone(), to_mcp(request)?);
    }
    if allowed.is_empty() {
        let required: ClientCapabilities =
            serde_json::from_value(Value::Object(missing)).unwrap_or_default();
        return Err(ErrorData::missing_required_client_capability(required));
    }
    Ok(allowed)
}

/// A tool's request as MCP has it.
fn to_mcp(request: &InputRequest) -> Result<McpRequest, ErrorData> {
    let message = match request.params.as_object() {
        Some(params) if !params.is_empty() => {
            json!({ "method": request.method, "params": request.params })
        }
        _ => json!({ "method": request.method }),
    };
    serde_json::from_value(message).map_err(|e| {
        ErrorData::internal_error(
            format!(
                "the tool's `{}` request is not one MCP can carry: {e}",
                request.method
            ),
            None,
        )
    })
}

/// The 2026-07-28 answer to a call that asks: the allowed requests and the sealed state.
pub(super) fn input_required_result(
    requests: BTreeMap<String, McpRequest>,
    state: String,
) -> InputRequiredResult {
    InputRequiredResult::new(Some(requests), Some(state))
}

/// Asks the client of a session each request the tool made, and returns the answers by key.
pub(super) async fn ask(
    peer: &Peer<RoleServer>,
    asked: &InputRequired,
) -> Result<BTreeMap<String, Value>, ErrorData> {
    let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
    let requests = allowed(asked, capabilities.as_ref())?;
    let mut answers = BTreeMap::new();
    for (key, request) in requests {
        let answer = send(peer, request).await.map_err(|e| {
            ErrorData::internal_error(
                format!("the client did not answer the tool's request: {e}"),
                None,
            )
        })?;
        answers.insert(key, answer);
    }
    Ok(answers)
}

/// Sends `request` to the client and returns its answer, as MCP has it.
async fn send(peer: &Peer<RoleServer>, request: McpRequest) -> Result<Value, String> {
    let request = match request {
        McpRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
        McpRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
        McpRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
        _ => return Err("it is not a request this server can send a client".to_owned()),
    };
    let answer = peer
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(answer).unwrap_or(Value::Null))
}

/// Whoever drives a call served in a session: its client, asked while the call waits (what
/// an MCP server the manifest uses asks during one of its tools, say).
pub(super) struct SessionAsker(pub(super) Peer<RoleServer>);

impl Ask for SessionAsker {
    fn ask<'a>(
        &'a self,
        _asker: &'a str,
        request: &'a InputRequest,
    ) -> BoxFuture<'a, Result<Value, AskError>> {
        Box::pin(async move {
            let capability = request.capability();
            let declared = self
                .0
                .peer_info()
                .and_then(|info| serde_json::to_value(&info.capabilities).ok())
                .is_some_and(|c| c.get(capability).is_some());
            if !declared {
                return Err(AskError::Unsupported(format!(
                    "the client of this `host mcp` session did not declare `{capability}`, \
                     which `{}` needs",
                    request.method
                )));
            }
            let request = to_mcp(request).map_err(|e| AskError::Unsupported(e.message.into()))?;
            send(&self.0, request)
                .await
                .map_err(|e| AskError::Failed(format!("the client did not answer: {e}")))
        })
    }
}

/// Whoever drives a call that cannot ask anyone while it runs: `why` says which call.
pub(super) struct CannotAsk(pub(super) &'static str);

impl Ask for CannotAsk {
    fn ask<'a>(
        &'a self,
        _asker: &'a str,
        request: &'a InputRequest,
    ) -> BoxFuture<'a, Result<Value, AskError>> {
        let why = format!(
            "the tool's server asked for input (`{}`) that {} cannot relay",
            request.method, self.0
        );
        Box::pin(std::future::ready(Err(AskError::Unsupported(why))))
    }
}

/// What a stateless (2026-07-28) request cannot relay: the client is not there to be asked
/// until the call has answered.
pub(super) const STATELESS: &str =
    "a stateless (2026-07-28) request, whose client can be asked only in its next request,";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_opens_only_unchanged_for_its_own_call() {
        let key = StateKey::random().unwrap_or_else(|e| panic!("{e}"));
        let sealed = key.seal("ask", r#"{"a":1}"#, Some("step 2".into()));
        assert_eq!(
            key.open(&sealed, "ask", r#"{"a":1}"#).ok(),
            Some(Some("step 2".to_owned()))
        );
        let refused = |token: &str, tool: &str, arguments: &str| {
            key.open(token, tool, arguments)
                .map(|_| String::new())
                .unwrap_or_else(|e| e.message.to_string())
        };
        assert!(refused(&format!("{sealed}-TAMPERED"), "ask", r#"{"a":1}"#).contains("changed"));
        assert!(refused(&sealed, "other", r#"{"a":1}"#).contains("another tool"));
        assert!(refused(&sealed, "ask", r#"{"a":2}"#).contains("other arguments"));
        assert!(refused("garbage", "ask", "{}").contains("not one this server made"));
        let other = StateKey::random().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            other.open(&sealed, "ask", r#"{"a":1}"#).is_err(),
            "another server's key"
        );
    }

    #[test]
    fn only_requests_the_client_can_answer_are_sent() {
        let asked = InputRequired {
            requests: [
                ("name".to_owned(), InputRequest {
                    method: "elicitation/create".into(),
                    params: json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}),
                }),
                ("roots".to_owned(), InputRequest {
                    method: "roots/list".into(),
                    params: json!({}),
                }),
            ]
            .into(),
            state: None,
        };
        let roots: ClientCapabilities =
            serde_json::from_value(json!({"roots": {}})).unwrap_or_default();
        let kept = allowed(&asked, Some(&roots)).unwrap_or_default();
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["roots"]);
        let error = allowed(&asked, None).unwrap_err();
        assert_eq!(error.code.0, -32021);
        let data = error.data.unwrap_or_default();
        assert!(
            data["requiredCapabilities"].get("elicitation").is_some(),
            "{data}"
        );
    }
}

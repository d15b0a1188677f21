//! A tool's call or a prompt's get that asks for input before it can finish (tool contract
//! 0.2's `input-required`), as `host mcp` serves it:
//!
//! - **2026-07-28** (a stateless request): the answer is an `InputRequiredResult` with the
//!   requests, only those the client's capabilities allow (none left: -32021), and a
//!   `requestState` the client sends back with its answers. The state is the component's own
//!   state sealed with HMAC-SHA256 under a key of this server, bound to what asked (a tool or
//!   a prompt, its name and its arguments) and good for an hour: a state changed by the
//!   client, made for another request (a tool's state sent to a prompt of the same name
//!   included), or from another server is refused (-32602), never given to a component.
//! - **Earlier revisions** (a session): the server asks the client itself
//!   (`elicitation/create`, `sampling/createMessage`, `roots/list`) while the request waits,
//!   and runs it again with the answers, for at most [`MAX_ROUNDS`] rounds.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, ErrorData, InputRequest as McpRequest, InputRequiredResult, InputResponses,
    ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::McpServer;
use crate::asking::{Ask, AskError};
use crate::content::{InputRequest, InputRequired};

/// How many times a request may ask for input before it is given up on.
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

/// What asks for input: a tool's call or a prompt's get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Kind {
    /// `tools/call`.
    Tool,
    /// `prompts/get`.
    Prompt,
}

/// The request a state is sealed for: its kind, the tool's or prompt's name, and its
/// arguments as JSON text.
#[derive(Clone, Copy)]
pub(super) struct Asking<'a> {
    pub(super) kind: Kind,
    pub(super) name: &'a str,
    pub(super) arguments: &'a str,
}

/// What a `requestState` holds.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// A tool's or a prompt's.
    k: Kind,
    /// The tool or prompt.
    t: String,
    /// The SHA-256 of its arguments, hex.
    a: String,
    /// The component's own state.
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
    /// `state` of the request `asking`, sealed.
    pub(super) fn seal(&self, asking: Asking<'_>, state: Option<String>) -> String {
        let sealed = Sealed {
            k: asking.kind,
            t: asking.name.to_owned(),
            a: digest(asking.arguments),
            s: state,
            e: now() + STATE_LIFETIME.as_secs(),
        };
        let payload = B64.encode(serde_json::to_vec(&sealed).unwrap_or_default());
        let tag = ring::hmac::sign(&self.0, payload.as_bytes());
        format!("{payload}.{}", B64.encode(tag.as_ref()))
    }

    /// The component's state inside `token`, if this server sealed it for this very request
    /// (the same kind, name and arguments) and it has not expired; otherwise an
    /// invalid-params error that says which.
    pub(super) fn open(
        &self,
        token: &str,
        asking: Asking<'_>,
    ) -> Result<Option<String>, ErrorData> {
        let refused = |why: &str| {
            ErrorData::invalid_params(
                format!("the requestState is refused: {why}; send the request again without it"),
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
        if sealed.k != asking.kind || sealed.t != asking.name {
            return Err(refused("it was made for another tool or prompt"));
        }
        if sealed.a != digest(asking.arguments) {
            return Err(refused("it was made for other arguments"));
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

/// The requests that `capabilities` (the client's) allow, as MCP has them; -32021 when
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

/// A request for input as MCP has it.
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
                "the `{}` request for input is not one MCP can carry: {e}",
                request.method
            ),
            None,
        )
    })
}

/// Asks the client of a session each request made, and returns the answers by key.
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
                format!("the client did not answer a request for input: {e}"),
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

/// What a later round of a request gets: the client's answers and the component's state
/// (nothing in a first round).
#[derive(Default)]
pub(super) struct Input {
    pub(super) responses: BTreeMap<String, Value>,
    pub(super) state: Option<String>,
}

/// How one round of a request ended: done, or asking for input.
pub(super) enum Round<T> {
    Done(T),
    Asked(InputRequired),
}

/// How a request that may ask for input ended: done, or (2026-07-28) with an
/// `InputRequiredResult` for the client to answer in its next request.
pub(super) enum Ended<T> {
    Done(T),
    InputRequired(InputRequiredResult),
}

impl McpServer {
    /// Runs `asking` round by round (`round` runs one): the first with what the client sent
    /// (its `inputResponses`, and the state inside its `requestState` if this server sealed
    /// it for this very request). When a round asks for input, a stateless (2026-07-28)
    /// request ends with an `InputRequiredResult` and the sealed state; in a session the
    /// server asks the client itself and runs another round, at most [`MAX_ROUNDS`].
    pub(super) async fn rounds<T, Fut>(
        &self,
        asking: Asking<'_>,
        responses: Option<InputResponses>,
        token: Option<&str>,
        cx: &RequestContext<RoleServer>,
        mut round: impl FnMut(Input) -> Fut,
    ) -> Result<Ended<T>, ErrorData>
    where
        Fut: Future<Output = Result<Round<T>, ErrorData>>,
    {
        let stateless = cx
            .meta
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        let responses = responses.unwrap_or_default();
        check_responses(&responses)?;
        let mut input = Input {
            responses,
            state: match token {
                Some(token) => self.state_key()?.open(token, asking)?,
                None => None,
            },
        };
        for _round in 0..MAX_ROUNDS {
            let asked = match round(input).await? {
                Round::Done(done) => return Ok(Ended::Done(done)),
                Round::Asked(asked) => asked,
            };
            if stateless {
                let requests = allowed(&asked, cx.meta.client_capabilities().as_ref())?;
                let state = self.state_key()?.seal(asking, asked.state);
                let result = InputRequiredResult::new(Some(requests), Some(state));
                return Ok(Ended::InputRequired(result));
            }
            // In a session the server asks the client itself, and runs the request again.
            input = Input {
                responses: ask(&cx.peer, &asked).await?,
                state: asked.state,
            };
        }
        Err(ErrorData::internal_error(
            format!(
                "`{}` asked for input {MAX_ROUNDS} times without finishing; it was given up on",
                asking.name
            ),
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_opens_only_unchanged_for_its_own_call() {
        let key = StateKey::random().unwrap_or_else(|e| panic!("{e}"));
        let tool = |name, arguments| Asking {
            kind: Kind::Tool,
            name,
            arguments,
        };
        let sealed = key.seal(tool("ask", r#"{"a":1}"#), Some("step 2".into()));
        assert_eq!(
            key.open(&sealed, tool("ask", r#"{"a":1}"#)).ok(),
            Some(Some("step 2".to_owned()))
        );
        let refused = |token: &str, asking| refusal(&key, token, asking);
        let tampered = format!("{sealed}-TAMPERED");
        assert!(refused(&tampered, tool("ask", r#"{"a":1}"#)).contains("changed"));
        assert!(refused(&sealed, tool("other", r#"{"a":1}"#)).contains("another tool"));
        assert!(refused(&sealed, tool("ask", r#"{"a":2}"#)).contains("other arguments"));
        assert!(refused("garbage", tool("ask", "{}")).contains("not one this server made"));
        let other = StateKey::random().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            other.open(&sealed, tool("ask", r#"{"a":1}"#)).is_err(),
            "another server's key"
        );
    }

    /// Why `key` refuses `token` for `asking` (empty if it opens).
    fn refusal(key: &StateKey, token: &str, asking: Asking<'_>) -> String {
        key.open(token, asking)
            .map(|_| String::new())
            .unwrap_or_else(|e| e.message.to_string())
    }

    #[test]
    fn a_prompt_state_opens_only_for_its_prompt_and_arguments() {
        let key = StateKey::random().unwrap_or_else(|e| panic!("{e}"));
        let asking = |kind, name, arguments| Asking {
            kind,
            name,
            arguments,
        };
        let arguments = r#"{"topic":"rust"}"#;
        let prompt = asking(Kind::Prompt, "summary", arguments);
        let sealed = key.seal(prompt, Some("round 2".into()));
        assert_eq!(
            key.open(&sealed, prompt).ok(),
            Some(Some("round 2".to_owned()))
        );
        let tampered = format!("x{sealed}");
        assert!(refusal(&key, &tampered, prompt).contains("changed"));
        let other_prompt = asking(Kind::Prompt, "other", arguments);
        assert!(refusal(&key, &sealed, other_prompt).contains("another tool or prompt"));
        let other_arguments = asking(Kind::Prompt, "summary", r#"{"topic":"go"}"#);
        assert!(refusal(&key, &sealed, other_arguments).contains("other arguments"));
        // A tool's state is never given to a prompt of the same name, nor the other way round.
        let tool = asking(Kind::Tool, "summary", arguments);
        let tool_state = key.seal(tool, Some("tool".into()));
        assert!(refusal(&key, &tool_state, prompt).contains("another tool or prompt"));
        assert!(refusal(&key, &sealed, tool).contains("another tool or prompt"));
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

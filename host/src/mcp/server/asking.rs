//! A tool's call or a prompt's get that asks for input before it can finish (tool contract
//! 0.2's `input-required`), as `host mcp` serves it:
//!
//! - **2026-07-28** (a stateless request): the answer is an `InputRequiredResult` with the
//!   requests, only those the client's capabilities allow (none left: -32021), and a
//!   `requestState` the client sends back with its answers. The state is the component's own
//!   state sealed with HMAC-SHA256 under a key of this server, bound to what asked (a tool or
//!   a prompt, its name and its arguments) and to who asked (the verified caller's issuer and
//!   subject), and good for an hour: a state changed by the client, made for another request
//!   (a tool's state sent to a prompt of the same name included), for another caller, or
//!   from another server is refused (-32602), never given to a component.
//!
//! The sealing is rmcp's `RequestStateCodec` (feature `request-state`), adopted over the
//! hand-written HMAC this module had (issue 37): it gives the same guarantees (an HMAC-SHA256
//! tag, binding through associated data, an expiry, one key shared by replicas) and a keyring
//! for rotating keys besides. What it does not do is say which binding failed; as its rustdoc
//! asks, the client gets one refusal for all of them (an expired state apart), and the log
//! says which.
//! - **Earlier revisions** (a session): the server asks the client itself
//!   (`elicitation/create`, `sampling/createMessage`, `roots/list`) while the request waits,
//!   and runs it again with the answers, for at most [`MAX_ROUNDS`] rounds.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, ErrorData, GetExtensions as _, InputRequest as McpRequest,
    InputRequiredResult, InputResponses, RequestId, RequestStateCodec, RequestStateError,
    SealOptions, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, RequestContext};
use rmcp::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::McpServer;
use crate::asking::{Ask, AskError};
use crate::content::{InputRequest, InputRequired};
use crate::telemetry::metrics::{Held, metrics};

/// How many times a request may ask for input before it is given up on.
pub(super) const MAX_ROUNDS: usize = 8;

/// How long a `requestState` is good for.
const STATE_LIFETIME: Duration = Duration::from_secs(3600);

/// The key `requestState`s are sealed with: random, made when the server starts, or a
/// secret replicas share. rmcp's [`RequestStateCodec`] does the sealing: HMAC-SHA256 over the
/// state and an expiry, with associated data that binds it to the request (kind, name, a
/// digest of the arguments) and to the caller, none of which is stored in the token.
pub(super) struct StateKey(RequestStateCodec);

impl StateKey {
    /// The key made from `secret` (at least 32 bytes), which replicas share so that any of
    /// them can open a state another made.
    pub(super) fn from_secret(secret: &[u8]) -> Result<Self, String> {
        RequestStateCodec::try_new(secret.to_vec())
            .map(Self)
            .map_err(|_| {
                format!(
                    "a request-state key needs at least {} bytes, this one has {}; make one with \
                     `head -c 32 /dev/urandom > state.key`",
                    RequestStateCodec::MIN_KEY_LENGTH,
                    secret.len()
                )
            })
    }

    /// A fresh random key.
    pub(super) fn random() -> Result<Self, String> {
        use ring::rand::SecureRandom as _;
        let mut secret = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut secret)
            .map_err(|_| "no randomness for the request-state key".to_owned())?;
        Self::from_secret(&secret)
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

/// The request a state is sealed for: its kind, the tool's or prompt's name, its arguments
/// as JSON text, and who asked (its `identity::caller_key`).
#[derive(Clone, Copy)]
pub(super) struct Asking<'a> {
    pub(super) kind: Kind,
    pub(super) name: &'a str,
    pub(super) arguments: &'a str,
    pub(super) caller: &'a str,
}

impl Asking<'_> {
    /// What a state is bound to: every part, each behind its length so that no two
    /// requests give the same bytes.
    fn associated_data(&self) -> Vec<u8> {
        let kind = match self.kind {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
        };
        let arguments = digest(self.arguments);
        let mut data = b"toolhost/request-state/v2".to_vec();
        for part in [kind, self.name, &arguments, self.caller] {
            data.extend_from_slice(&(part.len() as u64).to_be_bytes());
            data.extend_from_slice(part.as_bytes());
        }
        data
    }
}

fn digest(arguments: &str) -> String {
    Sha256::digest(arguments.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl StateKey {
    /// `state` of the request `asking`, sealed.
    pub(super) fn seal(&self, asking: Asking<'_>, state: Option<String>) -> String {
        let data = asking.associated_data();
        let options = SealOptions::new()
            .associated_data(&data)
            .ttl(STATE_LIFETIME);
        // An `Option<String>` always serializes.
        let payload = serde_json::to_vec(&state).unwrap_or_default();
        self.0.seal_with(&payload, &options)
    }

    /// The component's state inside `token`, if this server sealed it for this very request
    /// (the same kind, name, arguments and caller) and it has not expired; otherwise an
    /// invalid-params error. As rmcp asks, a client is not told which binding failed (only
    /// that the state expired, which an honest client needs to know); the log says.
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
        let opened = self.0.open_with(token, &asking.associated_data());
        let payload = match opened {
            Ok(payload) => payload,
            Err(RequestStateError::Expired) => return Err(refused("it has expired")),
            Err(error) => {
                tracing::debug!(name = asking.name, "a requestState is refused: {error}");
                return Err(refused(
                    "it was changed, or made by another server, for another request or for \
                     another caller",
                ));
            }
        };
        serde_json::from_slice(&payload)
            .map_err(|_| refused("it was changed, or made by another server"))
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
pub(super) fn to_mcp(request: &InputRequest) -> Result<McpRequest, ErrorData> {
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
        let answer = send(peer, request, None).await.map_err(|e| {
            ErrorData::internal_error(
                format!("the client did not answer a request for input: {e}"),
                None,
            )
        })?;
        answers.insert(key, answer);
    }
    Ok(answers)
}

/// Sends `request` to the client and returns its answer, as MCP has it; `origin` is the
/// client's request it is sent for, when it is sent from another task than the handler's.
async fn send(
    peer: &Peer<RoleServer>,
    request: McpRequest,
    origin: Option<&RequestId>,
) -> Result<Value, String> {
    let mut request = match request {
        McpRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
        McpRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
        McpRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
        _ => return Err("it is not a request this server can send a client".to_owned()),
    };
    // Over Streamable HTTP the request goes out on the stream of the client's request that
    // it is sent for. rmcp finds that request in a task-local of the handler's task; the
    // calls of a program run on tasks of their own, so the asker names it.
    if let Some(origin) = origin {
        (request.extensions_mut()).insert(OriginatingRequestId(origin.clone()));
    }
    let _pending = Held::new(&metrics().asks_pending);
    let answer = peer
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(answer).unwrap_or(Value::Null))
}

/// Whoever drives a call served in a session: its client, asked while the call waits (what
/// an MCP server the manifest uses asks during one of its tools, say, or the approval of a
/// program's call), on the stream of the call's request, which it names.
pub(super) struct SessionAsker(pub(super) Peer<RoleServer>, pub(super) RequestId);

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
            send(&self.0, request, Some(&self.1))
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

    const CHANGED: &str = "it was changed, or made by another server, for another request";

    #[test]
    fn a_state_opens_only_unchanged_for_its_own_call_and_caller() {
        let key = StateKey::random().unwrap_or_else(|e| panic!("{e}"));
        let tool = |name, arguments, caller| Asking {
            kind: Kind::Tool,
            name,
            arguments,
            caller,
        };
        let alice = tool("ask", r#"{"a":1}"#, "alice's key");
        let sealed = key.seal(alice, Some("step 2".into()));
        assert_eq!(
            key.open(&sealed, alice).ok(),
            Some(Some("step 2".to_owned()))
        );
        let refused = |token: &str, asking| refusal(&key, token, asking);
        let tampered = format!("{sealed}-TAMPERED");
        assert!(refused(&tampered, alice).contains(CHANGED));
        assert!(refused(&sealed, tool("other", r#"{"a":1}"#, "alice's key")).contains(CHANGED));
        assert!(refused(&sealed, tool("ask", r#"{"a":2}"#, "alice's key")).contains(CHANGED));
        // Another caller, or the operator, cannot use alice's state.
        assert!(refused(&sealed, tool("ask", r#"{"a":1}"#, "bob's key")).contains(CHANGED));
        assert!(refused(&sealed, tool("ask", r#"{"a":1}"#, "")).contains(CHANGED));
        assert!(refused("garbage", tool("ask", "{}", "")).contains(CHANGED));
        let other = StateKey::random().unwrap_or_else(|e| panic!("{e}"));
        assert!(other.open(&sealed, alice).is_err(), "another server's key");
        // Replicas that share a secret open each other's states.
        let shared = [7u8; 32];
        let (one, two) = (
            StateKey::from_secret(&shared),
            StateKey::from_secret(&shared),
        );
        let (one, two) = (
            one.unwrap_or_else(|e| panic!("{e}")),
            two.unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(two.open(&one.seal(alice, None), alice).is_ok());
        assert!(StateKey::from_secret(&[7u8; 31]).is_err());
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
            caller: "",
        };
        let arguments = r#"{"topic":"rust"}"#;
        let prompt = asking(Kind::Prompt, "summary", arguments);
        let sealed = key.seal(prompt, Some("round 2".into()));
        assert_eq!(
            key.open(&sealed, prompt).ok(),
            Some(Some("round 2".to_owned()))
        );
        let tampered = format!("x{sealed}");
        assert!(refusal(&key, &tampered, prompt).contains(CHANGED));
        let other_prompt = asking(Kind::Prompt, "other", arguments);
        assert!(refusal(&key, &sealed, other_prompt).contains(CHANGED));
        let other_arguments = asking(Kind::Prompt, "summary", r#"{"topic":"go"}"#);
        assert!(refusal(&key, &sealed, other_arguments).contains(CHANGED));
        // A tool's state is never given to a prompt of the same name, nor the other way round.
        let tool = asking(Kind::Tool, "summary", arguments);
        let tool_state = key.seal(tool, Some("tool".into()));
        assert!(refusal(&key, &tool_state, prompt).contains(CHANGED));
        assert!(refusal(&key, &sealed, tool).contains(CHANGED));
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
            task: None,
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

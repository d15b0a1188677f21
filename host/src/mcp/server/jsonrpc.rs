//! What a client's message is, before rmcp sees it: a request rmcp can serve, or one that
//! gets a JSON-RPC error of its own, the same on stdio and over HTTP.
//!
//! rmcp reads a request whose params do not fit its method as a custom request, and answers
//! it -32601 "Method not found"; and on stdio it cannot read an id that is neither an integer
//! nor a string at all. Here: a message that is not a JSON-RPC request, response or
//! notification is an invalid request (-32600), answered with its id when it has a valid one
//! and `"id": null` otherwise; a request of a method the server serves whose params do not
//! fit is invalid params (-32602).

use bytes::Bytes;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
};
use serde_json::{Value, json};

/// The methods served here whose params rmcp checks: a request of one of them that rmcp
/// reads as a custom request had params that do not fit.
const SERVED: [&str; 5] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "logging/setLevel",
];

/// The methods revision 2026-07-28 no longer has: it begins no session (`initialize`), and a
/// request carries its own log level in `_meta` (`logging/setLevel`).
const NOT_STATELESS: [&str; 2] = ["initialize", "logging/setLevel"];

/// The first revision without `initialize`.
const FIRST_STATELESS: &str = "2026-07-28";

/// The `_meta` key of the revision a stateless request is made in.
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// A message that gets an error instead of being served.
#[derive(Debug)]
pub(super) struct Refused {
    /// The request's id when it has a valid one (`null` is written otherwise).
    pub(super) id: Option<Value>,
    pub(super) error: ErrorData,
}

impl Refused {
    fn invalid_request(id: Option<Value>, why: impl std::fmt::Display) -> Self {
        Self {
            id,
            error: ErrorData::invalid_request(format!("Invalid request: {why}"), None),
        }
    }

    /// An invalid request, for what the transport refuses (too large, too slow).
    pub(super) fn invalid_request_text(message: String) -> Self {
        Self {
            id: None,
            error: ErrorData::invalid_request(message, None),
        }
    }

    /// An internal error: the server cannot take the request now.
    pub(super) fn internal(message: String) -> Self {
        Self {
            id: None,
            error: ErrorData::internal_error(message, None),
        }
    }

    /// A parse error: the text is not JSON.
    pub(super) fn parse_error(error: &serde_json::Error) -> Self {
        Self {
            id: None,
            error: ErrorData::new(
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {error}"),
                None,
            ),
        }
    }

    /// A request whose id is that of a request still in flight: it is not served (its
    /// answer could not be told from the other's), and the client is told so.
    pub(super) fn id_in_flight(id: &RequestId) -> Self {
        Self::invalid_request(
            serde_json::to_value(id).ok(),
            format!(
                "request id {id} is already in flight: give each request an id no request in \
                 flight has"
            ),
        )
    }

    /// Whether this is "method not found" (HTTP 404 on the stateless revision).
    pub(super) fn is_method_not_found(&self) -> bool {
        self.error.code == ErrorCode::METHOD_NOT_FOUND
    }

    /// Whether this is invalid params (a request that was read, with a wrong shape).
    pub(super) fn is_invalid_params(&self) -> bool {
        self.error.code == ErrorCode::INVALID_PARAMS
    }

    /// The error as a JSON-RPC message, with `"id": null` when the id could not be read.
    pub(super) fn message(&self) -> Value {
        json!({ "jsonrpc": "2.0", "id": self.id, "error": self.error })
    }
}

/// The body of a POST, as rmcp reads it: `bytes` when rmcp reads them as `message` does (read
/// from a [`Value`] by [`read`]), else `message` written again. rmcp reads a body from its
/// bytes, and refuses with a bare 415 some that a `Value` takes: a key given twice (the last
/// one counts here, as on stdio).
pub(super) fn as_rmcp_reads(bytes: Bytes, message: &ClientJsonRpcMessage) -> Bytes {
    if serde_json::from_slice::<ClientJsonRpcMessage>(&bytes).is_ok() {
        return bytes;
    }
    match serde_json::to_vec(message) {
        Ok(written) => Bytes::from(written),
        Err(_) => bytes,
    }
}

/// `message` (already read as rmcp reads it), or why it is refused: a request of a method
/// served here that rmcp could only read as a custom request.
pub(super) fn check_read(message: ClientJsonRpcMessage) -> Result<ClientJsonRpcMessage, Refused> {
    // Rare methods: writing them out again to look at their `_meta` costs nothing that counts.
    if let JsonRpcMessage::Request(request) = &message
        && matches!(
            request.request,
            ClientRequest::InitializeRequest(_) | ClientRequest::SetLevelRequest(_)
        )
        && let Some(refused) = serde_json::to_value(&message)
            .ok()
            .and_then(|value| not_in_its_revision(&value))
    {
        return Err(refused);
    }
    if let JsonRpcMessage::Request(request) = &message
        && let ClientRequest::CustomRequest(custom) = &request.request
        && SERVED.contains(&custom.method.as_str())
    {
        return Err(invalid_params(
            serde_json::to_value(&request.id).ok(),
            &custom.method,
        ));
    }
    Ok(message)
}

/// A request of a method its own revision does not have (`initialize` or `logging/setLevel`
/// made in 2026-07-28 or later, by its `_meta`): "method not found", whatever its params.
pub(super) fn not_in_its_revision(value: &Value) -> Option<Refused> {
    let method = value.get("method")?.as_str()?;
    let id = value.get("id")?;
    let revision = value
        .get("params")?
        .get("_meta")?
        .get(PROTOCOL_VERSION_KEY)?
        .as_str()?;
    // Revisions are dates: they sort as text.
    if !NOT_STATELESS.contains(&method) || revision < FIRST_STATELESS {
        return None;
    }
    let why = match method {
        "initialize" => {
            "a request of revision {revision} stands alone: there is no session to \
                         begin (ask `server/discover` for what the server offers)"
        }
        _ => {
            "a request of revision {revision} carries its log level in `_meta` \
              (`io.modelcontextprotocol/logLevel`)"
        }
    };
    Some(Refused {
        id: (id.is_string() || id.as_i64().is_some()).then(|| id.clone()),
        error: ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "Method not found: `{method}`; {}",
                why.replace("{revision}", revision)
            ),
            None,
        ),
    })
}

/// Reads `value` as a client's JSON-RPC message, or says why it is refused. `Ok(None)` for a
/// notification rmcp cannot read: it gets no answer, even a wrong one.
pub(super) fn read(value: Value) -> Result<Option<ClientJsonRpcMessage>, Refused> {
    if let Some(refused) = not_in_its_revision(&value) {
        return Err(refused);
    }
    let why = match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(message) => return check_read(message).map(Some),
        Err(error) => error,
    };
    let Value::Object(object) = &value else {
        return Err(Refused::invalid_request(
            None,
            "a message is one JSON object (batches are not served)",
        ));
    };
    let id = match object.get("id") {
        // A notification.
        None if object.get("method").is_some_and(Value::is_string) => return Ok(None),
        None => None,
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(id @ Value::Number(n)) if n.is_i64() => Some(id.clone()),
        // rmcp holds a numeric id in an i64: a larger integer cannot be answered, only told
        // so, with the id as sent (a u64 is kept exactly; past it JSON numbers are f64).
        Some(id @ Value::Number(n)) if n.is_u64() || n.as_f64().is_some_and(beyond_i64) => {
            return Err(Refused::invalid_request(
                n.is_u64().then(|| id.clone()),
                format!(
                    "the id {id} is outside the signed 64-bit range this server reads integer \
                     ids in ({} to {}); number requests within it, or with strings",
                    i64::MIN,
                    i64::MAX
                ),
            ));
        }
        Some(other) => {
            return Err(Refused::invalid_request(
                None,
                format!("the id must be a string or an integer, not {other}"),
            ));
        }
    };
    let method = object.get("method").and_then(Value::as_str);
    let structured = object
        .get("params")
        .is_none_or(|params| params.is_object() || params.is_array());
    match method {
        Some(method)
            if id.is_some()
                && object.get("jsonrpc") == Some(&json!("2.0"))
                && structured
                && SERVED.contains(&method) =>
        {
            Err(invalid_params(id, method))
        }
        _ => Err(Refused::invalid_request(id, why)),
    }
}

/// Whether `f` is an integer outside the range of an i64 (2^63 is the first past it).
fn beyond_i64(f: f64) -> bool {
    f.fract() == 0.0 && f.abs() >= 9_223_372_036_854_775_808.0
}

fn invalid_params(id: Option<Value>, method: &str) -> Refused {
    Refused {
        id,
        error: ErrorData::invalid_params(
            format!("Invalid params: the params of `{method}` do not have the shape MCP gives it"),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(value: Value) -> Option<i32> {
        match read(value) {
            Ok(_) => None,
            Err(refused) => Some(refused.error.code.0),
        }
    }

    #[test]
    fn params_that_do_not_fit_a_served_method_are_invalid_params() {
        for params in [
            json!({ "name": "add", "arguments": "x" }),
            json!({ "name": "add", "arguments": [1] }),
            json!({ "name": 5 }),
        ] {
            let message =
                json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
            assert_eq!(code(message), Some(-32602), "{params}");
        }
        let bare = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call" });
        assert_eq!(code(bare), Some(-32602));
        let level = json!({ "jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
                            "params": { "level": "loud" } });
        assert_eq!(code(level), Some(-32602));
    }

    #[test]
    fn methods_the_stateless_revision_dropped_are_not_found_there_only() {
        let meta = |version: &str| json!({ "io.modelcontextprotocol/protocolVersion": version });
        for method in ["initialize", "logging/setLevel"] {
            // Only `_meta`, as the conformance suite sends it, and a well-formed one.
            for params in [
                json!({ "_meta": meta("2026-07-28") }),
                json!({ "level": "info", "protocolVersion": "2026-07-28",
                        "capabilities": {}, "clientInfo": {"name": "c", "version": "1"},
                        "_meta": meta("2026-07-28") }),
            ] {
                let message = json!({ "jsonrpc": "2.0", "id": 500, "method": method,
                                      "params": params });
                assert_eq!(code(message.clone()), Some(-32601), "{method} {params}");
                let refused = not_in_its_revision(&message).map(|r| r.message());
                assert_eq!(refused.as_ref().map(|m| &m["id"]), Some(&json!(500)));
            }
            let older = json!({ "jsonrpc": "2.0", "id": 1, "method": method,
                                "params": { "_meta": meta("2025-11-25") } });
            assert_eq!(
                code(older),
                Some(-32602),
                "{method}: the older revision has it"
            );
        }
    }

    #[test]
    fn what_is_not_json_rpc_is_an_invalid_request_and_the_rest_passes() {
        for message in [
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": "x" }),
            json!({ "jsonrpc": "1.0", "id": 1, "method": "ping" }),
            json!({ "jsonrpc": "2.0", "id": null, "method": "ping" }),
            json!({ "jsonrpc": "2.0", "id": 1.5, "method": "ping" }),
            json!({ "jsonrpc": "2.0", "id": u64::MAX, "method": "ping" }),
            json!([{ "jsonrpc": "2.0", "id": 1, "method": "ping" }]),
        ] {
            assert_eq!(code(message.clone()), Some(-32600), "{message}");
        }
        let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
        assert!(matches!(read(ping), Ok(Some(_))));
        let unknown = json!({ "jsonrpc": "2.0", "id": 1, "method": "x/y", "params": {} });
        assert!(matches!(read(unknown), Ok(Some(_))));
    }

    #[test]
    fn an_id_past_the_signed_64_bit_range_is_echoed_in_the_error() {
        let refused =
            |id: Value| match read(json!({ "jsonrpc": "2.0", "id": id, "method": "ping" })) {
                Err(refused) => refused.message(),
                Ok(_) => panic!("{id} was taken"),
            };
        // A u64 is answered with its id exactly.
        let answer = refused(json!(u64::MAX));
        assert_eq!(answer["id"], json!(u64::MAX), "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("the id 18446744073709551615 is outside"),
            "{message}"
        );
        // Past it, JSON numbers are read as f64: the message names it as one.
        let huge: Value = serde_json::from_str("100000000000000000000").unwrap();
        let answer = refused(huge);
        assert_eq!(answer["id"], Value::Null, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("the id 1e+20 is outside"), "{message}");
    }

    #[test]
    fn a_body_rmcp_cannot_read_goes_to_it_written_again() {
        let twice = br#"{"jsonrpc":"2.0","id":7,"method":"ping","id":8}"#;
        let value: Value = serde_json::from_slice(twice).unwrap();
        let message = read(value).unwrap().unwrap();
        let bytes = as_rmcp_reads(Bytes::from_static(twice), &message);
        let again: ClientJsonRpcMessage = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(serde_json::to_value(again).unwrap()["id"], 8);
        let once = Bytes::from_static(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
        let message = serde_json::from_slice(&once).unwrap();
        assert_eq!(as_rmcp_reads(once.clone(), &message), once, "kept as sent");
    }
}

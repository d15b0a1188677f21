//! A scripted model server on 127.0.0.1: it answers each request with the next turn of a
//! script, in the OpenAI Chat Completions or Anthropic Messages wire format, as JSON or as a
//! server-sent event stream (following the request's `stream` flag), framed exactly as the
//! real services frame them. Tests drive every rule of the tool-calling loop with it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::server::{Recorded, Reply, ReplyBody, TestServer};

/// The wire format a scripted model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `POST /v1/chat/completions`.
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
}

/// A tool call in a scripted turn.
#[derive(Debug, Clone)]
pub struct Call {
    /// The id; `None` sends none (OpenAI streams then carry no id), `Some("")` an empty one.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments exactly as the model "writes" them (may be invalid JSON).
    pub arguments: String,
}

/// A call with an id.
pub fn call(id: &str, name: &str, arguments: &str) -> Call {
    Call {
        id: Some(id.to_owned()),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Turn {
    /// A text answer.
    Text(String),
    /// Tool calls (with optional text before them).
    Calls {
        /// Text ahead of the calls.
        text: String,
        /// The calls.
        calls: Vec<Call>,
    },
    /// The token limit hit in the middle of a tool call: finish reason `length`.
    CutOffCall(Call),
    /// Text and calls, the token limit hit in the middle of the last one: finish reason
    /// `length`.
    CutOffAfter {
        /// Text ahead of the calls.
        text: String,
        /// The calls, the last one cut off.
        calls: Vec<Call>,
    },
    /// An error status with a body in the format's error shape, and optional headers.
    Error {
        /// The status.
        status: u16,
        /// The error message.
        message: String,
        /// Extra headers (`retry-after`, ...).
        headers: Vec<(String, String)>,
    },
    /// A streamed answer whose connection is cut after `events` events.
    CutConnection {
        /// The answer that is being sent.
        turn: Box<Turn>,
        /// How many events go out before the cut.
        events: usize,
    },
    /// A streamed answer that pauses `pause` between its events.
    Stall {
        /// The answer.
        turn: Box<Turn>,
        /// The pause.
        pause: Duration,
    },
    /// A stream whose event data is not JSON.
    MalformedStream,
    /// A body sent verbatim, with its content type.
    Raw {
        /// The content type.
        content_type: String,
        /// The bytes.
        body: Vec<u8>,
    },
}

/// Text.
pub fn text(text: &str) -> Turn {
    Turn::Text(text.to_owned())
}

/// Tool calls without text.
pub fn calls(calls: Vec<Call>) -> Turn {
    Turn::Calls {
        text: String::new(),
        calls,
    }
}

/// A scripted model server. Requests past the end of the script get a 500.
pub struct ScriptedModel {
    server: TestServer,
    format: Format,
}

impl ScriptedModel {
    /// Starts a server that answers with `turns`, one per request, in `format`.
    pub async fn start(format: Format, turns: Vec<Turn>) -> Self {
        let script = Arc::new(Mutex::new(turns.into_iter()));
        let server = TestServer::start(move |request: &Recorded| {
            let expected = match format {
                Format::OpenAi => "/v1/chat/completions",
                Format::Anthropic => "/v1/messages",
            };
            if request.method != "POST" || request.path != expected {
                return Reply::text(404, "not found");
            }
            let body = request.json();
            let stream = body["stream"].as_bool().unwrap_or(false);
            let usage = body["stream_options"]["include_usage"]
                .as_bool()
                .unwrap_or(false);
            let turn = script.lock().expect("not poisoned").next();
            match turn {
                Some(turn) => render(format, &turn, stream, usage),
                None => error_reply(format, 500, "the script has no more turns", &[]),
            }
        })
        .await;
        Self { server, format }
    }

    /// The wire format it speaks.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The base URL a provider of this format takes (OpenAI: with `/v1`).
    pub fn base_url(&self) -> String {
        match self.format {
            Format::OpenAi => format!("{}/v1", self.server.url()),
            Format::Anthropic => self.server.url(),
        }
    }

    /// `127.0.0.1:PORT`: where it listens (for a TLS front, say).
    pub fn authority(&self) -> String {
        self.server.authority()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.server.requests()
    }

    /// The JSON bodies of every request.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().iter().map(Recorded::json).collect()
    }
}

const CREATED: u64 = 1_763_779_200;

/// The reply to a request for `turn`: streamed if `stream`, and then (OpenAI) with a last
/// chunk of token counts if `usage` (the request's `stream_options.include_usage`).
fn render(format: Format, turn: &Turn, stream: bool, usage: bool) -> Reply {
    match turn {
        Turn::Error {
            status,
            message,
            headers,
        } => error_reply(format, *status, message, headers),
        Turn::Raw { content_type, body } => Reply {
            status: 200,
            headers: vec![("content-type".into(), content_type.clone())],
            body: ReplyBody::Full(body.clone()),
        },
        Turn::MalformedStream => sse_reply(
            vec![b"data: {\"choices\": [this is not json\n\n".to_vec()],
            false,
        ),
        Turn::Stall { turn, pause } => {
            let mut reply = sse_reply(events_of(format, turn, usage), false);
            if let ReplyBody::Chunks { pause: p, .. } = &mut reply.body {
                *p = *pause;
            }
            reply
        }
        Turn::CutConnection { turn, events } => {
            let mut chunks = events_of(format, turn, usage);
            chunks.truncate(*events);
            sse_reply(chunks, true)
        }
        _ if stream => sse_reply(events_of(format, turn, usage), false),
        _ => Reply::json(200, &whole(format, turn)),
    }
}

fn sse_reply(chunks: Vec<Vec<u8>>, cut: bool) -> Reply {
    Reply {
        status: 200,
        headers: vec![
            ("content-type".into(), "text/event-stream".into()),
            ("cache-control".into(), "no-cache".into()),
        ],
        body: ReplyBody::Chunks {
            chunks,
            pause: Duration::from_millis(2),
            cut,
        },
    }
}

fn error_reply(format: Format, status: u16, message: &str, headers: &[(String, String)]) -> Reply {
    let body = match format {
        Format::OpenAi => json!({
            "error": { "message": message, "type": "server_error", "param": null, "code": null }
        }),
        Format::Anthropic => json!({
            "type": "error", "error": { "type": "api_error", "message": message }
        }),
    };
    let mut reply = Reply::json(status, &body);
    reply.headers.extend(headers.iter().cloned());
    reply
}

/// The parts of a turn: text, calls, finish reason.
fn parts(turn: &Turn) -> (&str, Vec<Call>, &'static str) {
    match turn {
        Turn::Text(text) => (text, Vec::new(), "stop"),
        Turn::Calls { text, calls } => (text, calls.clone(), "tool_calls"),
        Turn::CutOffCall(call) => ("", vec![call.clone()], "length"),
        Turn::CutOffAfter { text, calls } => (text, calls.clone(), "length"),
        _ => ("", Vec::new(), "stop"),
    }
}

fn anthropic_stop(finish: &str) -> &'static str {
    match finish {
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        _ => "end_turn",
    }
}

fn whole(format: Format, turn: &Turn) -> Value {
    let (text, calls, finish) = parts(turn);
    match format {
        Format::OpenAi => {
            let mut message = json!({ "role": "assistant", "content": text, "refusal": null });
            if !calls.is_empty() {
                if text.is_empty() {
                    message["content"] = Value::Null;
                }
                message["tool_calls"] = calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id.clone().unwrap_or_default(), "type": "function",
                            "function": { "name": c.name, "arguments": c.arguments },
                        })
                    })
                    .collect();
            }
            json!({
                "id": "chatcmpl-scripted", "object": "chat.completion", "created": CREATED,
                "model": "scripted", "system_fingerprint": "fp_scripted",
                "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": finish }],
                "usage": { "prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30 },
            })
        }
        Format::Anthropic => {
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(json!({ "type": "text", "text": text }));
            }
            for c in &calls {
                let input: Value = serde_json::from_str(&c.arguments).unwrap_or(json!({}));
                content.push(json!({
                    "type": "tool_use", "id": c.id.clone().unwrap_or_default(),
                    "name": c.name, "input": input,
                }));
            }
            json!({
                "id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
                "content": content, "stop_reason": anthropic_stop(finish), "stop_sequence": null,
                "usage": { "input_tokens": 20, "output_tokens": 10 },
            })
        }
    }
}

/// Splits text into pieces of about `size` characters, on character boundaries.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// The events of a streamed turn, each its own chunk on the wire.
fn events_of(format: Format, turn: &Turn, usage: bool) -> Vec<Vec<u8>> {
    let (text, calls, finish) = parts(turn);
    match format {
        Format::OpenAi => openai_events(text, &calls, finish, usage),
        Format::Anthropic => anthropic_events(text, &calls, finish),
    }
}

/// OpenAI's chunks. Asked for usage, every chunk has `"usage": null` and a last one, with
/// no choices, has the counts.
fn openai_events(text: &str, calls: &[Call], finish: &str, usage: bool) -> Vec<Vec<u8>> {
    let frame = |value: Value| format!("data: {value}\n\n").into_bytes();
    let chunk = |delta: Value, finish: Value| {
        let mut value = json!({
            "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": CREATED,
            "model": "scripted", "system_fingerprint": "fp_scripted",
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        });
        if usage {
            value["usage"] = Value::Null;
        }
        frame(value)
    };
    let mut events = vec![chunk(
        json!({ "role": "assistant", "content": "", "refusal": null }),
        Value::Null,
    )];
    for piece in pieces(text, 4) {
        events.push(chunk(json!({ "content": piece }), Value::Null));
    }
    for (index, call) in calls.iter().enumerate() {
        let mut first = json!({
            "index": index, "type": "function",
            "function": { "name": call.name, "arguments": "" },
        });
        if let Some(id) = &call.id {
            first["id"] = json!(id);
        }
        events.push(chunk(json!({ "tool_calls": [first] }), Value::Null));
        for piece in pieces(&call.arguments, 5) {
            let fragment = json!({ "index": index, "function": { "arguments": piece } });
            events.push(chunk(json!({ "tool_calls": [fragment] }), Value::Null));
        }
    }
    events.push(chunk(json!({}), json!(finish)));
    if usage {
        events.push(frame(json!({
            "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": CREATED,
            "model": "scripted", "system_fingerprint": "fp_scripted", "choices": [],
            "usage": {
                "prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30,
                "prompt_tokens_details": { "cached_tokens": 0, "audio_tokens": 0 },
                "completion_tokens_details": {
                    "reasoning_tokens": 0, "audio_tokens": 0,
                    "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
                },
            },
        })));
    }
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

fn anthropic_events(text: &str, calls: &[Call], finish: &str) -> Vec<Vec<u8>> {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n").into_bytes();
    let mut events = vec![event(
        "message_start",
        json!({
            "type": "message_start",
            "message": {
                "id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": { "input_tokens": 20, "output_tokens": 1 },
            },
        }),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.push(event(
            "content_block_start",
            json!({ "type": "content_block_start", "index": index, "content_block": { "type": "text", "text": "" } }),
        ));
        events.push(event("ping", json!({ "type": "ping" })));
        for piece in pieces(text, 4) {
            events.push(event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index, "delta": { "type": "text_delta", "text": piece } }),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
        index += 1;
    }
    for call in calls {
        events.push(event(
            "content_block_start",
            json!({
                "type": "content_block_start", "index": index,
                "content_block": { "type": "tool_use", "id": call.id.clone().unwrap_or_default(), "name": call.name, "input": {} },
            }),
        ));
        events.push(event(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": index, "delta": { "type": "input_json_delta", "partial_json": "" } }),
        ));
        for piece in pieces(&call.arguments, 5) {
            events.push(event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index, "delta": { "type": "input_json_delta", "partial_json": piece } }),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
        index += 1;
    }
    events.push(event(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": { "stop_reason": anthropic_stop(finish), "stop_sequence": null },
            "usage": { "output_tokens": 10 },
        }),
    ));
    events.push(event("message_stop", json!({ "type": "message_stop" })));
    events
}

//! The Anthropic Messages wire format (`POST {base}/v1/messages`), as served by Anthropic and
//! by llama.cpp's llama-server.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::sse::Event;
use super::wire::{WireFormat, WireProvider, event_json};
use super::{
    ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolChoice, Usage, arguments_object,
};

/// The API version this client speaks.
const API_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; this is sent when the request sets none.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages format.
#[derive(Debug, Clone, Copy)]
pub struct Anthropic;

/// A model behind an Anthropic Messages endpoint. The base URL is the server's root, such as
/// `https://api.anthropic.com` (a trailing `/v1` is accepted too); a key goes in `x-api-key`.
pub type AnthropicProvider = WireProvider<Anthropic>;

impl WireFormat for Anthropic {
    const NAME: &'static str = "Anthropic format";
    type Stream = StreamState;

    fn url(base: &str) -> String {
        match base.strip_suffix("/v1") {
            Some(_) => format!("{base}/messages"),
            None => format!("{base}/v1/messages"),
        }
    }

    fn headers(api_key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
        if let Some(key) = api_key {
            headers.push(("x-api-key", key.to_owned()));
        }
        headers
    }

    /// The JSON body of a request. System messages become the top-level `system`; messages of
    /// the same role in a row are merged (the format requires turns to alternate), so tool
    /// results all land in the user message right after the calls.
    fn body(model: &str, request: &ChatRequest) -> Value {
        let mut system: Vec<&str> = Vec::new();
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        let mut push = |role: &'static str, blocks: Vec<Value>| match messages.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => messages.push((role, blocks)),
        };
        for message in &request.messages {
            match message {
                Message::System { text } => system.push(text),
                Message::User { text } => {
                    push("user", vec![json!({ "type": "text", "text": text })])
                }
                Message::Assistant { text, tool_calls } => {
                    let mut blocks = Vec::new();
                    if !text.is_empty() {
                        blocks.push(json!({ "type": "text", "text": text }));
                    }
                    for call in tool_calls {
                        let input = arguments_object(&call.arguments).unwrap_or_default();
                        blocks.push(json!({
                            "type": "tool_use", "id": call.id, "name": call.name, "input": input,
                        }));
                    }
                    push("assistant", blocks);
                }
                Message::ToolResult {
                    call_id,
                    content,
                    is_error,
                    ..
                } => {
                    let mut block = json!({
                        "type": "tool_result", "tool_use_id": call_id, "content": content,
                    });
                    if *is_error {
                        block["is_error"] = json!(true);
                    }
                    push("user", vec![block]);
                }
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| json!({ "role": role, "content": content }))
            .collect();
        let mut body = json!({
            "model": model,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.parameters,
                    })
                })
                .collect();
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!({ "type": "auto" }),
                ToolChoice::None => json!({ "type": "none" }),
                ToolChoice::Required => json!({ "type": "any" }),
                ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
            };
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if request.stream {
            body["stream"] = json!(true);
        }
        body
    }

    /// Reads a whole (not streamed) answer.
    fn parse(value: &Value) -> Result<ChatResponse, String> {
        let blocks = value
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("the answer has no content: {value}"))?;
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => text.push_str(block["text"].as_str().unwrap_or("")),
                Some("tool_use") => tool_calls.push(ToolCall {
                    id: block["id"].as_str().unwrap_or("").to_owned(),
                    name: block["name"].as_str().unwrap_or("").to_owned(),
                    arguments: block
                        .get("input")
                        .map_or_else(|| "{}".to_owned(), Value::to_string),
                }),
                _ => {}
            }
        }
        let finish = match value.get("stop_reason").and_then(Value::as_str) {
            Some(reason) => stop_reason(reason),
            None if tool_calls.is_empty() => FinishReason::Stop,
            None => FinishReason::ToolCalls,
        };
        Ok(ChatResponse {
            text,
            tool_calls,
            finish,
            usage: usage(value),
        })
    }

    fn apply(
        stream: &mut StreamState,
        event: &Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, String> {
        let data = event_json(event)?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        if kind == "error" {
            let message = data["error"]["message"].as_str().unwrap_or("unknown");
            return Err(format!("the stream reported an error: {message}"));
        }
        stream.apply(kind, &data, on_text);
        Ok(kind == "message_stop")
    }

    fn finish(stream: StreamState) -> Result<ChatResponse, String> {
        stream.finish()
    }
}

fn stop_reason(value: &str) -> FinishReason {
    match value {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn usage(value: &Value) -> Option<Usage> {
    Usage::from_json(value, "input_tokens", "output_tokens")
}

/// A block of a streamed answer.
#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        call: ToolCall,
        /// `input` as `content_block_start` gave it, used when no JSON deltas follow.
        initial: Value,
    },
    Other,
}

/// A streamed answer being assembled from its events.
#[derive(Debug, Default)]
pub struct StreamState {
    text: String,
    blocks: BTreeMap<u64, Block>,
    finish: Option<FinishReason>,
    usage: Usage,
    stopped: bool,
}

impl StreamState {
    pub(crate) fn apply(
        &mut self,
        kind: &str,
        data: &Value,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) {
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(usage) = usage(&data["message"]) {
                    self.usage = self.usage + usage;
                }
            }
            "content_block_start" => {
                let block = &data["content_block"];
                let block = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block["text"].as_str().unwrap_or("");
                        if !text.is_empty() {
                            self.text.push_str(text);
                            on_text(text);
                        }
                        Block::Text
                    }
                    Some("tool_use") => Block::ToolUse {
                        call: ToolCall {
                            id: block["id"].as_str().unwrap_or("").to_owned(),
                            name: block["name"].as_str().unwrap_or("").to_owned(),
                            arguments: String::new(),
                        },
                        initial: block.get("input").cloned().unwrap_or(Value::Null),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.blocks.get_mut(&index),
                ) {
                    (Some("text_delta"), _) => {
                        let text = delta["text"].as_str().unwrap_or("");
                        self.text.push_str(text);
                        on_text(text);
                    }
                    (Some("input_json_delta"), Some(Block::ToolUse { call, .. })) => {
                        call.arguments
                            .push_str(delta["partial_json"].as_str().unwrap_or(""));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.finish = Some(stop_reason(reason));
                }
                if let Some(output) = data["usage"].get("output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = output;
                }
            }
            "message_stop" => self.stopped = true,
            _ => {}
        }
    }

    pub(crate) fn finish(self) -> Result<ChatResponse, String> {
        if !self.stopped {
            return Err("the stream ended before `message_stop`".to_owned());
        }
        let tool_calls = self
            .blocks
            .into_values()
            .filter_map(|block| match block {
                Block::ToolUse { mut call, initial } => {
                    if call.arguments.trim().is_empty() {
                        call.arguments = match initial {
                            Value::Object(map) => Value::Object(map).to_string(),
                            _ => "{}".to_owned(),
                        };
                    }
                    Some(call)
                }
                Block::Text | Block::Other => None,
            })
            .collect::<Vec<_>>();
        let finish = self.finish.unwrap_or(if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            finish,
            usage: Some(self.usage),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolDefinition;

    #[test]
    fn tool_results_and_the_next_user_text_share_one_user_message() {
        let request = ChatRequest {
            messages: vec![
                Message::system("Be brief."),
                Message::user("2+2 and 3+3?"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "add".into(),
                            arguments: r#"{"a":2,"b":2}"#.into(),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "add".into(),
                            arguments: "{broken".into(),
                        },
                    ],
                },
                Message::ToolResult {
                    call_id: "t1".into(),
                    name: "add".into(),
                    content: "4".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                Message::ToolResult {
                    call_id: "t2".into(),
                    name: "add".into(),
                    content: "bad".into(),
                    is_error: true,
                    images: Vec::new(),
                },
            ],
            tools: vec![ToolDefinition {
                name: "add".into(),
                description: "Adds.".into(),
                parameters: json!({"type":"object"}),
            }],
            tool_choice: ToolChoice::Required,
            temperature: Some(0.0),
            max_tokens: None,
            stream: false,
        };
        let body = Anthropic::body("m", &request);
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][0]["input"], json!({"a": 2, "b": 2}));
        assert_eq!(
            messages[1]["content"][1]["input"],
            json!({}),
            "broken JSON is never sent"
        );
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(messages[2]["content"][1]["is_error"], true);
        assert!(messages[2]["content"][0].get("is_error").is_none());
    }
}

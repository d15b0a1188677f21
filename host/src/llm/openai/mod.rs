//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`), as served by
//! OpenAI, llama.cpp's llama-server, vLLM, Ollama's `/v1`, LM Studio and others.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::sse::Event;
use super::wire::{WireFormat, WireProvider, event_json};
use super::{ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolChoice, Usage};

/// The OpenAI Chat Completions format.
#[derive(Debug, Clone, Copy)]
pub struct OpenAi;

/// A model behind an OpenAI-compatible Chat Completions endpoint. The base URL ends in `/v1`,
/// such as `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`; a key goes as a bearer
/// token.
pub type OpenAiProvider = WireProvider<OpenAi>;

impl WireFormat for OpenAi {
    const NAME: &'static str = "OpenAI format";
    type Stream = StreamState;

    fn url(base: &str) -> String {
        format!("{base}/chat/completions")
    }

    fn headers(api_key: Option<&str>) -> Vec<(&'static str, String)> {
        match api_key {
            Some(key) => vec![("authorization", format!("Bearer {key}"))],
            None => Vec::new(),
        }
    }

    /// The JSON body of a request.
    fn body(model: &str, request: &ChatRequest) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(message).collect();
        let mut body = json!({ "model": model, "messages": messages });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.parameters,
                        }
                    })
                })
                .collect();
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => {
                    json!({ "type": "function", "function": { "name": name } })
                }
            };
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(max_tokens) = request.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if request.stream {
            body["stream"] = json!(true);
        }
        body
    }

    /// Reads a whole (not streamed) answer.
    fn parse(value: &Value) -> Result<ChatResponse, String> {
        let choice = value
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| format!("the answer has no choices: {value}"))?;
        let message = choice.get("message").ok_or("the choice has no message")?;
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let tool_calls = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .map(|call| ToolCall {
                        id: call
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        name: call["function"]["name"].as_str().unwrap_or("").to_owned(),
                        arguments: arguments_text(call["function"].get("arguments")),
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let finish = match choice.get("finish_reason").and_then(Value::as_str) {
            Some(reason) => finish_reason(reason),
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
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk = event_json(event)?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            return Err(format!("the stream reported an error: {message}"));
        }
        stream.apply(&chunk, on_text);
        Ok(false)
    }

    fn finish(stream: StreamState) -> Result<ChatResponse, String> {
        stream.finish()
    }
}

fn message(message: &Message) -> Value {
    match message {
        Message::System { text } => json!({ "role": "system", "content": text }),
        Message::User { text } => json!({ "role": "user", "content": text }),
        Message::Assistant { text, tool_calls } => {
            let mut value = json!({
                "role": "assistant",
                "content": if text.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(text) },
            });
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": { "name": call.name, "arguments": call.arguments },
                        })
                    })
                    .collect();
                value["tool_calls"] = Value::Array(calls);
            }
            value
        }
        Message::ToolResult {
            call_id, content, ..
        } => json!({ "role": "tool", "tool_call_id": call_id, "content": content }),
    }
}

fn finish_reason(value: &str) -> FinishReason {
    match value {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn usage(value: &Value) -> Option<Usage> {
    Usage::from_json(value, "prompt_tokens", "completion_tokens")
}

/// Arguments as text: a string as sent, or an object some servers send instead.
fn arguments_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A streamed answer being assembled from its chunks. Tool calls arrive as fragments keyed by
/// `index`: the first usually carries the id and name, the rest pieces of the arguments.
#[derive(Debug, Default)]
pub struct StreamState {
    text: String,
    calls: BTreeMap<u64, ToolCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
}

impl StreamState {
    pub(crate) fn apply(&mut self, chunk: &Value, on_text: &mut (dyn FnMut(&str) + Send)) {
        if let Some(usage) = usage(chunk) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        let delta = &choice["delta"];
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            on_text(text);
        }
        if let Some(fragments) = delta.get("tool_calls").and_then(Value::as_array) {
            for fragment in fragments {
                let index = match fragment.get("index").and_then(Value::as_u64) {
                    Some(index) => index,
                    // No index: a fragment with an id or a name starts a new call, any other
                    // continues the last one.
                    None => {
                        let non_empty = |v: Option<&Value>| {
                            v.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
                        };
                        let starts_new = non_empty(fragment.get("id"))
                            || non_empty(fragment["function"].get("name"));
                        match self.calls.keys().next_back() {
                            Some(&last) if starts_new => last + 1,
                            Some(&last) => last,
                            None => 0,
                        }
                    }
                };
                let call = self.calls.entry(index).or_insert_with(|| ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                if let Some(id) = fragment.get("id").and_then(Value::as_str)
                    && call.id.is_empty()
                {
                    call.id = id.to_owned();
                }
                let function = &fragment["function"];
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    call.name.push_str(name);
                }
                call.arguments
                    .push_str(&arguments_text(function.get("arguments")));
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
        }
    }

    pub(crate) fn finish(self) -> Result<ChatResponse, String> {
        let tool_calls: Vec<ToolCall> = self.calls.into_values().collect();
        let Some(finish) = self.finish else {
            return Err("the stream ended without a finish reason".to_owned());
        };
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            finish,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmented_calls_are_assembled_by_index() {
        let mut state = StreamState::default();
        let chunks = [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"add","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"","function":{"name":"square_root","arguments":"{\"x\""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": 1, "}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":": 4}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"b\": 2}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        ];
        for chunk in &chunks {
            state.apply(chunk, &mut |_| {});
        }
        let response = state.finish().unwrap();
        assert_eq!(response.finish, FinishReason::ToolCalls);
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "add".into(),
                    arguments: "{\"a\": 1, \"b\": 2}".into()
                },
                ToolCall {
                    id: String::new(),
                    name: "square_root".into(),
                    arguments: "{\"x\": 4}".into()
                },
            ]
        );
    }

    #[test]
    fn assistant_messages_with_calls_have_null_content() {
        let value = message(&Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "add".into(),
                arguments: "{}".into(),
            }],
        });
        assert_eq!(value["content"], Value::Null);
        assert_eq!(value["tool_calls"][0]["function"]["arguments"], "{}");
    }
}

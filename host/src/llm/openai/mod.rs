//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`), as served by
//! OpenAI, llama.cpp's llama-server, vLLM, Ollama's `/v1`, LM Studio and others.

mod schema;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::error::{WireError, excerpt};
use super::http::HttpOptions;
use super::sse::Event;
use super::wire::{self, WireFormat, WireProvider, decode, event_json, extra_fields};
use super::{
    ApiKey, ChatRequest, ChatResponse, FinishReason, Message, ProviderError, ToolCall, ToolChoice,
    ToolDefinition, Usage,
};
use schema::{
    Chunk, Completion, FunctionDefinition, FunctionName, FunctionType, Request,
    RequestFunctionCall, RequestMessage, RequestToolCall, StreamOptions, Tool, ToolCallFragment,
    ToolChoiceParam,
};

/// The OpenAI Chat Completions format.
#[derive(Debug, Clone, Copy)]
pub struct OpenAi;

/// A model behind an OpenAI-compatible Chat Completions endpoint.
pub type OpenAiProvider = WireProvider<OpenAi>;

impl OpenAiProvider {
    /// `model` at `base_url`, which ends in `/v1`: `https://api.openai.com/v1`, or
    /// `http://127.0.0.1:8080/v1` for a local server. A key goes as a bearer token.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<ApiKey>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        wire::provider(base_url, model, api_key, options)
    }
}

/// The body fields this format sets; [`ChatRequest::extra`] cannot override them.
const FIELDS: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "temperature",
    "max_tokens",
    "stream",
    "stream_options",
];

impl WireFormat for OpenAi {
    const NAME: &'static str = "OpenAI format";
    const PROVIDER: &'static str = "openai";
    type Stream = StreamState;

    fn url(base: &str) -> String {
        format!("{base}/chat/completions")
    }

    fn headers(api_key: Option<&ApiKey>) -> Vec<(&'static str, String)> {
        match api_key {
            Some(key) => vec![("authorization", format!("Bearer {}", key.value))],
            None => Vec::new(),
        }
    }

    fn body<'a>(model: &'a str, request: &'a ChatRequest) -> impl Serialize + 'a {
        let tools: Vec<Tool<'a>> = request.tools.iter().map(offered).collect();
        Request {
            model,
            messages: request.messages.iter().map(message).collect(),
            tool_choice: (!tools.is_empty()).then(|| tool_choice(&request.tool_choice)),
            tools,
            temperature: request.temperature,
            max_tokens: request.max_tokens,
            stream: request.stream,
            stream_options: request.stream.then_some(StreamOptions {
                include_usage: true,
            }),
            extra: extra_fields(request, FIELDS),
        }
    }

    fn parse(value: Value) -> Result<ChatResponse, WireError> {
        let completion: Completion = decode(value, None)?;
        let choice = match <[_; 1]>::try_from(completion.choices) {
            Ok([choice]) => choice,
            Err(choices) if choices.is_empty() => return Err(missing("choices[0]")),
            Err(choices) => return Err(too_many(choices.len())),
        };
        let message = choice.message;
        let mut tool_calls = Vec::new();
        for (i, call) in message.tool_calls.into_iter().flatten().enumerate() {
            let path = format!("choices[0].message.tool_calls[{i}].function");
            if call.function.name.is_empty() {
                return Err(format!("{path}.name is empty").into());
            }
            tool_calls.push(ToolCall {
                id: call.id,
                name: call.function.name,
                arguments: arguments_text(call.function.arguments, &path)?,
            });
        }
        let Some(reason) = choice.finish_reason else {
            return Err(missing("choices[0].finish_reason"));
        };
        Ok(ChatResponse {
            text: [message.content, message.refusal]
                .into_iter()
                .flatten()
                .collect(),
            tool_calls,
            finish: finish_reason(&reason),
            usage: completion.usage.map(Usage::from),
        })
    }

    fn apply(
        stream: &mut StreamState,
        event: &Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, WireError> {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        let value = event_json(event)?;
        if let Some(error) = value.get("error") {
            let message = match error.get("message").and_then(Value::as_str) {
                Some(message) => message.to_owned(),
                None => excerpt(&error.to_string()),
            };
            return Err(format!("the stream reported an error: {message}").into());
        }
        stream.apply(decode(value, Some("a stream chunk"))?, on_text)?;
        Ok(false)
    }

    fn finish(stream: StreamState) -> Result<ChatResponse, WireError> {
        stream.finish()
    }

    fn progress(stream: &StreamState) -> usize {
        stream.text.len()
            + stream.calls_size
            + usize::from(stream.finish.is_some())
            + usize::from(stream.usage.is_some())
    }
}

fn message(message: &Message) -> RequestMessage<'_> {
    match message {
        Message::System { text } => RequestMessage::System { content: text },
        Message::User { text } => RequestMessage::User { content: text },
        Message::Assistant { text, tool_calls } => RequestMessage::Assistant {
            content: (!text.is_empty() || tool_calls.is_empty()).then_some(text.as_str()),
            tool_calls: tool_calls
                .iter()
                .map(|call| RequestToolCall {
                    id: &call.id,
                    kind: FunctionType::Function,
                    function: RequestFunctionCall {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                })
                .collect(),
        },
        // Chat Completions takes only text in a tool message: an image becomes a note.
        Message::ToolResult {
            call_id,
            content,
            images,
            ..
        } => RequestMessage::Tool {
            tool_call_id: call_id,
            content: if images.is_empty() {
                content.into()
            } else {
                let notes = images.iter().map(super::image_note);
                let text: Vec<String> = (!content.is_empty())
                    .then(|| content.clone())
                    .into_iter()
                    .chain(notes)
                    .collect();
                text.join("\n").into()
            },
        },
    }
}

fn tool_choice(choice: &ToolChoice) -> ToolChoiceParam<'_> {
    match choice {
        ToolChoice::Auto => ToolChoiceParam::Mode("auto"),
        ToolChoice::None => ToolChoiceParam::Mode("none"),
        ToolChoice::Required => ToolChoiceParam::Mode("required"),
        ToolChoice::Tool(name) => ToolChoiceParam::Function {
            kind: FunctionType::Function,
            function: FunctionName { name },
        },
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

fn missing(path: &str) -> WireError {
    format!("{path} is missing").into()
}

/// toolhost never asks for more than one choice (`n`).
fn too_many(count: usize) -> WireError {
    format!("choices has {count} entries; toolhost asks for one").into()
}

/// Arguments as text: JSON text as the format sends it, or an object some servers send
/// instead. `path` names the field, for the error.
fn arguments_text(value: Value, path: &str) -> Result<String, WireError> {
    match value {
        Value::String(text) => Ok(text),
        Value::Object(_) => Ok(value.to_string()),
        other => Err(format!(
            "{path}.arguments is neither JSON text nor an object: {}",
            excerpt(&other.to_string())
        )
        .into()),
    }
}

/// `tool` as an OpenAI request offers it: `{"type": "function", "function": {...}}`.
pub(in crate::llm) fn offered(tool: &ToolDefinition) -> Tool<'_> {
    Tool {
        kind: FunctionType::Function,
        function: FunctionDefinition {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        },
    }
}

/// A streamed answer being assembled from its chunks. Tool calls arrive as fragments keyed by
/// `index`: the first carries the id and name, the rest pieces of the arguments.
#[derive(Debug, Default)]
pub struct StreamState {
    text: String,
    calls: BTreeMap<u64, ToolCall>,
    /// How much the calls have grown: one for each call, and the bytes of its id, name and
    /// arguments. Counted as they come, so that the progress of each event costs the same
    /// however many calls there are (summed over the calls, it made a stream of many calls
    /// quadratic).
    calls_size: usize,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
}

impl StreamState {
    fn apply(
        &mut self,
        chunk: Chunk,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), WireError> {
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        let choice = match <[_; 1]>::try_from(chunk.choices) {
            Ok([choice]) => choice,
            // The last chunk (of token counts) has no choices.
            Err(choices) if choices.is_empty() => return Ok(()),
            Err(choices) => return Err(too_many(choices.len())),
        };
        let delta = choice.delta;
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                self.text.push_str(&text);
                on_text(&text);
            }
        }
        for fragment in delta.tool_calls.into_iter().flatten() {
            self.add(fragment)?;
        }
        if let Some(reason) = choice.finish_reason {
            self.finish = Some(finish_reason(&reason));
        }
        Ok(())
    }

    fn add(&mut self, fragment: ToolCallFragment) -> Result<(), WireError> {
        let (name, arguments) = match fragment.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        let index = match fragment.index {
            Some(index) => index,
            // No index (some servers leave it out): a fragment with an id or a name starts a
            // new call, any other continues the last one.
            None => {
                let starts_new = [&fragment.id, &name]
                    .iter()
                    .any(|field| field.as_deref().is_some_and(|s| !s.is_empty()));
                match self.calls.keys().next_back() {
                    Some(&last) if starts_new => last.checked_add(1).ok_or_else(|| {
                        WireError::from(format!(
                            "in a stream chunk, a tool call without an index follows the call \
                             with index {last}, the largest there is \
                             (choices[0].delta.tool_calls[].index)"
                        ))
                    })?,
                    Some(&last) => last,
                    None => 0,
                }
            }
        };
        let mut grown = 0;
        let call = self.calls.entry(index).or_insert_with(|| {
            grown += 1;
            ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            }
        });
        let before = call.id.len() + call.name.len() + call.arguments.len();
        if let Some(id) = fragment.id
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(name) = name {
            call.name.push_str(&name);
        }
        match arguments {
            None => {}
            Some(Value::String(piece)) => call.arguments.push_str(&piece),
            Some(object @ Value::Object(_)) => call.arguments.push_str(&object.to_string()),
            Some(other) => {
                return Err(format!(
                    "in a stream chunk, choices[0].delta.tool_calls[].function.arguments of the \
                     call with index {index} is neither JSON text nor an object: {}",
                    excerpt(&other.to_string())
                )
                .into());
            }
        }
        grown += call.id.len() + call.name.len() + call.arguments.len() - before;
        self.calls_size += grown;
        Ok(())
    }

    /// The answer. A call whose fragments carried no id has an empty one (the format makes the
    /// id optional in each fragment): the loop gives it one. A call without a name is an error.
    fn finish(self) -> Result<ChatResponse, WireError> {
        let Some(finish) = self.finish else {
            return Err(
                "the stream ended without a finish reason (choices[0].finish_reason)"
                    .to_owned()
                    .into(),
            );
        };
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(format!(
                    "the streamed tool call with index {index} never got a name \
                     (choices[0].delta.tool_calls[].function.name)"
                )
                .into());
            }
            tool_calls.push(call);
        }
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            finish,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests;

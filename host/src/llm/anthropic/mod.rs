//! The Anthropic Messages wire format (`POST {base}/v1/messages`), as served by Anthropic and
//! by llama.cpp's llama-server.

mod schema;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::{WireError, excerpt};
use super::http::HttpOptions;
use super::sse::Event;
use super::wire::{self, WireFormat, WireProvider, decode, event_json, extra_fields};
use super::{
    ApiKey, ChatRequest, ChatResponse, FinishReason, Message, ProviderError, ToolCall, ToolChoice,
    Usage, image_note,
};
use crate::arguments::Arguments;
use crate::content::Media;
use schema::{
    BlockDelta, BlockStart, ContentBlock, Delta, ImageSource, MessageDelta, MessageResponse,
    MessageStart, Request, RequestBlock, ResultBlock, Role, Tool, ToolChoiceParam,
    ToolResultContent, Turn,
};

/// The API version this client speaks.
const API_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; this is sent when the request sets none.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The media types Anthropic takes in image blocks.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// A tool result's content. Anthropic takes images in tool results: with images, it is the
/// text, then one image block per image, or a note for a type the API does not take.
fn tool_result_content<'a>(text: &'a str, images: &'a [Media]) -> ToolResultContent<'a> {
    if images.is_empty() {
        return ToolResultContent::Text(text);
    }
    let mut blocks = Vec::with_capacity(images.len() + 1);
    if !text.is_empty() {
        blocks.push(ResultBlock::Text { text: text.into() });
    }
    for image in images {
        if IMAGE_TYPES.contains(&image.mime_type.as_str()) {
            blocks.push(ResultBlock::Image {
                source: ImageSource {
                    kind: "base64",
                    media_type: &image.mime_type,
                    data: &image.data,
                },
            });
        } else {
            blocks.push(ResultBlock::Text {
                text: image_note(image).into(),
            });
        }
    }
    ToolResultContent::Blocks(blocks)
}

/// The Anthropic Messages format.
#[derive(Debug, Clone, Copy)]
pub struct Anthropic;

/// A model behind an Anthropic Messages endpoint.
pub type AnthropicProvider = WireProvider<Anthropic>;

impl AnthropicProvider {
    /// `model` at `base_url`, the server's root: `https://api.anthropic.com` (a trailing `/v1`
    /// is accepted too), or `http://127.0.0.1:8080` for a local server. A key goes in
    /// `x-api-key`.
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
    "max_tokens",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "temperature",
    "stream",
];

impl WireFormat for Anthropic {
    const NAME: &'static str = "Anthropic format";
    const PROVIDER: &'static str = "anthropic";
    type Stream = StreamState;

    fn url(base: &str) -> String {
        match base.strip_suffix("/v1") {
            Some(_) => format!("{base}/messages"),
            None => format!("{base}/v1/messages"),
        }
    }

    fn headers(api_key: Option<&ApiKey>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
        if let Some(key) = api_key {
            headers.push(("x-api-key", key.value.clone()));
        }
        headers
    }

    /// System messages become the top-level `system`; messages of the same role in a row are
    /// merged (the format requires turns to alternate), so tool results all land in the user
    /// message right after the calls.
    fn body<'a>(model: &'a str, request: &'a ChatRequest) -> impl Serialize + 'a {
        let mut system: Vec<&str> = Vec::new();
        let mut turns: Vec<Turn<'a>> = Vec::new();
        let mut push = |role: Role, content: Vec<RequestBlock<'a>>| {
            // The API refuses a turn without blocks (`content: []`).
            if content.is_empty() {
                return;
            }
            match turns.last_mut() {
                Some(last) if last.role == role => last.content.extend(content),
                _ => turns.push(Turn { role, content }),
            }
        };
        for message in &request.messages {
            match message {
                Message::System { text } => system.push(text),
                Message::User { text } => push(Role::User, vec![RequestBlock::Text { text }]),
                Message::Assistant { text, tool_calls } => {
                    let mut blocks = Vec::new();
                    // The API refuses a text block of only whitespace. A turn with neither
                    // text nor calls is left out altogether, and the user turns around it
                    // merge into one.
                    if !text.trim().is_empty() {
                        blocks.push(RequestBlock::Text { text });
                    }
                    blocks.extend(tool_calls.iter().map(|call| RequestBlock::ToolUse {
                        id: &call.id,
                        name: &call.name,
                        input: input_of(call),
                    }));
                    push(Role::Assistant, blocks);
                }
                Message::ToolResult {
                    call_id,
                    content,
                    is_error,
                    images,
                    ..
                } => push(
                    Role::User,
                    vec![RequestBlock::ToolResult {
                        tool_use_id: call_id,
                        content: tool_result_content(content, images),
                        is_error: *is_error,
                    }],
                ),
            }
        }
        let tools: Vec<Tool<'a>> = request
            .tools
            .iter()
            .map(|tool| Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .collect();
        Request {
            model,
            max_tokens: request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            messages: turns,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            tool_choice: (!tools.is_empty()).then(|| match &request.tool_choice {
                ToolChoice::Auto => ToolChoiceParam::Auto,
                ToolChoice::None => ToolChoiceParam::None,
                ToolChoice::Required => ToolChoiceParam::Any,
                ToolChoice::Tool(name) => ToolChoiceParam::Tool { name },
            }),
            tools,
            temperature: request.temperature,
            stream: request.stream,
            extra: extra_fields(request, FIELDS),
        }
    }

    fn parse(value: Value) -> Result<ChatResponse, WireError> {
        let message: MessageResponse = decode(value, None)?;
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for (i, block) in message.content.into_iter().enumerate() {
            match block {
                ContentBlock::Text { text: piece } => text.push_str(&piece),
                ContentBlock::ToolUse { id, name, input } => {
                    check_name(&name, &format!("content[{i}].name"))?;
                    let arguments = match input {
                        Some(input @ Value::Object(_)) => input.to_string(),
                        Some(other) => return Err(not_an_object(&format!("content[{i}]"), &other)),
                        None => return Err(format!("content[{i}].input is missing").into()),
                    };
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                ContentBlock::Thinking {} | ContentBlock::RedactedThinking {} => {}
            }
        }
        let Some(reason) = message.stop_reason else {
            return Err("stop_reason is missing".to_owned().into());
        };
        Ok(ChatResponse {
            text,
            tool_calls,
            finish: stop_reason(&reason),
            usage: Some(message.usage.into()),
        })
    }

    fn apply(
        stream: &mut StreamState,
        event: &Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, WireError> {
        let value = event_json(event)?;
        let kind = match value.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            Some(other) => {
                return Err(format!(
                    "a stream event's type is not a string: {}",
                    excerpt(&other.to_string())
                )
                .into());
            }
            None => return Err("a stream event's type is missing".to_owned().into()),
        };
        let within = format!("a {kind} event");
        let within = Some(within.as_str());
        let needs_start = kind.starts_with("content_block_")
            || matches!(kind.as_str(), "message_delta" | "message_stop");
        if needs_start && stream.usage.is_none() {
            return Err(format!("a {kind} event came before message_start").into());
        }
        match kind.as_str() {
            "message_start" => {
                let start: MessageStart = decode(value, within)?;
                stream.usage = Some(start.message.usage.into());
            }
            "content_block_start" => stream.start(decode(value, within)?, on_text)?,
            "content_block_delta" => stream.delta(decode(value, within)?, on_text)?,
            "content_block_stop" | "ping" => {}
            "message_delta" => stream.message_delta(decode(value, within)?),
            "message_stop" => {
                stream.stopped = true;
                return Ok(true);
            }
            "error" => {
                let message = match value.pointer("/error/message").and_then(Value::as_str) {
                    Some(message) => message.to_owned(),
                    None => excerpt(&value.to_string()),
                };
                return Err(format!("the stream reported an error: {message}").into());
            }
            // The API may add event types, and asks clients to skip the ones they do not know.
            other => tracing::debug!(event = other, "skipping a stream event of unknown type"),
        }
        Ok(false)
    }

    fn finish(stream: StreamState) -> Result<ChatResponse, WireError> {
        stream.finish()
    }

    fn progress(stream: &StreamState) -> usize {
        stream.text.len()
            + stream.blocks_size
            + stream.thinking
            + usize::from(stream.finish.is_some())
            + usize::from(stream.stopped)
    }
}

/// A call's arguments as the `input` object. The loop records `{}` for arguments that are
/// not an object (and tells the model what was wrong with them in the call's result), so
/// anything else only comes from a history a caller made up; it is sent as `{}` too, since
/// the format has no way to send text that is not an object.
fn input_of(call: &ToolCall) -> Map<String, Value> {
    match Arguments::parse(&call.arguments) {
        Ok(arguments) => arguments.to_object(),
        Err(_) => Map::new(),
    }
}

fn check_name(name: &str, path: &str) -> Result<(), WireError> {
    if name.is_empty() {
        return Err(format!("{path} is empty").into());
    }
    Ok(())
}

fn not_an_object(block: &str, input: &Value) -> WireError {
    format!(
        "{block}.input is not an object: {}",
        excerpt(&input.to_string())
    )
    .into()
}

fn stop_reason(value: &str) -> FinishReason {
    match value {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A block of a streamed answer.
#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        call: ToolCall,
        /// `input` as `content_block_start` gave it, used when no JSON deltas follow.
        initial: Option<Map<String, Value>>,
    },
    Thinking,
}

impl Block {
    fn name(&self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::ToolUse { .. } => "tool_use",
            Self::Thinking => "thinking",
        }
    }
}

/// A streamed answer being assembled from its events.
#[derive(Debug, Default)]
pub struct StreamState {
    text: String,
    blocks: BTreeMap<u64, Block>,
    /// How much the blocks have grown: one for each block, and the bytes of the arguments
    /// of tool calls. Counted as they come, so that the progress of each event costs the
    /// same however many blocks there are.
    blocks_size: usize,
    finish: Option<FinishReason>,
    /// Set by `message_start`, which begins every stream.
    usage: Option<Usage>,
    stopped: bool,
    /// How many thinking and signature deltas came (their content is not kept).
    thinking: usize,
}

impl StreamState {
    fn start(
        &mut self,
        start: BlockStart,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), WireError> {
        let within = "in a content_block_start event, content_block";
        let block = match start.content_block {
            ContentBlock::Text { text } => {
                if !text.is_empty() {
                    self.text.push_str(&text);
                    on_text(&text);
                }
                Block::Text
            }
            ContentBlock::ToolUse { id, name, input } => {
                check_name(&name, &format!("{within}.name"))?;
                let initial = match input {
                    None => None,
                    Some(Value::Object(input)) => Some(input),
                    Some(other) => return Err(not_an_object(within, &other)),
                };
                Block::ToolUse {
                    call: ToolCall {
                        id,
                        name,
                        arguments: String::new(),
                    },
                    initial,
                }
            }
            ContentBlock::Thinking {} | ContentBlock::RedactedThinking {} => Block::Thinking,
        };
        if self.blocks.insert(start.index, block).is_some() {
            return Err(format!("content block {} was started twice", start.index).into());
        }
        self.blocks_size += 1;
        Ok(())
    }

    fn delta(
        &mut self,
        delta: BlockDelta,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), WireError> {
        let index = delta.index;
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(format!(
                "a content_block_delta event is for block {index}, which no \
                 content_block_start began"
            )
            .into());
        };
        match (delta.delta, block) {
            (Delta::Text { text }, Block::Text) => {
                if !text.is_empty() {
                    self.text.push_str(&text);
                    on_text(&text);
                }
            }
            (Delta::InputJson { partial_json }, Block::ToolUse { call, .. }) => {
                call.arguments.push_str(&partial_json);
                self.blocks_size += partial_json.len();
            }
            (Delta::Thinking {} | Delta::Signature {}, Block::Thinking) => self.thinking += 1,
            (delta, block) => {
                return Err(format!(
                    "a content_block_delta event brings {} to block {index}, which is a {} \
                     block",
                    delta.name(),
                    block.name()
                )
                .into());
            }
        }
        Ok(())
    }

    fn message_delta(&mut self, delta: MessageDelta) {
        if let Some(reason) = delta.delta.stop_reason {
            self.finish = Some(stop_reason(&reason));
        }
        if let (Some(usage), Some(counts)) = (&mut self.usage, delta.usage) {
            usage.output_tokens = counts.output_tokens;
            if let Some(input) = counts.input_tokens {
                usage.input_tokens = input;
            }
        }
    }

    fn finish(self) -> Result<ChatResponse, WireError> {
        if !self.stopped {
            return Err("the stream ended before message_stop".to_owned().into());
        }
        let Some(finish) = self.finish else {
            return Err(
                "the stream ended without a stop reason (message_delta.delta.stop_reason)"
                    .to_owned()
                    .into(),
            );
        };
        let tool_calls = self
            .blocks
            .into_values()
            .filter_map(|block| match block {
                Block::ToolUse { mut call, initial } => {
                    // No JSON deltas: the input is the one the block started with (or none at
                    // all: empty arguments, which are `{}`).
                    if call.arguments.trim().is_empty()
                        && let Some(initial) = initial
                    {
                        call.arguments = Value::Object(initial).to_string();
                    }
                    Some(call)
                }
                Block::Text | Block::Thinking => None,
            })
            .collect();
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

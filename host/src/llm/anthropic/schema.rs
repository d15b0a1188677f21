//! The bodies of the Anthropic Messages format, as far as toolhost sends and reads them. A
//! field the format may leave out is an `Option`; every other one must be there, or the answer
//! is refused with the field's path. Fields toolhost has no use for are not declared (and so
//! ignored).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::llm::Usage;

/// `POST /v1/messages`.
#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoiceParam<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A turn of the conversation: the roles alternate, and `content` is never empty.
#[derive(Debug, Serialize)]
pub(super) struct Turn<'a> {
    pub role: Role,
    pub content: Vec<RequestBlock<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Role {
    User,
    Assistant,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum RequestBlock<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Map<String, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ToolResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A tool result's content: its text alone, or blocks when the tool also returned images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<ResultBlock<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ResultBlock<'a> {
    Text { text: Cow<'a, str> },
    Image { source: ImageSource<'a> },
}

/// An image sent inline (`"type": "base64"`).
#[derive(Debug, Serialize)]
pub(super) struct ImageSource<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub media_type: &'a str,
    pub data: &'a str,
}

/// A tool offered.
#[derive(Debug, Serialize)]
pub(super) struct Tool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ToolChoiceParam<'a> {
    Auto,
    None,
    Any,
    Tool { name: &'a str },
}

/// A whole answer (`"type": "message"`).
#[derive(Debug, Deserialize)]
pub(super) struct MessageResponse {
    pub content: Vec<ContentBlock>,
    /// Always set in a whole answer; read as an `Option` to say so when it is not.
    pub stop_reason: Option<String>,
    pub usage: MessageUsage,
}

/// A block of an answer. An unknown type is refused (it may hold what the model meant to
/// say); thinking blocks are documented, and carry nothing toolhost uses.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// An object; streams start it empty (Anthropic) or leave it out (llama-server) and
        /// send it in `input_json_delta`s.
        input: Option<Value>,
    },
    /// Extended thinking: its summary, for the model's next turn only when thinking is on,
    /// which toolhost never turns on.
    Thinking {},
    /// Thinking the API encrypted.
    RedactedThinking {},
}

/// Token counts.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(super) struct MessageUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl From<MessageUsage> for Usage {
    fn from(usage: MessageUsage) -> Self {
        Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        }
    }
}

/// `message_start`: the message, its content still empty.
#[derive(Debug, Deserialize)]
pub(super) struct MessageStart {
    pub message: StartedMessage,
}

#[derive(Debug, Deserialize)]
pub(super) struct StartedMessage {
    pub usage: MessageUsage,
}

/// `content_block_start`.
#[derive(Debug, Deserialize)]
pub(super) struct BlockStart {
    pub index: u64,
    pub content_block: ContentBlock,
}

/// `content_block_delta`.
#[derive(Debug, Deserialize)]
pub(super) struct BlockDelta {
    pub index: u64,
    pub delta: Delta,
}

/// What a `content_block_delta` adds to its block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// Pieces of a thinking block (see [`ContentBlock::Thinking`]).
    #[serde(rename = "thinking_delta")]
    Thinking {},
    #[serde(rename = "signature_delta")]
    Signature {},
}

/// `message_delta`: the stop reason, and the counts so far.
#[derive(Debug, Deserialize)]
pub(super) struct MessageDelta {
    pub delta: MessageDeltaBody,
    /// Cumulative counts; older servers send only `output_tokens`.
    pub usage: Option<DeltaUsage>,
}

#[derive(Debug, Deserialize)]
pub(super) struct MessageDeltaBody {
    pub stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct DeltaUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: u64,
}

impl Delta {
    /// Its type, for messages.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text_delta",
            Self::InputJson { .. } => "input_json_delta",
            Self::Thinking {} => "thinking_delta",
            Self::Signature {} => "signature_delta",
        }
    }
}

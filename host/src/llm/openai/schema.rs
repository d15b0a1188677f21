//! The bodies of the OpenAI Chat Completions format, as far as toolhost sends and reads them.
//! A field the format may leave out is an `Option`; every other one must be there, or the
//! answer is refused with the field's path. Fields toolhost has no use for are not declared
//! (and so ignored).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::Usage;

/// `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    pub model: &'a str,
    pub messages: Vec<RequestMessage<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoiceParam<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// Streams end with a chunk of token counts (its `choices` empty) when asked.
#[derive(Debug, Serialize)]
pub(super) struct StreamOptions {
    pub include_usage: bool,
}

/// One message of the conversation sent.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(super) enum RequestMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        /// `null` when the turn is only tool calls.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        tool_calls: Vec<RequestToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

/// The only kind of tool (and tool call) there is: `"type": "function"`.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub(in crate::llm) enum FunctionType {
    Function,
}

#[derive(Debug, Serialize)]
pub(super) struct RequestToolCall<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: FunctionType,
    pub function: RequestFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct RequestFunctionCall<'a> {
    pub name: &'a str,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: &'a str,
}

/// A tool offered.
#[derive(Debug, Serialize)]
pub(in crate::llm) struct Tool<'a> {
    #[serde(rename = "type")]
    pub kind: FunctionType,
    pub function: FunctionDefinition<'a>,
}

#[derive(Debug, Serialize)]
pub(in crate::llm) struct FunctionDefinition<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
}

/// `"auto"`, `"none"`, `"required"`, or `{"type": "function", "function": {"name": ...}}`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolChoiceParam<'a> {
    Mode(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: FunctionType,
        function: FunctionName<'a>,
    },
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionName<'a> {
    pub name: &'a str,
}

/// A whole answer (`chat.completion`).
#[derive(Debug, Deserialize)]
pub(super) struct Completion {
    pub choices: Vec<Choice>,
    /// Some servers report no counts.
    pub usage: Option<CompletionUsage>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Choice {
    pub message: ResponseMessage,
    /// Always set in a whole answer; read as an `Option` to say so when it is not.
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ResponseMessage {
    /// `null` (or absent) when the model only calls tools.
    pub content: Option<String>,
    /// Set instead of `content` when the model refuses.
    pub refusal: Option<String>,
    /// `null` or absent when there are none.
    pub tool_calls: Option<Vec<ResponseToolCall>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ResponseToolCall {
    /// Required by the format (it may be empty; the loop then gives the call an id).
    pub id: String,
    pub function: ResponseFunction,
}

#[derive(Debug, Deserialize)]
pub(super) struct ResponseFunction {
    pub name: String,
    /// JSON text by the format; some servers send the object itself.
    pub arguments: Value,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(super) struct CompletionUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl From<CompletionUsage> for Usage {
    fn from(usage: CompletionUsage) -> Self {
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        }
    }
}

/// One chunk of a streamed answer (`chat.completion.chunk`).
#[derive(Debug, Deserialize)]
pub(super) struct Chunk {
    /// Empty in the last chunk of counts (and in some servers' first).
    pub choices: Vec<ChunkChoice>,
    /// `null` in every chunk but the last one of counts.
    pub usage: Option<CompletionUsage>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ChunkChoice {
    pub delta: Delta,
    /// Set in the last chunk of the answer.
    pub finish_reason: Option<String>,
}

/// What a chunk adds.
#[derive(Debug, Deserialize)]
pub(super) struct Delta {
    pub content: Option<String>,
    pub refusal: Option<String>,
    pub tool_calls: Option<Vec<ToolCallFragment>>,
}

/// A piece of a tool call. The first piece of a call carries its id and name, the others
/// only pieces of the arguments; all carry the call's `index`.
#[derive(Debug, Deserialize)]
pub(super) struct ToolCallFragment {
    /// Required by the format, but left out by some servers: see `StreamState::apply`.
    pub index: Option<u64>,
    pub id: Option<String>,
    pub function: Option<FunctionFragment>,
}

#[derive(Debug, Deserialize)]
pub(super) struct FunctionFragment {
    pub name: Option<String>,
    pub arguments: Option<Value>,
}

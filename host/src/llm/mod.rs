//! Talking to language models: provider-neutral messages and requests, and the providers that
//! speak the two wire formats everyone serves (OpenAI Chat Completions and Anthropic
//! Messages), streaming or not.
//!
//! A [`Provider`] takes a [`ChatRequest`] and returns the model's whole answer as a
//! [`ChatResponse`], calling back with text deltas as they stream in. Retries, timeouts and
//! error bodies are handled inside; what comes out is a [`ProviderError`] that says what to do.

mod anthropic;
mod config;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod json_in_text;
#[cfg(feature = "local-model")]
pub mod local;
mod openai;
mod retry;
mod rules;
mod sse;
mod wire;

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::manifest::model::{LocalFormat, ProviderKind};
pub use anthropic::{Anthropic, AnthropicProvider};
pub use config::ModelConfig;
pub use error::{ApiKey, BoxError, KeyOrigin, ProviderError, ProviderErrorKind};
pub use http::HttpOptions;
pub(crate) use json_in_text::json_in_text;
pub use openai::{OpenAi, OpenAiProvider};
pub use rules::{Hint, ModelRules, NoRules};
pub use wire::WireProvider;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The text.
        text: String,
    },
    /// What the user said.
    User {
        /// The text.
        text: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text (may be empty when the model only calls tools).
        text: String,
        /// The tools it asked to run, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answering the assistant message before it.
    ToolResult {
        /// The id of the call it answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result, or what went wrong.
        content: String,
        /// Whether the call failed.
        is_error: bool,
        /// Images the tool returned with its result (an MCP server's image content). A
        /// format that accepts images in tool results sends them as images; others say in
        /// the text that an image was returned.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<crate::content::Media>,
    },
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::System { text: text.into() }
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which its result must carry back.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them: a JSON object as text, when the model got it
    /// right.
    pub arguments: String,
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call of this tool.
    Tool(String),
}

impl std::str::FromStr for ToolChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "auto" => Self::Auto,
            "none" => Self::None,
            "required" => Self::Required,
            name if crate::spec::is_valid_tool_name(name) => Self::Tool(name.to_owned()),
            other => {
                return Err(format!(
                    "`{other}` is not a tool choice; use auto, none, required or a tool's name"
                ));
            }
        })
    }
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolDefinition>,
    /// Whether and which tool must be called; only sent when tools are offered.
    pub tool_choice: ToolChoice,
    /// Sampling temperature; the server's default when `None`.
    pub temperature: Option<f32>,
    /// The most tokens to generate.
    pub max_tokens: Option<u32>,
    /// Whether to stream the answer (text deltas reach the callback as they come).
    pub stream: bool,
    /// Fields added to the request body as they are, for what a server offers beyond its
    /// wire format (such as llama-server's `dry_multiplier`). A field the format itself
    /// sets (`model`, `messages`, ...) is not overridden: the format's value is sent.
    pub extra: serde_json::Map<String, Value>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It wants tools to run.
    ToolCalls,
    /// It hit the token limit: the answer (or a tool call) may be cut off.
    Length,
    /// Something else, as the server named it.
    Other(String),
}

/// Token counts, when the server reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request.
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
        }
    }
}

/// The model's whole answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The text.
    pub text: String,
    /// The tool calls, in order. An id the server left out or sent empty is empty here; the
    /// loop gives it one.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish: FinishReason,
    /// Token counts, when reported.
    pub usage: Option<Usage>,
}

/// A model behind some wire format.
pub trait Provider: Send + Sync {
    /// Which provider, model and server, for messages.
    fn describe(&self) -> String;

    /// Sends `request` and returns the whole answer. With `request.stream`, text deltas reach
    /// `on_text` as they arrive.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;

    /// What this model adds to the tool loop: selection hints and changes to its requests
    /// (see [`ModelRules`]). None by default.
    fn rules(&self) -> Arc<dyn ModelRules> {
        Arc::new(NoRules)
    }
}

impl fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What stands for an image in a tool result where the format cannot carry it.
pub(crate) fn image_note(image: &crate::content::Media) -> String {
    format!(
        "[the tool also returned an image ({}, {}), which cannot be shown here]",
        image.mime_type,
        crate::units::format_bytes(image.size() as u64)
    )
}

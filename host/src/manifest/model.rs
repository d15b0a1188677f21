//! The `[model]` section: which model to talk to, and how the loop runs; one struct, every
//! key of the section, unknown keys refused.
//!
//! ```toml
//! [model]
//! provider = "openai"                    # local (default), openai or anthropic
//! name = "gpt-4o-mini"
//! base_url = "https://api.openai.com/v1" # any OpenAI-compatible server
//! api_key_env = "OPENAI_API_KEY"         # the variable that holds the key
//! temperature = 0
//! max_rounds = 10
//! tool_limit = 5                         # offer the 5 tools that best fit each request
//! ```
//!
//! The model client takes its part as [`ModelConfig`](crate::llm::ModelConfig), the loop its
//! own as [`AgentConfig`](crate::agent::AgentConfig).

use std::collections::BTreeSet;
use std::fmt;
use std::num::NonZeroUsize;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::units::HumanDuration;

/// The `[model]` section as written. Everything is optional: with nothing set, the host uses
/// the local model with its own defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// local, openai or anthropic.
    pub provider: Option<ProviderKind>,
    /// The model's name, as the server knows it.
    pub name: Option<String>,
    /// The server's base URL (OpenAI: ending in `/v1`).
    pub base_url: Option<String>,
    /// The environment variable holding the API key (default `OPENAI_API_KEY` or
    /// `ANTHROPIC_API_KEY`).
    pub api_key_env: Option<String>,
    /// The API key itself. Prefer `api_key_env`: a manifest is easily shared.
    pub api_key: Option<String>,
    /// How long to wait for the model: for its whole answer, or for the first byte of a
    /// streamed one, and for each next piece of a streamed answer (default 300s, and 120s
    /// between pieces; this sets both).
    pub timeout: Option<HumanDuration>,
    /// Retries after 429, 5xx and failed connections (default 3).
    pub max_retries: Option<u32>,
    /// For the local model: which format to speak to it in (openai or anthropic).
    pub format: Option<LocalFormat>,
    /// Sampling temperature (the local model: 0 unless set).
    pub temperature: Option<f32>,
    /// The most tokens per model turn (the local model: 1024 unless set).
    pub max_tokens: Option<u32>,
    /// The most model turns per run (default 10).
    pub max_rounds: Option<usize>,
    /// A system prompt, put ahead of the conversation.
    pub system: Option<String>,
    /// Whether to stream answers (default true).
    pub stream: Option<bool>,
    /// Tools whose successful call ends the run, with its result as the answer.
    pub stop_at: Option<BTreeSet<String>>,
    /// The most calls of one model turn that run at once (default: all of them).
    pub max_parallel_calls: Option<NonZeroUsize>,
    /// The most calls one model turn may make (default 32); the calls past it are not run,
    /// and the model is told so.
    pub max_calls_per_turn: Option<NonZeroUsize>,
    /// How many tools a request offers: `"all"`, or the best `k` for the conversation (the
    /// local model: 3 unless set; other models: all).
    pub tool_limit: Option<ToolLimit>,
}

/// The kinds of provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// llama-server with Gemma 3 270M, started by the host.
    #[default]
    Local,
    /// An OpenAI-compatible Chat Completions server.
    OpenAi,
    /// An Anthropic Messages server.
    Anthropic,
}

impl FromStr for ProviderKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "local" => Ok(Self::Local),
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            other => Err(format!(
                "`{other}` is not a provider; use local, openai or anthropic"
            )),
        }
    }
}

/// The wire format the local server is spoken to in (it serves both).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalFormat {
    /// OpenAI Chat Completions.
    #[default]
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// How many of the tools a request offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolLimit {
    /// Every tool (that the run allows).
    #[default]
    All,
    /// The `k` that best fit the conversation, and only those that share a word with it.
    Top(usize),
}

impl fmt::Display for ToolLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Top(k) => write!(f, "{k}"),
        }
    }
}

impl FromStr for ToolLimit {
    type Err = String;

    /// `all`, or a number of tools (at least 1).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "all" => Ok(Self::All),
            number => match number.parse::<usize>() {
                Ok(k) if k > 0 => Ok(Self::Top(k)),
                _ => Err(format!(
                    "`{text}` is not a tool limit; write \"all\" or how many tools to offer, \
                     such as 3"
                )),
            },
        }
    }
}

impl Serialize for ToolLimit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::All => serializer.serialize_str("all"),
            Self::Top(k) => serializer.serialize_u64(*k as u64),
        }
    }
}

impl<'de> Deserialize<'de> for ToolLimit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(i64),
            Text(String),
        }
        let text = match Raw::deserialize(deserializer)? {
            Raw::Count(k) => k.to_string(),
            Raw::Text(text) => text,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_from_text_and_toml() {
        assert_eq!("all".parse::<ToolLimit>(), Ok(ToolLimit::All));
        assert_eq!("3".parse::<ToolLimit>(), Ok(ToolLimit::Top(3)));
        let error = "0".parse::<ToolLimit>().unwrap_err();
        assert!(error.contains("such as 3"), "{error}");
        #[derive(Deserialize)]
        struct T {
            tools: ToolLimit,
        }
        let read = |text: &str| toml::from_str::<T>(text).map(|t| t.tools);
        assert_eq!(read("tools = 4").ok(), Some(ToolLimit::Top(4)));
        assert_eq!(read("tools = \"all\"").ok(), Some(ToolLimit::All));
        let error = read("tools = \"some\"").unwrap_err().to_string();
        assert!(error.contains("`some` is not a tool limit"), "{error}");
        assert!(read("tools = -1").is_err());
    }
}

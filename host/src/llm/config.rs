//! Which model to talk to: the manifest's `[model]` section, or `--model provider:name`.
//!
//! ```toml
//! [model]
//! provider = "openai"                    # local (default), openai or anthropic
//! name = "gpt-4o-mini"
//! base_url = "https://api.openai.com/v1" # any OpenAI-compatible server
//! api_key_env = "OPENAI_API_KEY"         # the variable that holds the key
//! temperature = 0
//! max_rounds = 10
//! ```

use std::sync::Arc;

use serde::Deserialize;

use super::local::{LocalServer, LocalServerConfig};
use super::{AnthropicProvider, HttpOptions, OpenAiProvider, Provider, ProviderError};
use crate::sandbox::HumanDuration;

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

impl std::str::FromStr for ProviderKind {
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

/// The `[model]` section of a manifest. Everything is optional: with nothing set, the host
/// uses the local model.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
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
    /// Sampling temperature. The local model defaults to 0 (its server's default is 0.8).
    pub temperature: Option<f32>,
    /// The most tokens per model turn.
    pub max_tokens: Option<u32>,
    /// The most model turns per run (default 10).
    pub max_rounds: Option<usize>,
    /// A system prompt.
    pub system: Option<String>,
    /// Whether to stream answers (default true).
    pub stream: Option<bool>,
    /// How long one model request may take (default 300s).
    pub timeout: Option<HumanDuration>,
    /// Retries after 429, 5xx and failed connections (default 3).
    pub max_retries: Option<u32>,
    /// For the local model: which format to speak to it in (openai or anthropic).
    pub format: Option<LocalFormat>,
}

impl ModelConfig {
    /// Parses the `--model` form: `provider` or `provider:name` (`openai:gpt-4o-mini`,
    /// `anthropic:claude-sonnet-4-5`, `local`).
    pub fn parse_model_flag(text: &str) -> Result<(ProviderKind, Option<String>), String> {
        let (provider, name) = match text.split_once(':') {
            Some((provider, name)) if !name.is_empty() => (provider, Some(name.to_owned())),
            _ => (text.trim_end_matches(':'), None),
        };
        Ok((provider.parse()?, name))
    }

    /// `self` with every value `over` sets replacing its own.
    pub fn merged(mut self, over: ModelConfig) -> ModelConfig {
        macro_rules! take {
            ($($field:ident),*) => { $( if over.$field.is_some() { self.$field = over.$field; } )* };
        }
        take!(
            provider,
            name,
            base_url,
            api_key_env,
            api_key,
            temperature,
            max_tokens,
            max_rounds,
            system,
            stream,
            timeout,
            max_retries,
            format
        );
        self
    }

    /// The kind of provider (local unless set).
    pub fn kind(&self) -> ProviderKind {
        self.provider.unwrap_or_default()
    }

    /// The temperature to send: as set, else 0 for the local model (it calls tools reliably
    /// only at 0), else the server's default.
    pub fn effective_temperature(&self) -> Option<f32> {
        self.temperature
            .or((self.kind() == ProviderKind::Local).then_some(0.0))
    }

    /// The token limit to send: as set, else 1024 for the local model (llama-server would
    /// otherwise generate to the end of its context when the model rambles), else the
    /// server's default.
    pub fn effective_max_tokens(&self) -> Option<u32> {
        self.max_tokens
            .or((self.kind() == ProviderKind::Local).then_some(1024))
    }

    fn http_options(&self) -> HttpOptions {
        let mut options = HttpOptions::default();
        if let Some(timeout) = self.timeout {
            options.timeout = timeout.0;
            options.idle_timeout = options.idle_timeout.min(timeout.0);
        }
        if let Some(retries) = self.max_retries {
            options.max_retries = retries;
        }
        options
    }

    /// The API key: `api_key`, else the variable `api_key_env` names, else the provider's
    /// usual variable. `required` says whether its absence is an error (it is for the
    /// providers' own servers; local servers need none).
    fn api_key(
        &self,
        provider: &'static str,
        default_env: &str,
        required: bool,
    ) -> Result<Option<String>, ProviderError> {
        if let Some(key) = &self.api_key {
            return Ok(Some(key.clone()));
        }
        let variable = self
            .api_key_env
            .clone()
            .unwrap_or_else(|| default_env.to_owned());
        match std::env::var(&variable) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key)),
            _ if required || self.api_key_env.is_some() => {
                Err(ProviderError::MissingApiKey { provider, variable })
            }
            _ => Ok(None),
        }
    }

    /// Connects to the model: builds the provider, and starts the local server first when
    /// the provider is `local`.
    pub async fn connect(&self) -> Result<ConnectedModel, ProviderError> {
        let options = self.http_options();
        match self.kind() {
            ProviderKind::OpenAi => {
                let base = self
                    .base_url
                    .as_deref()
                    .unwrap_or("https://api.openai.com/v1");
                let official = base.contains("api.openai.com");
                let key = self.api_key("OpenAI", "OPENAI_API_KEY", official)?;
                let name = self.name.as_deref().unwrap_or("gpt-4o-mini");
                let provider = OpenAiProvider::new(base, name, key, options)?;
                Ok(ConnectedModel::remote(Arc::new(provider)))
            }
            ProviderKind::Anthropic => {
                let base = self
                    .base_url
                    .as_deref()
                    .unwrap_or("https://api.anthropic.com");
                let official = base.contains("api.anthropic.com");
                let key = self.api_key("Anthropic", "ANTHROPIC_API_KEY", official)?;
                let name = self.name.as_deref().unwrap_or("claude-sonnet-4-5");
                let provider = AnthropicProvider::new(base, name, key, options)?;
                Ok(ConnectedModel::remote(Arc::new(provider)))
            }
            ProviderKind::Local => {
                let server = LocalServer::start(&LocalServerConfig::default()).await?;
                let name = self.name.as_deref().unwrap_or(super::local::MODEL_NAME);
                let provider: Arc<dyn Provider> = match self.format.unwrap_or_default() {
                    LocalFormat::OpenAi => Arc::new(OpenAiProvider::new(
                        &format!("{}/v1", server.base_url()),
                        name,
                        None,
                        options,
                    )?),
                    LocalFormat::Anthropic => Arc::new(AnthropicProvider::new(
                        server.base_url(),
                        name,
                        None,
                        options,
                    )?),
                };
                Ok(ConnectedModel {
                    provider,
                    server: Some(server),
                })
            }
        }
    }
}

/// A provider ready to use, with the local server it talks to when there is one (the server
/// stops when this is dropped).
#[derive(Debug)]
pub struct ConnectedModel {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The local server, if the provider is local.
    pub server: Option<LocalServer>,
}

impl ConnectedModel {
    fn remote(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            server: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_flag_names_a_provider_and_maybe_a_model() {
        assert_eq!(
            ModelConfig::parse_model_flag("openai:gpt-4o-mini"),
            Ok((ProviderKind::OpenAi, Some("gpt-4o-mini".into())))
        );
        assert_eq!(
            ModelConfig::parse_model_flag("local"),
            Ok((ProviderKind::Local, None))
        );
        assert!(ModelConfig::parse_model_flag("gemini:pro").is_err());
    }

    #[tokio::test]
    async fn a_missing_key_names_the_variable() {
        let config = ModelConfig {
            provider: Some(ProviderKind::Anthropic),
            api_key_env: Some("TOOLHOST_TEST_SURELY_UNSET_KEY".into()),
            ..ModelConfig::default()
        };
        let error = config.connect().await.unwrap_err();
        assert!(
            error.to_string().contains("TOOLHOST_TEST_SURELY_UNSET_KEY"),
            "{error}"
        );
    }
}

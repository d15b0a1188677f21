//! Which model to talk to, and how to reach it: the connection keys of the manifest's
//! `[model]` section ([`ModelSection`]), or `--model provider:name`.
//!
//! How the loop runs (temperature, max_rounds, system prompt, ...) is
//! [`AgentConfig`](crate::agent::AgentConfig)'s, though the manifest writes it in `[model]` too.

use std::sync::Arc;

#[cfg(feature = "local-model")]
use super::local::{LocalModel, LocalServer, LocalServerConfig};
use super::{AnthropicProvider, ApiKey, HttpOptions, OpenAiProvider, Provider, ProviderError};
use crate::manifest::model::{LocalFormat, ModelSection, ProviderKind};
use crate::units::HumanDuration;

/// Which model, and how to reach it: the connection keys of a manifest's `[model]` section.
/// Everything is optional: with nothing set, the host uses the local model.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// How long to wait for the model: for one whole answer, streamed or not, and for each
    /// next piece of a streamed answer (default 300s, and 120s between pieces; this sets
    /// both). A retry's wait never exceeds it: a server asking (`Retry-After`) for longer is
    /// an error.
    pub timeout: Option<HumanDuration>,
    /// Retries after 429, 5xx and failed connections (default 3).
    pub max_retries: Option<u32>,
    /// For the local model: which format to speak to it in (openai or anthropic).
    pub format: Option<LocalFormat>,
}

impl From<&ModelSection> for ModelConfig {
    fn from(section: &ModelSection) -> Self {
        Self {
            provider: section.provider,
            name: section.name.clone(),
            base_url: section.base_url.clone(),
            api_key_env: section.api_key_env.clone(),
            api_key: section.api_key.clone(),
            timeout: section.timeout,
            max_retries: section.max_retries,
            format: section.format,
        }
    }
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
            timeout,
            max_retries,
            format
        );
        self
    }

    /// `self` (a manifest's) overridden by `over` (a command line's): every value `over` sets
    /// wins, and when `over` names another provider than `self`, `self`'s connection (URL,
    /// key, model name, local format) does not apply: another provider's would be wrong. Its
    /// `timeout` and `max_retries` still do.
    pub fn overridden_by(self, over: ModelConfig) -> ModelConfig {
        let switched = over.provider.is_some() && over.kind() != self.kind();
        let base = if switched {
            ModelConfig {
                timeout: self.timeout,
                max_retries: self.max_retries,
                ..ModelConfig::default()
            }
        } else {
            self
        };
        base.merged(over)
    }

    /// The kind of provider (local unless set).
    pub fn kind(&self) -> ProviderKind {
        self.provider.unwrap_or_default()
    }

    fn http_options(&self) -> HttpOptions {
        let mut options = HttpOptions::default();
        // One setting for both waits, so that raising it (as a timeout error says to) helps
        // whichever one ran out.
        if let Some(timeout) = self.timeout {
            options.timeout = timeout.0;
            options.idle_timeout = timeout.0;
        }
        if let Some(retries) = self.max_retries {
            options.max_retries = retries;
        }
        options
    }

    /// The API key: `api_key`, else the variable `api_key_env` names, else the provider's
    /// usual variable; with the variable it came from, for a server that refuses it.
    /// `required` says whether its absence is an error (it is for the providers' own servers;
    /// local servers need none).
    fn api_key(
        &self,
        provider: &'static str,
        default_env: &str,
        required: bool,
    ) -> Result<Option<ApiKey>, ProviderError> {
        if let Some(key) = &self.api_key {
            return Ok(Some(ApiKey::new(key.clone())));
        }
        let variable = self
            .api_key_env
            .clone()
            .unwrap_or_else(|| default_env.to_owned());
        match std::env::var(&variable) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(ApiKey::from_variable(variable, key))),
            _ if required || self.api_key_env.is_some() => {
                Err(ProviderError::MissingApiKey { provider, variable })
            }
            _ => Ok(None),
        }
    }

    /// Connects to the model: builds the provider, and starts the local server first when
    /// the provider is `local` (the returned provider owns it: the server stops when the last
    /// clone of the provider is dropped).
    pub async fn connect(&self) -> Result<Arc<dyn Provider>, ProviderError> {
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
                Ok(Arc::new(OpenAiProvider::new(base, name, key, options)?))
            }
            ProviderKind::Anthropic => {
                let base = self
                    .base_url
                    .as_deref()
                    .unwrap_or("https://api.anthropic.com");
                let official = base.contains("api.anthropic.com");
                let key = self.api_key("Anthropic", "ANTHROPIC_API_KEY", official)?;
                let name = self.name.as_deref().unwrap_or("claude-sonnet-4-5");
                Ok(Arc::new(AnthropicProvider::new(base, name, key, options)?))
            }
            ProviderKind::Local => self.connect_local(options).await,
        }
    }

    /// Starts the local model's server and connects to it.
    #[cfg(feature = "local-model")]
    async fn connect_local(
        &self,
        options: HttpOptions,
    ) -> Result<Arc<dyn Provider>, ProviderError> {
        let server = LocalServer::start(&LocalServerConfig::default()).await?;
        let name = self.name.as_deref().unwrap_or(super::local::MODEL_NAME);
        let format = self.format.unwrap_or_default();
        let provider: Arc<dyn Provider> = match format {
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
        Ok(Arc::new(LocalModel::new(server, provider, format)))
    }

    /// This build has no local model (the `local-model` feature): the local provider, which
    /// is also the default one, is an error that says what to do.
    #[cfg(not(feature = "local-model"))]
    async fn connect_local(&self, _: HttpOptions) -> Result<Arc<dyn Provider>, ProviderError> {
        Err(ProviderError::Local {
            message: "this build of toolhost leaves out the local model (its `local-model` \
                      feature); build toolhost with it, or name another provider: \
                      [model] provider = \"openai\" or \"anthropic\" in the manifest"
                .to_owned(),
        })
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

    #[test]
    fn a_command_line_provider_replaces_the_manifests_connection() {
        let manifest = ModelConfig {
            provider: Some(ProviderKind::OpenAi),
            name: Some("qwen3".into()),
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            ..ModelConfig::default()
        };
        let same = manifest.clone().overridden_by(ModelConfig {
            name: Some("llama3".into()),
            ..ModelConfig::default()
        });
        assert_eq!(same.name.as_deref(), Some("llama3"));
        assert_eq!(
            same.base_url, manifest.base_url,
            "the same provider keeps its URL"
        );

        let switched = manifest.clone().overridden_by(ModelConfig {
            provider: Some(ProviderKind::Anthropic),
            ..ModelConfig::default()
        });
        assert_eq!(switched.kind(), ProviderKind::Anthropic);
        assert_eq!(
            switched.base_url, None,
            "another provider's URL does not apply"
        );
        assert_eq!(switched.name, None);

        let local = manifest.overridden_by(ModelConfig {
            provider: Some(ProviderKind::Local),
            ..ModelConfig::default()
        });
        assert_eq!(
            local,
            ModelConfig {
                provider: Some(ProviderKind::Local),
                ..ModelConfig::default()
            }
        );
    }

    #[test]
    fn a_command_line_provider_keeps_the_manifests_timeout_and_retries() {
        let manifest = ModelConfig {
            provider: Some(ProviderKind::Local),
            timeout: Some(HumanDuration(std::time::Duration::from_secs(5))),
            max_retries: Some(0),
            format: Some(LocalFormat::Anthropic),
            ..ModelConfig::default()
        };
        let switched = manifest.overridden_by(ModelConfig {
            provider: Some(ProviderKind::OpenAi),
            name: Some("scripted".into()),
            ..ModelConfig::default()
        });
        let options = switched.http_options();
        assert_eq!(options.timeout.as_secs(), 5);
        assert_eq!(options.max_retries, 0);
        assert_eq!(
            switched.format, None,
            "the local model's format does not apply"
        );
    }

    #[test]
    fn the_timeout_setting_raises_both_waits() {
        let config = ModelConfig {
            timeout: Some(HumanDuration(std::time::Duration::from_secs(600))),
            ..ModelConfig::default()
        };
        let options = config.http_options();
        assert_eq!(options.timeout.as_secs(), 600);
        assert_eq!(
            options.idle_timeout.as_secs(),
            600,
            "a stalled stream names it too"
        );
    }

    #[cfg(not(feature = "local-model"))]
    #[tokio::test]
    async fn without_the_local_model_the_default_provider_names_its_feature() {
        let error = ModelConfig::default()
            .connect()
            .await
            .expect_err("no local model");
        let text = error.to_string();
        assert!(text.contains("its `local-model` feature"), "{text}");
        assert!(text.contains("provider = \"openai\""), "{text}");
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

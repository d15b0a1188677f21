//! How the loop runs, as a manifest or a command line says it: every setting optional, over
//! the defaults, and resolved into [`AgentOptions`] for the model at hand.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use super::AgentOptions;
use crate::manifest::model::{ModelSection, ProviderKind, ToolLimit};

/// The loop's settings as written in a manifest's `[model]` section or given on a command
/// line. Each falls back to the level below: a command line's over a manifest's over the
/// defaults of [`AgentOptions`] (and the local model's own defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentConfig {
    /// Sampling temperature. The local model defaults to 0 (its server's default is 0.8, and
    /// it calls tools reliably only at 0); other models to their server's default.
    pub temperature: Option<f32>,
    /// The most tokens per model turn. The local model defaults to 1024 (its server would
    /// otherwise generate to the end of its context when the model rambles).
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
    /// The most calls one model turn may make (default 32); the model is told the calls past
    /// it did not run.
    pub max_calls_per_turn: Option<NonZeroUsize>,
    /// How many tools a request offers: `"all"`, or the best `k` for the conversation. The
    /// local model defaults to 3 (it picks the right tool among a few, not among twenty);
    /// other models to all.
    pub tool_limit: Option<ToolLimit>,
}

impl From<&ModelSection> for AgentConfig {
    fn from(section: &ModelSection) -> Self {
        Self {
            temperature: section.temperature,
            max_tokens: section.max_tokens,
            max_rounds: section.max_rounds,
            system: section.system.clone(),
            stream: section.stream,
            stop_at: section.stop_at.clone(),
            max_parallel_calls: section.max_parallel_calls,
            max_calls_per_turn: section.max_calls_per_turn,
            tool_limit: section.tool_limit,
        }
    }
}

/// The local model's temperature when none is set.
const LOCAL_TEMPERATURE: f32 = 0.0;
/// The local model's token limit per turn when none is set.
const LOCAL_MAX_TOKENS: u32 = 1024;
/// How many tools a request offers the local model when nothing says otherwise.
pub const LOCAL_TOOL_LIMIT: ToolLimit = ToolLimit::Top(3);

impl AgentConfig {
    /// `self` with every setting `over` sets replacing its own.
    pub fn merged(mut self, over: AgentConfig) -> AgentConfig {
        macro_rules! take {
            ($($field:ident),*) => { $( if over.$field.is_some() { self.$field = over.$field; } )* };
        }
        take!(
            temperature,
            max_tokens,
            max_rounds,
            system,
            stream,
            stop_at,
            max_parallel_calls,
            max_calls_per_turn,
            tool_limit
        );
        self
    }

    /// The options of a loop against a model of kind `provider`.
    pub fn options(&self, provider: ProviderKind) -> AgentOptions {
        let local = provider == ProviderKind::Local;
        let defaults = AgentOptions::default();
        AgentOptions {
            max_rounds: self.max_rounds.unwrap_or(defaults.max_rounds),
            system: self.system.clone(),
            temperature: self.temperature.or(local.then_some(LOCAL_TEMPERATURE)),
            max_tokens: self.max_tokens.or(local.then_some(LOCAL_MAX_TOKENS)),
            stream: self.stream.unwrap_or(defaults.stream),
            stop_at: self.stop_at.clone().unwrap_or_default(),
            max_parallel_calls: self.max_parallel_calls,
            max_calls_per_turn: self
                .max_calls_per_turn
                .map_or(defaults.max_calls_per_turn, NonZeroUsize::get),
            tool_limit: self.tool_limit.unwrap_or(if local {
                LOCAL_TOOL_LIMIT
            } else {
                defaults.tool_limit
            }),
            ..defaults
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_model_gets_its_own_defaults_unless_set() {
        let local = AgentConfig::default().options(ProviderKind::Local);
        assert_eq!(local.temperature, Some(0.0));
        assert_eq!(local.max_tokens, Some(1024));
        assert_eq!(local.tool_limit, LOCAL_TOOL_LIMIT);
        let remote = AgentConfig::default().options(ProviderKind::OpenAi);
        assert_eq!(remote.temperature, None, "the server's default");
        assert_eq!(remote.max_tokens, None);
        assert_eq!(remote.tool_limit, ToolLimit::All);
        let set = AgentConfig {
            temperature: Some(0.7),
            max_tokens: Some(50),
            tool_limit: Some(ToolLimit::All),
            ..AgentConfig::default()
        }
        .options(ProviderKind::Local);
        assert_eq!((set.temperature, set.max_tokens), (Some(0.7), Some(50)));
        assert_eq!(set.tool_limit, ToolLimit::All);
    }

    #[test]
    fn a_command_line_overrides_only_what_it_sets() {
        let manifest = AgentConfig {
            max_rounds: Some(4),
            system: Some("Be brief.".into()),
            stream: Some(false),
            ..AgentConfig::default()
        };
        let flags = AgentConfig {
            max_rounds: Some(2),
            ..AgentConfig::default()
        };
        let options = manifest.merged(flags).options(ProviderKind::OpenAi);
        assert_eq!(options.max_rounds, 2);
        assert_eq!(options.system.as_deref(), Some("Be brief."));
        assert!(!options.stream);
    }
}

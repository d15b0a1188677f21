//! Why a program (code mode) gave no result.

use super::call::CallError;

/// Why a program a model wrote gave no result. Each ends that program only: the host, the
/// run and the tools go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramError {
    /// The program does not compile.
    #[error("the program does not compile: {0}")]
    Syntax(String),

    /// The program threw an error it did not catch.
    #[error("the program threw an error: {0}")]
    Thrown(String),

    /// The program started more tool calls than it may.
    #[error(
        "the program started more than {limit} tool calls, its limit; raise `max_calls` in the \
         manifest's [code_mode] if it needs more"
    )]
    TooManyCalls {
        /// The limit.
        limit: u32,
    },

    /// The program printed more than it may.
    #[error(
        "the program printed more than {}, its limit; raise `max_output` in the manifest's \
         [code_mode] if it needs more",
        crate::units::format_bytes(*limit as u64)
    )]
    OutputTooLarge {
        /// The limit in bytes.
        limit: usize,
    },

    /// The program waited for one of its calls that waits for a person's decision: it was
    /// ended there, and runs again once the decision is made (the agent pauses its run).
    #[error(
        "the program waited for a call that needs a person's approval; it runs again once \
         the call is decided"
    )]
    Paused,

    /// The runner hit a limit of its sandbox (CPU time, wall clock, memory, result size),
    /// or crashed.
    #[error(transparent)]
    Runner(CallError),
}

impl ProgramError {
    /// What the model is told: short, with no host paths or settings.
    pub fn model_message(&self) -> String {
        match self {
            Self::Syntax(message) => format!("The program does not compile: {message}"),
            Self::Thrown(message) => format!("The program threw an error: {message}"),
            Self::TooManyCalls { limit } => format!(
                "The program was stopped: it started more than {limit} tool calls. Make fewer \
                 calls, or stop retrying a call that fails."
            ),
            Self::OutputTooLarge { limit } => format!(
                "The program was stopped: it printed more than {}. Print less, or return \
                 only what matters.",
                crate::units::format_bytes(*limit as u64)
            ),
            Self::Paused => "The program was paused: one of its tool calls waits for a \
                             person's approval."
                .to_owned(),
            Self::Runner(error) => error.model_message(),
        }
    }
}

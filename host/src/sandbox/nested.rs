//! How a program's tool call (code mode) ended, as the program is told: plain data, kept in a
//! paused run's state as well (the journal a program is answered from when it runs again), so
//! it exists in builds without the `code-mode` feature too.

use serde::{Deserialize, Serialize};

/// What a program's tool call returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NestedResult {
    /// The result as the model would read it.
    pub text: String,
    /// The structured content, as JSON text, when the tool returned some.
    pub structured: Option<String>,
}

/// Why a program's tool call gave no result, as the program sees it (`wit/code/runner.wit`'s
/// `error-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NestedErrorKind {
    /// The run offers no tool of that name.
    NotOffered,
    /// The arguments do not fit the tool's schema, or the tool refused them.
    InvalidArguments,
    /// The call needs approval and did not get it.
    Denied,
    /// The tool ran and failed, or hit one of its limits.
    Failed,
    /// The call waits for a person's decision, which whoever answers the calls will ask for
    /// (the agent pauses its run): the program is ended where it waits for the call, and
    /// runs again once the decision is made. A program never sees this kind.
    Paused,
}

impl NestedErrorKind {
    /// The kind as one word, as the report and the log write it (`not_offered`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotOffered => "not_offered",
            Self::InvalidArguments => "invalid_arguments",
            Self::Denied => "denied",
            Self::Failed => "failed",
            Self::Paused => "paused",
        }
    }
}

/// A program's tool call that gave no result: why, and what the program is told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NestedError {
    /// What kind of failure.
    pub kind: NestedErrorKind,
    /// What happened, in the words the model would read.
    pub message: String,
}

/// How a program's tool call ended.
pub type NestedOutcome = Result<NestedResult, NestedError>;

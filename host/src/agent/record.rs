//! What a run records of its tool calls: each call that ran (or was answered without
//! running) as a [`ToolExecution`], each call that could not run as an [`InvalidCall`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::approval::{Approval, rejection_message};
use crate::content::{ContentPart, Media};
use crate::error::ErrorKind;
use crate::llm::ToolCall;
use crate::sandbox::ReportCounts;

/// What a tool whose function returned nothing reports to the model.
pub(crate) const SUCCESS: &str = "Success";

/// The record of one tool call of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecution {
    /// The round (model turn, from 1) that asked for it.
    pub round: usize,
    /// The call's id.
    pub call_id: String,
    /// The tool's name, as the model gave it.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What the model was sent: the result, or the error as the model reads it.
    pub output: String,
    /// The parts of the tool's result as it gave them (images, audio, resources, text), when
    /// it gave more than one text; `output` is what the model read of them, and its images
    /// went to the model with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentPart>,
    /// How many progress reports and log lines the tool made while it ran.
    #[serde(default, skip_serializing_if = "ReportCounts::is_none")]
    pub reports: ReportCounts,
    /// How long it took.
    #[serde(
        rename = "duration_ms",
        serialize_with = "crate::units::serialize_millis",
        deserialize_with = "crate::units::deserialize_millis"
    )]
    pub duration: Duration,
    /// Whether it waited for approval, and what was decided.
    #[serde(default, skip_serializing_if = "Approval::is_not_required")]
    pub approval: Approval,
    /// When the call was identical to one that had succeeded earlier in the run: that call's
    /// id. It was not run again; the model got the earlier result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<String>,
    /// For a program's call (code mode): the tool calls the program made, in the order it
    /// started them, each with the program's call as its parent (`<call_id>.<n>` ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<ToolExecution>,
}

impl ToolExecution {
    /// The images among the result's parts, which go to the model with its text.
    pub fn images(&self) -> Vec<Media> {
        self.content
            .iter()
            .filter_map(|part| match part {
                ContentPart::Image(image) => Some(image.clone()),
                _ => None,
            })
            .collect()
    }

    /// Whether the call produced a result.
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Outcome::Ok)
    }

    /// The kind of error, when it failed.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match &self.outcome {
            Outcome::Error { kind, .. } => Some(*kind),
            Outcome::Ok | Outcome::Rejected { .. } => None,
        }
    }

    /// The operator's error message, when it failed.
    pub fn error_message(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Error { message, .. } => Some(message),
            Outcome::Ok | Outcome::Rejected { .. } => None,
        }
    }

    /// The record of `call` answered, without running it, with the result `output` of the
    /// earlier call `earlier_id`.
    pub(crate) fn repeat(call: &ToolCall, earlier_id: &str, output: &str, round: usize) -> Self {
        Self {
            repeat_of: Some(earlier_id.to_owned()),
            ..Self::new(call, round, Outcome::Ok, output.to_owned())
        }
    }

    /// The record of `call`, rejected for `reason`.
    pub(crate) fn rejected(call: &ToolCall, reason: &str, round: usize) -> Self {
        Self {
            approval: Approval::Rejected,
            ..Self::new(
                call,
                round,
                Outcome::Rejected {
                    reason: reason.to_owned(),
                },
                rejection_message(reason),
            )
        }
    }

    pub(super) fn new(call: &ToolCall, round: usize, outcome: Outcome, output: String) -> Self {
        Self {
            round,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            outcome,
            output,
            content: Vec::new(),
            reports: ReportCounts::default(),
            duration: Duration::ZERO,
            approval: Approval::NotRequired,
            repeat_of: None,
            nested: Vec::new(),
        }
    }

    /// The result as the model gets it: the output, marked as an error unless it succeeded.
    pub(crate) fn result(&self) -> Result<String, String> {
        if self.is_ok() {
            Ok(self.output.clone())
        } else {
            Err(self.output.clone())
        }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// It produced a result.
    Ok,
    /// It did not.
    Error {
        /// The kind of error.
        kind: ErrorKind,
        /// The operator's message (with the grant or setting to change).
        message: String,
    },
    /// It waited for approval and was rejected: it did not run.
    Rejected {
        /// The reason given, sent to the model.
        reason: String,
    },
}

impl Outcome {
    /// Its kind as one word, for logs: `ok`, `rejected`, or the error's kind.
    pub fn kind_str(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error { kind, .. } => kind.as_str(),
            Self::Rejected { .. } => "rejected",
        }
    }
}

/// A tool call the model got wrong in a way that kept it from running at all. It is
/// recorded apart from the calls that ran (the run result's `invalid_calls`); the model is
/// sent what was wrong, except for a call cut off by the token limit, which is never sent
/// back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidCall {
    /// The round (model turn, from 1) that made it.
    pub round: usize,
    /// The call's id.
    pub call_id: String,
    /// The tool's name, as the model gave it.
    pub name: String,
    /// The arguments, exactly as the model wrote them.
    pub arguments: String,
    /// What was wrong.
    pub problem: InvalidProblem,
    /// What the model was told (for a cut-off call: why it was dropped).
    pub message: String,
}

/// What was wrong with an [`InvalidCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidProblem {
    /// The arguments are not a JSON object.
    ArgumentsNotJson,
    /// The tool was not offered (it does not exist, or this request did not offer it).
    NotOffered,
    /// The model hit its token limit in the middle of the call.
    CutOff,
    /// The turn asked for more calls than
    /// [`AgentOptions::max_calls_per_turn`](super::AgentOptions::max_calls_per_turn): this
    /// one, past the limit, did not run.
    TooManyCalls,
}

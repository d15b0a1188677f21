//! Calls that ask for input before they can finish (tool contract 0.2's `input-required`):
//! the run pauses on them as it does on an approval, whoever drives the run answers (a form
//! on the terminal at `host run`, the embedding application from the run's JSON state, even
//! in another process), and the call runs again, in a fresh instance, with the answers and
//! the state the tool gave. The state is all the tool keeps between the rounds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::{InputRequest, InputRequired};
use crate::error::ErrorKind;
use crate::llm::ToolCall;

use super::AgentError;
use super::record::{Outcome, ToolExecution};

/// How many times one call may ask before it is given up on (as `host mcp` allows).
pub const MAX_ASKS: usize = 8;

/// A call of a paused run that waits for input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskingCall {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments, as the model wrote them.
    pub arguments: String,
    /// What the tool asks for, by the keys it gave its requests: `elicitation/create` (a
    /// question for the user, with the JSON Schema of the answer), `sampling/createMessage`
    /// (a question for a model), `roots/list` (the directories the user works in).
    pub requests: BTreeMap<String, InputRequest>,
    /// The tool's state, given back to it with the answers.
    state: Option<String>,
    /// The MCP server's task the call waits in, which the answers go to (kept with the
    /// paused run, so that resuming follows the task instead of calling the tool again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<String>,
    /// How many times the call has asked so far.
    asks: usize,
    /// The answer, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<InputAnswer>,
}

/// What a paused call that asks for input is told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputAnswer {
    /// The answers, by the keys of the requests, each a JSON object as MCP has the result:
    /// `{"action": "accept", "content": {...}}` (or `"decline"`, `"cancel"`) for an
    /// elicitation, a message for a sampling, `{"roots": [...]}` for roots.
    Given(BTreeMap<String, Value>),
    /// Nobody can answer: the call ends with an error that gives this reason.
    Refused(String),
}

/// What a call that asked before takes into its next round.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answers {
    pub responses: BTreeMap<String, Value>,
    pub state: Option<String>,
    /// The MCP server's task the call waits in.
    pub task: Option<String>,
    /// How many times it asked before.
    pub asks: usize,
}

impl AskingCall {
    /// The call `call` that asked `asked`, after `asks` earlier rounds.
    pub(crate) fn new(call: &ToolCall, asked: InputRequired, asks: usize) -> Self {
        Self {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            requests: asked.requests,
            state: asked.state,
            task: asked.task,
            asks: asks + 1,
            answer: None,
        }
    }

    /// Whether it asked more often than a call may.
    pub(crate) fn asked_too_often(&self) -> bool {
        self.asks > MAX_ASKS
    }

    /// Records `answer`, once it is one the call can take: answers only to what was asked,
    /// each a JSON object.
    pub(crate) fn answer(&mut self, answer: InputAnswer) -> Result<(), AgentError> {
        if let InputAnswer::Given(answers) = &answer {
            let problem = answers.iter().find_map(|(key, value)| {
                if !self.requests.contains_key(key) {
                    Some(format!(
                        "`{key}` is not one of its requests ({})",
                        self.requests.keys().cloned().collect::<Vec<_>>().join(", ")
                    ))
                } else if !value.is_object() {
                    Some(format!(
                        "the answer to `{key}` must be a JSON object (an MCP result), not {}",
                        crate::arguments::kind(value)
                    ))
                } else {
                    None
                }
            });
            if let Some(problem) = problem {
                return Err(AgentError::InvalidInputAnswer {
                    id: self.call_id.clone(),
                    problem,
                });
            }
        }
        self.answer = Some(answer);
        Ok(())
    }

    /// What the call takes into its next round, or, when nobody could answer, the error it
    /// ends with.
    pub(crate) fn next_round(
        &self,
        call: &ToolCall,
        round: usize,
    ) -> Result<Answers, Box<ToolExecution>> {
        match &self.answer {
            Some(InputAnswer::Given(responses)) => Ok(Answers {
                responses: responses.clone(),
                state: self.state.clone(),
                task: self.task.clone(),
                asks: self.asks,
            }),
            Some(InputAnswer::Refused(reason)) => Err(Box::new(self.ended(call, round, reason))),
            None => Err(Box::new(self.ended(call, round, "no answer was given"))),
        }
    }

    /// The call ended without the input it asked for, because of `why`.
    pub(crate) fn ended(&self, call: &ToolCall, round: usize, why: &str) -> ToolExecution {
        let methods: Vec<&str> = self.requests.values().map(|r| r.method.as_str()).collect();
        ToolExecution::new(
            call,
            round,
            Outcome::Error {
                kind: ErrorKind::InputRequired,
                message: format!(
                    "`{}` asked for input ({}) and got none: {why}",
                    self.tool,
                    methods.join(", ")
                ),
            },
            format!(
                "The tool needed input from the user, which was not given ({why}); tell the user."
            ),
        )
    }
}

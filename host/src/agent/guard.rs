//! The loop's guards against a model that repeats itself: a call identical to one that already
//! succeeded in the run is answered with the earlier result instead of running again (and the
//! next request offers no tools, so that the model answers), and the same call failing twice
//! ends the run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::record::{Outcome, ToolExecution};
use crate::arguments::Arguments;

/// How many times the same call may fail before the run ends.
pub(crate) const MAX_SAME_FAILURES: usize = 2;

/// What the guards remember of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Guard {
    /// The calls that succeeded, by [`Arguments::identity`]: the first call's id and what it returned.
    succeeded: BTreeMap<String, Earlier>,
    /// How many times each call failed, by [`Arguments::identity`].
    failures: BTreeMap<String, usize>,
    /// Whether the next request offers no tools (a call was repeated: time to answer).
    answer_next: bool,
}

/// A call that succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Earlier {
    /// Its id.
    pub call_id: String,
    /// What the model was sent.
    pub output: String,
}

/// A call that failed as often as the guard allows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RepeatedFailure {
    /// The tool.
    pub tool: String,
    /// The arguments, as the model wrote them the last time.
    pub arguments: String,
    /// The last error (the operator's message).
    pub error: String,
    /// How many times it failed.
    pub count: usize,
}

impl Guard {
    /// The earlier successful call identical to this one, if there is one.
    pub fn earlier(&self, name: &str, arguments: &Arguments) -> Option<&Earlier> {
        self.succeeded.get(&arguments.identity(name))
    }

    /// Whether the next request should offer no tools; asking resets it.
    pub fn take_answer_next(&mut self) -> bool {
        std::mem::take(&mut self.answer_next)
    }

    /// Notes that a call was answered with an earlier result.
    pub fn repeated(&mut self) {
        self.answer_next = true;
    }

    /// Remembers how the calls of a turn that ran went (each with its arguments); returns
    /// the first call that has now failed [`MAX_SAME_FAILURES`] times.
    pub fn record<'a>(
        &mut self,
        executions: impl IntoIterator<Item = (&'a ToolExecution, &'a Arguments)>,
    ) -> Option<RepeatedFailure> {
        let mut repeated = None;
        for (execution, arguments) in executions {
            if execution.repeat_of.is_some() {
                continue;
            }
            let key = arguments.identity(&execution.name);
            match &execution.outcome {
                Outcome::Ok => {
                    self.succeeded.entry(key).or_insert_with(|| Earlier {
                        call_id: execution.call_id.clone(),
                        output: execution.output.clone(),
                    });
                }
                Outcome::Error { message, .. } => {
                    let failed = self.failed(key, &execution.name, &execution.arguments, message);
                    repeated = repeated.or(failed);
                }
                // Not the tool's doing: a person said no.
                Outcome::Rejected { .. } => {}
            }
        }
        repeated
    }

    /// Counts a failure of a call that could not run (its tool was not offered, or its
    /// arguments are not a JSON object, when the call is known by their text).
    pub fn invalid(&mut self, name: &str, arguments: &str, error: &str) -> Option<RepeatedFailure> {
        // A call of a tool that was not offered may have good arguments: know it by them.
        let key = Arguments::parse(arguments).map_or_else(
            |_| format!("{name}\0{arguments}"),
            |arguments| arguments.identity(name),
        );
        self.failed(key, name, arguments, error)
    }

    /// Counts a failure of the call known as `key`; returns it when the same call has now
    /// failed [`MAX_SAME_FAILURES`] times.
    fn failed(
        &mut self,
        key: String,
        name: &str,
        arguments: &str,
        error: &str,
    ) -> Option<RepeatedFailure> {
        let count = self.failures.entry(key).or_default();
        *count += 1;
        (*count >= MAX_SAME_FAILURES).then(|| RepeatedFailure {
            tool: name.to_owned(),
            arguments: arguments.to_owned(),
            error: error.to_owned(),
            count: *count,
        })
    }
}

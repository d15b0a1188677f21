//! A program (code mode) whose call waits for a person's decision: the run pauses, and the
//! program runs again from the start once the call is decided.
//!
//! Why again from the start: a paused run serializes (its [`RunState`](super::RunState) is
//! JSON, and may be resumed by another process), and a program half way through cannot: its
//! state is a WebAssembly instance's memory and stack. So the instance is dropped at the
//! pause, and what is kept is the program's [`Journal`]: every call it made that finished,
//! with its answer. When the program runs again, each call that matches the journal (same
//! number, same tool, same arguments) is answered from it without running, so no write
//! happens twice; the decided call then runs (or is denied); and the program goes on from
//! there for real.
//!
//! The replay is faithful because a program is deterministic given the answers to its calls:
//! its runner has no clock that moves, no randomness of its own and nothing else to read
//! (docs/code-mode.md, "Nothing but the tools"), and it starts its calls in the order its
//! code does. A program that still goes another way (it raced calls against each other,
//! say) makes a call that differs from the journal: that call runs for real, and the rest of
//! the journal is dropped, since it answered a program that went elsewhere.

// A build without code mode runs no program, so it never pauses one: it only keeps what a
// paused run's state says of programs.
#![cfg_attr(not(feature = "code-mode"), allow(dead_code))]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sandbox::{NestedError, NestedOutcome, NestedResult};

use super::approval::PendingCall;
use super::record::ToolExecution;

/// A program of a paused run: its call, and the calls it made that finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PausedProgram {
    /// The program's call (the model's call of the code-mode tool).
    pub call_id: String,
    /// Its calls that finished before the pause.
    pub journal: Vec<Journaled>,
}

/// One call of a program that finished: what it was, how the program was answered, and its
/// record (which goes into the program's [`ToolExecution::nested`] once it ends).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Journaled {
    /// Its number among the program's calls, from 0.
    pub index: u32,
    /// What the program was told.
    pub answer: Answer,
    /// The call's record: its tool, arguments, outcome and approval.
    pub execution: ToolExecution,
}

/// What a program was told of one of its calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    /// The call's result.
    Result(NestedResult),
    /// Why it gave none.
    Error(NestedError),
}

impl Answer {
    pub fn of(outcome: &NestedOutcome) -> Self {
        match outcome {
            Ok(result) => Self::Result(result.clone()),
            Err(error) => Self::Error(error.clone()),
        }
    }

    pub fn outcome(&self) -> NestedOutcome {
        match self {
            Self::Result(result) => Ok(result.clone()),
            Self::Error(error) => Err(error.clone()),
        }
    }
}

/// What a program that runs again starts with: the calls it made last time, and the
/// decisions about those that waited.
#[derive(Debug, Clone, Default)]
pub(crate) struct Journal {
    /// By number.
    calls: BTreeMap<u32, Journaled>,
    /// The program's calls that waited for a decision, decided, by call id.
    decided: BTreeMap<String, PendingCall>,
}

impl Journal {
    /// The journal of `program` (none when it did not pause before), and `decided`, the
    /// decisions about its calls.
    pub fn new(program: Option<&PausedProgram>, decided: Vec<PendingCall>) -> Self {
        Self {
            calls: program
                .iter()
                .flat_map(|program| &program.journal)
                .map(|journaled| (journaled.index, journaled.clone()))
                .collect(),
            decided: decided
                .into_iter()
                .map(|pending| (pending.call_id.clone(), pending))
                .collect(),
        }
    }

    /// The answer the journal has for call `index` of `tool` with `arguments`, when it is the
    /// call made last time; `None` otherwise, and when the journal had another call there,
    /// it drops that call and every later one.
    pub fn replay(&mut self, index: u32, tool: &str, arguments: &str) -> Option<Journaled> {
        let journaled = self.calls.get(&index)?;
        if journaled.execution.name == tool && journaled.execution.arguments == arguments {
            return self.calls.remove(&index);
        }
        self.calls.split_off(&index);
        None
    }

    /// The decision about call `call_id` of `tool` with `arguments`, when one was made
    /// about that very call.
    pub fn decision(&self, call_id: &str, tool: &str, arguments: &str) -> Option<&PendingCall> {
        self.decided
            .get(call_id)
            .filter(|pending| pending.tool == tool && pending.arguments == arguments)
            .filter(|pending| pending.decision.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::record::Outcome;
    use crate::llm::ToolCall;
    use crate::sandbox::NestedErrorKind;

    fn journaled(index: u32, tool: &str, arguments: &str) -> Journaled {
        let call = ToolCall {
            id: format!("p1.{index}"),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
        };
        Journaled {
            index,
            answer: Answer::Result(NestedResult {
                text: format!("{tool} {index}"),
                structured: None,
            }),
            execution: ToolExecution::new(&call, 1, Outcome::Ok, String::new()),
        }
    }

    fn program(calls: Vec<Journaled>) -> PausedProgram {
        PausedProgram {
            call_id: "p1".to_owned(),
            journal: calls,
        }
    }

    #[test]
    fn the_same_calls_are_answered_from_the_journal_once_each() {
        let kept = program(vec![
            journaled(0, "read_file", r#"{"path":"/a"}"#),
            journaled(2, "read_file", r#"{"path":"/b"}"#),
        ]);
        let mut journal = Journal::new(Some(&kept), Vec::new());
        let first = journal
            .replay(0, "read_file", r#"{"path":"/a"}"#)
            .expect("the call made last time");
        assert_eq!(
            first.answer.outcome().expect("a result").text,
            "read_file 0",
            "the answer given last time"
        );
        assert!(journal.replay(0, "read_file", r#"{"path":"/a"}"#).is_none());
        // Call 1 waited for a decision: not in the journal, and the later call still is.
        assert!(journal.replay(1, "write_note", "{}").is_none());
        assert!(journal.replay(2, "read_file", r#"{"path":"/b"}"#).is_some());
    }

    #[test]
    fn a_call_that_differs_drops_the_rest_of_the_journal() {
        let kept = program(vec![
            journaled(0, "read_file", r#"{"path":"/a"}"#),
            journaled(1, "read_file", r#"{"path":"/b"}"#),
            journaled(2, "write_note", r#"{"text":"x"}"#),
        ]);
        let mut journal = Journal::new(Some(&kept), Vec::new());
        assert!(journal.replay(0, "read_file", r#"{"path":"/a"}"#).is_some());
        assert!(journal.replay(1, "read_file", r#"{"path":"/c"}"#).is_none());
        // The program went another way: what it did next last time is not its answer now.
        assert!(journal.replay(2, "write_note", r#"{"text":"x"}"#).is_none());
    }

    #[test]
    fn a_decision_applies_to_the_call_it_was_made_about_only() {
        let pending = PendingCall {
            call_id: "p1.1".to_owned(),
            tool: "write_note".to_owned(),
            arguments: r#"{"text":"x"}"#.to_owned(),
            origin: None,
            grants: None,
            decision: Some(super::super::approval::Decision::Approve),
            parent: Some("p1".to_owned()),
        };
        let journal = Journal::new(None, vec![pending]);
        assert!(
            journal
                .decision("p1.1", "write_note", r#"{"text":"x"}"#)
                .is_some()
        );
        assert!(
            journal
                .decision("p1.1", "write_note", r#"{"text":"y"}"#)
                .is_none()
        );
        assert!(
            journal
                .decision("p1.2", "write_note", r#"{"text":"x"}"#)
                .is_none()
        );
    }

    #[test]
    fn answers_keep_their_kind_through_json() {
        let denied = Answer::Error(NestedError {
            kind: NestedErrorKind::Denied,
            message: "not approved".to_owned(),
        });
        let text = serde_json::to_string(&denied).expect("serializes");
        assert_eq!(
            text,
            r#"{"error":{"kind":"denied","message":"not approved"}}"#
        );
        assert_eq!(
            serde_json::from_str::<Answer>(&text).expect("parses"),
            denied
        );
    }
}

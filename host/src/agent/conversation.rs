//! A conversation: its messages, the bookkeeping that keeps tool calls and results paired,
//! a run paused for approval, and the versioned JSON form that saves all of it.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::Media;
use crate::llm::{Message, ToolCall};

use super::AgentError;
use super::approval::{Decision, PendingCall};
use super::asking::{AskingCall, InputAnswer};
use super::state::RunState;

/// The format version of a saved conversation (and the run state in it). A file of another
/// version is refused with [`FormatError::Version`], never read as something else.
///
/// Version 2 keeps what a paused run holds that version 1 could not: the journal of a
/// program paused on a call that waits for approval, and the id of an upstream MCP task a
/// call left waiting for input. A toolhost that reads version 1 only would drop them
/// silently, so it is told the file is newer instead; version 1 files (a subset) still read.
pub const FORMAT_VERSION: u64 = 2;

/// The oldest format version still read.
const OLDEST_FORMAT_VERSION: u64 = 1;

/// The messages of a run (or of a chat across runs), with the rules that keep them valid for
/// every provider: each tool call has a unique id, and gets exactly one result before the
/// next request. A run paused for approval keeps its [`RunState`] here until it resumes.
///
/// It serializes to JSON with a format version ([`FORMAT_VERSION`]); [`Conversation::from_json`]
/// reads it back, paused run included, in this process or another.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    messages: Vec<Message>,
    next_id: usize,
    run: Option<RunState>,
}

/// Why a saved conversation could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// It is not JSON at all.
    #[error("it is not JSON (damaged, or not a saved conversation)")]
    NotJson(#[source] serde_json::Error),
    /// It has no format version.
    #[error("it has no format version, so it is not a saved toolhost conversation")]
    NoVersion,
    /// It has another format version.
    #[error(
        "it has format version {found}, and this toolhost reads versions \
         {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION} only (it was written by {} toolhost)",
        if *found > FORMAT_VERSION { "a newer" } else { "an older" }
    )]
    Version {
        /// The version found.
        found: u64,
    },
    /// It has the right version but does not fit it.
    #[error("it is damaged")]
    Damaged(#[source] serde_json::Error),
}

/// A conversation as saved.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved<M, R> {
    version: u64,
    messages: M,
    next_id: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<R>,
}

impl Serialize for Conversation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Saved {
            version: FORMAT_VERSION,
            messages: &self.messages,
            next_id: self.next_id,
            run: self.run.as_ref(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// A conversation that starts with `messages` (a saved history, say).
    pub fn from_messages(messages: Vec<Message>) -> Self {
        Self {
            next_id: messages.len(),
            messages,
            run: None,
        }
    }

    /// Reads a conversation saved as JSON (`serde_json::to_string(&conversation)`), with the
    /// run paused in it, if any.
    pub fn from_json(text: &str) -> Result<Self, FormatError> {
        Self::from_value(serde_json::from_str(text).map_err(FormatError::NotJson)?)
    }

    fn from_value(value: Value) -> Result<Self, FormatError> {
        let version = value
            .get("version")
            .ok_or(FormatError::NoVersion)?
            .as_u64()
            .ok_or(FormatError::NoVersion)?;
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(FormatError::Version { found: version });
        }
        let saved: Saved<Vec<Message>, RunState> =
            serde_json::from_value(value).map_err(FormatError::Damaged)?;
        let conversation = Self {
            messages: saved.messages,
            next_id: saved.next_id,
            run: saved.run,
        };
        // A history whose calls and results do not pair up would fail at the next request;
        // say so now, while it is being read. (The last turn's calls may wait for results:
        // a paused run's, or a caller's who runs tools itself.)
        conversation
            .open_calls()
            .map_err(|error| FormatError::Damaged(serde::de::Error::custom(error.to_string())))?;
        Ok(conversation)
    }

    /// The run paused in this conversation, waiting for approval decisions.
    pub fn paused_run(&self) -> Option<&RunState> {
        self.run.as_ref()
    }

    /// The calls of the paused run that wait for a decision (none when no run is paused).
    pub fn pending_approvals(&self) -> Vec<&PendingCall> {
        self.run.as_ref().map(RunState::pending).unwrap_or_default()
    }

    /// Decides about pending call `call_id` of the paused run.
    pub fn decide(&mut self, call_id: &str, decision: Decision) -> Result<(), AgentError> {
        match &mut self.run {
            Some(run) => run.decide(call_id, decision),
            None => Err(AgentError::NoSuchPendingCall {
                id: call_id.to_owned(),
            }),
        }
    }

    /// Approves pending call `call_id`.
    pub fn approve(&mut self, call_id: &str) -> Result<(), AgentError> {
        self.decide(call_id, Decision::Approve)
    }

    /// Approves pending call `call_id` and every call of the same tool for the rest of the
    /// run.
    pub fn approve_for_run(&mut self, call_id: &str) -> Result<(), AgentError> {
        self.decide(call_id, Decision::ApproveForRun)
    }

    /// Rejects pending call `call_id`; the model is told, with `reason`.
    pub fn reject(&mut self, call_id: &str, reason: impl Into<String>) -> Result<(), AgentError> {
        self.decide(
            call_id,
            Decision::Reject {
                reason: reason.into(),
            },
        )
    }

    /// The calls of the paused run that ask for input before they can finish (none when no
    /// run is paused).
    pub fn asking_calls(&self) -> Vec<&AskingCall> {
        self.run.as_ref().map(RunState::asking).unwrap_or_default()
    }

    /// Answers call `call_id` of the paused run, which asked for input: `answers` by the
    /// keys of its requests, each a JSON object as MCP has the result. It runs again with
    /// them when the run resumes.
    pub fn answer_input(
        &mut self,
        call_id: &str,
        answers: BTreeMap<String, Value>,
    ) -> Result<(), AgentError> {
        self.give_input(call_id, InputAnswer::Given(answers))
    }

    /// Tells call `call_id` of the paused run, which asked for input, that none will come:
    /// it ends with an error that gives `reason` when the run resumes.
    pub fn refuse_input(
        &mut self,
        call_id: &str,
        reason: impl Into<String>,
    ) -> Result<(), AgentError> {
        self.give_input(call_id, InputAnswer::Refused(reason.into()))
    }

    fn give_input(&mut self, call_id: &str, answer: InputAnswer) -> Result<(), AgentError> {
        match &mut self.run {
            Some(run) => run.answer(call_id, answer),
            None => Err(AgentError::NoSuchPendingCall {
                id: call_id.to_owned(),
            }),
        }
    }

    pub(crate) fn take_run(&mut self) -> Option<RunState> {
        self.run.take()
    }

    pub(crate) fn park_run(&mut self, run: RunState) {
        self.run = Some(run);
    }

    /// Adds what the user says.
    pub fn push_user(&mut self, text: impl Into<String>) {
        self.messages.push(Message::user(text));
    }

    /// The messages so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// How many model turns it has.
    pub fn turns(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count()
    }

    /// The tool calls of the last model turn that have no result yet.
    pub fn pending_calls(&self) -> Vec<&ToolCall> {
        let answered = self.answered_since_last_assistant();
        match self.last_assistant() {
            Some(calls) => calls
                .iter()
                .filter(|c| !answered.contains(c.id.as_str()))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Submits the result of pending call `call_id`: `Ok` with its output, or `Err` with what
    /// went wrong (sent to the model as an error result).
    pub fn submit(
        &mut self,
        call_id: &str,
        result: Result<String, String>,
    ) -> Result<(), AgentError> {
        self.submit_with_images(call_id, result, Vec::new())
    }

    /// Like [`submit`](Self::submit), with images the tool returned (sent to the model as
    /// images where its wire format takes them in tool results).
    pub fn submit_with_images(
        &mut self,
        call_id: &str,
        result: Result<String, String>,
        images: Vec<Media>,
    ) -> Result<(), AgentError> {
        self.submit_all([(call_id.to_owned(), result, images)])
    }

    /// Submits the results of several pending calls, in the order given, each as
    /// [`submit_with_images`](Self::submit_with_images) does: the pending calls are looked up
    /// once for all of them, so a turn of many calls costs time in proportion to its size
    /// (one submit per call would look them up again each time).
    pub(crate) fn submit_all(
        &mut self,
        results: impl IntoIterator<Item = (String, Result<String, String>, Vec<Media>)>,
    ) -> Result<(), AgentError> {
        let mut pending: HashMap<String, String> = self
            .pending_calls()
            .into_iter()
            .map(|call| (call.id.clone(), call.name.clone()))
            .collect();
        for (call_id, result, images) in results {
            let Some(name) = pending.remove(&call_id) else {
                return Err(AgentError::NoSuchPendingCall { id: call_id });
            };
            let (content, is_error) = match result {
                Ok(content) => (content, false),
                Err(message) => (message, true),
            };
            self.messages.push(Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
                images,
            });
        }
        Ok(())
    }

    /// Answers every call still waiting for a result with `message` as an error: for a
    /// conversation whose run stopped before all its calls ran, so it can go on. Does
    /// nothing to a paused run's calls, which wait for decisions.
    pub fn close_pending(&mut self, message: &str) {
        if self.run.is_some() {
            return;
        }
        let open: Vec<_> = self
            .pending_calls()
            .iter()
            .map(|c| (c.id.clone(), Err(message.to_owned()), Vec::new()))
            .collect();
        // The ids were just listed as pending.
        let _ = self.submit_all(open);
    }

    /// Checks that every tool call has its result, as every provider requires before the
    /// next request.
    pub fn check_answered(&self) -> Result<(), AgentError> {
        match self.open_calls()?.first() {
            Some(call) => Err(AgentError::UnansweredToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The calls of the last model turn still without a result, after checking that every
    /// earlier call has one and every result answers a call.
    fn open_calls(&self) -> Result<Vec<&ToolCall>, AgentError> {
        // The calls of the last model turn, and the ids of those without a result (a set,
        // so that a turn of many calls is checked in time proportional to its size).
        let mut calls: &[ToolCall] = &[];
        let mut open: HashSet<&str> = HashSet::new();
        for message in &self.messages {
            if let Message::ToolResult { call_id, .. } = message {
                if !open.remove(call_id.as_str()) {
                    return Err(AgentError::NoSuchPendingCall {
                        id: call_id.clone(),
                    });
                }
                continue;
            }
            if !open.is_empty()
                && let Some(call) = calls.iter().find(|c| open.contains(c.id.as_str()))
            {
                return Err(AgentError::UnansweredToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
            if let Message::Assistant { tool_calls, .. } = message {
                calls = tool_calls;
                open = tool_calls.iter().map(|c| c.id.as_str()).collect();
            }
        }
        Ok(calls
            .iter()
            .filter(|c| open.contains(c.id.as_str()))
            .collect())
    }

    /// Records the model's turn. Calls without an id, or with one used before, get a new one
    /// (`call_N`, counting up in the conversation, so ids are stable and unique).
    pub(crate) fn push_assistant(
        &mut self,
        text: String,
        mut tool_calls: Vec<ToolCall>,
    ) -> Vec<ToolCall> {
        let mut used: HashSet<String> = self
            .messages
            .iter()
            .flat_map(|m| match m {
                Message::Assistant { tool_calls, .. } => {
                    tool_calls.iter().map(|c| c.id.clone()).collect()
                }
                _ => Vec::new(),
            })
            .collect();
        for call in &mut tool_calls {
            if call.id.trim().is_empty() || used.contains(&call.id) {
                loop {
                    self.next_id += 1;
                    let id = format!("call_{}", self.next_id);
                    if !used.contains(&id) {
                        call.id = id;
                        break;
                    }
                }
            }
            used.insert(call.id.clone());
        }
        self.messages.push(Message::Assistant {
            text,
            tool_calls: tool_calls.clone(),
        });
        tool_calls
    }

    fn last_assistant(&self) -> Option<&[ToolCall]> {
        self.messages.iter().rev().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls.as_slice()),
            _ => None,
        })
    }

    fn answered_since_last_assistant(&self) -> HashSet<&str> {
        self.messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::Assistant { .. }))
            .filter_map(|m| match m {
                Message::ToolResult { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "add".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn missing_and_repeated_ids_are_replaced() {
        let mut conversation = Conversation::new();
        conversation.push_user("hi");
        let first = conversation.push_assistant(String::new(), vec![call(""), call("x")]);
        assert_eq!(first[1].id, "x");
        assert!(!first[0].id.is_empty());
        conversation.submit(&first[0].id, Ok("1".into())).unwrap();
        conversation.submit("x", Ok("2".into())).unwrap();
        let second = conversation.push_assistant(String::new(), vec![call("x"), call("")]);
        let all: Vec<&ToolCall> = first.iter().chain(&second).collect();
        let ids: HashSet<&str> = all.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), 4, "all ids are unique: {first:?} {second:?}");
    }

    #[test]
    fn a_version_1_file_still_reads_and_a_newer_one_is_refused_as_newer() {
        let mut conversation = Conversation::new();
        conversation.push_user("hi");
        let mut saved = serde_json::to_value(&conversation).unwrap();
        assert_eq!(saved["version"], FORMAT_VERSION);
        saved["version"] = 1.into();
        assert_eq!(
            Conversation::from_json(&saved.to_string()).unwrap(),
            conversation
        );
        saved["version"] = (FORMAT_VERSION + 1).into();
        let error = Conversation::from_json(&saved.to_string()).unwrap_err();
        assert!(matches!(error, FormatError::Version { found } if found == FORMAT_VERSION + 1));
        assert!(
            error.to_string().contains("written by a newer toolhost"),
            "{error}"
        );
    }

    #[test]
    fn a_saved_conversation_reads_back_with_calls_still_open_but_not_with_stray_results() {
        let mut conversation = Conversation::new();
        conversation.push_user("hi");
        conversation.push_assistant(String::new(), vec![call("a"), call("b")]);
        conversation.submit("a", Ok("1".into())).unwrap();
        let saved = serde_json::to_string(&conversation).unwrap();
        let read = Conversation::from_json(&saved).unwrap();
        assert_eq!(read, conversation);
        assert_eq!(
            read.pending_calls().len(),
            1,
            "b still waits for its result"
        );

        let mut value: Value = serde_json::from_str(&saved).unwrap();
        value["messages"][2]["call_id"] = "zzz".into();
        let error = Conversation::from_json(&value.to_string()).unwrap_err();
        assert!(matches!(error, FormatError::Damaged(_)), "{error}");
        assert!(format!("{:#}", anyhow::Error::from(error)).contains("zzz"));
    }

    #[test]
    fn every_call_needs_a_result_before_the_next_request() {
        let mut conversation = Conversation::new();
        conversation.push_user("hi");
        conversation.push_assistant(String::new(), vec![call("a"), call("b")]);
        conversation.submit("a", Ok("1".into())).unwrap();
        let error = conversation.check_answered().unwrap_err();
        assert!(
            matches!(error, AgentError::UnansweredToolCall { ref id, .. } if id == "b"),
            "{error}"
        );
        assert!(
            conversation.submit("a", Ok("again".into())).is_err(),
            "a is answered already"
        );
        assert!(conversation.submit("zzz", Ok("?".into())).is_err());
        conversation.submit("b", Err("it broke".into())).unwrap();
        conversation.check_answered().unwrap();
        assert!(conversation.pending_calls().is_empty());
    }
}

//! A conversation: its messages, and the bookkeeping that keeps tool calls and results paired.

use std::collections::HashSet;

use crate::ToolImage;
use crate::llm::{Message, ToolCall};

use super::AgentError;

/// The messages of a run (or of a chat across runs), with the rules that keep them valid for
/// every provider: each tool call has a unique id, and gets exactly one result before the
/// next request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    messages: Vec<Message>,
    next_id: usize,
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
        }
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
        images: Vec<ToolImage>,
    ) -> Result<(), AgentError> {
        let name = self
            .pending_calls()
            .into_iter()
            .find(|call| call.id == call_id)
            .map(|call| call.name.clone())
            .ok_or_else(|| AgentError::NoSuchPendingCall {
                id: call_id.to_owned(),
            })?;
        let (content, is_error) = match result {
            Ok(content) => (content, false),
            Err(message) => (message, true),
        };
        self.messages.push(Message::ToolResult {
            call_id: call_id.to_owned(),
            name,
            content,
            is_error,
            images,
        });
        Ok(())
    }

    /// Checks that every tool call has its result, as every provider requires before the
    /// next request.
    pub fn check_answered(&self) -> Result<(), AgentError> {
        let mut open: Vec<&ToolCall> = Vec::new();
        for message in &self.messages {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    if let Some(call) = open.first() {
                        return Err(AgentError::UnansweredToolCall {
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                    }
                    open = tool_calls.iter().collect();
                }
                Message::ToolResult { call_id, .. } => {
                    let Some(position) = open.iter().position(|c| &c.id == call_id) else {
                        return Err(AgentError::NoSuchPendingCall {
                            id: call_id.clone(),
                        });
                    };
                    open.remove(position);
                }
                Message::User { .. } | Message::System { .. } => {
                    if let Some(call) = open.first() {
                        return Err(AgentError::UnansweredToolCall {
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                    }
                }
            }
        }
        match open.first() {
            Some(call) => Err(AgentError::UnansweredToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
            }),
            None => Ok(()),
        }
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

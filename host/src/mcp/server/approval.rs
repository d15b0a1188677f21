//! Calls that wait for the client's approval because the caller's `[[mcp.access]]` entry says
//! so (`approval = "always"`). Before such a call runs, `host mcp` asks for input of its own,
//! as a tool asks ([`asking`](super::asking)): one `elicitation/create` under the key
//! [`KEY`], with nothing to fill in, saying which tool is about to run with which arguments.
//! In a session the server asks the client and waits; on the stateless revision the client
//! gets an `InputRequiredResult` and sends its answer with the sealed `requestState`. Only an
//! `accept` lets the call run; a client that cannot be asked (no `elicitation` capability) is
//! told so (-32021), and the call does not run.
//!
//! Which round of a call this is lives in the state the server keeps (a session) or seals
//! (stateless), which binds it to the tool, its arguments and the caller: [`ASKED`] after
//! the question, [`APPROVED`] and the tool's own state once approved, so that a tool that
//! then asks for input of its own is not held up by a second question.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::asking::Input;
use crate::arguments::Arguments;
use crate::content::{InputRequest, InputRequired};

/// The key of the approval question among a call's requests for input.
pub(super) const KEY: &str = "toolhost/approval";

/// The state of a call whose approval was asked for.
const ASKED: &str = "toolhost/approval-asked";

/// What the state of an approved call starts with; the tool's own state follows, as JSON.
const APPROVED: &str = "toolhost/approved:";

/// Where a call that needs approval stands.
pub(super) enum Approval {
    /// Approved: the call runs with what is left of its input.
    Given,
    /// Not asked yet: ask this.
    Ask(InputRequired),
    /// The client answered with something other than `accept` (its `action`, as sent).
    Refused(String),
}

/// Where the call of `tool` with `arguments`, whose input (`input`) is what the client sent
/// this round, stands. When approved, `input` is left as the tool is to see it: without the
/// approval's answer, with the tool's own state.
pub(super) fn decide(input: &mut Input, tool: &str, arguments: &Arguments) -> Approval {
    match input.state.as_deref() {
        Some(state) if state.starts_with(APPROVED) => {
            let own = serde_json::from_str(&state[APPROVED.len()..]);
            // Only this server made the state (sealed, or kept in the session).
            input.state = own.unwrap_or_default();
            Approval::Given
        }
        Some(ASKED) => {
            input.state = None;
            let answer = input.responses.remove(KEY);
            let action = answer
                .as_ref()
                .and_then(|answer| answer.get("action"))
                .and_then(Value::as_str);
            match action {
                Some("accept") => Approval::Given,
                Some(other) => Approval::Refused(other.chars().take(32).collect()),
                None => Approval::Refused("no answer".to_owned()),
            }
        }
        _ => Approval::Ask(question(tool, arguments)),
    }
}

/// `asked`, what an approved call's tool asks for, with its state kept behind the mark of
/// approval.
pub(super) fn keep_approved(mut asked: InputRequired) -> InputRequired {
    // An `Option<String>` always serializes.
    let own = serde_json::to_string(&asked.state).unwrap_or_default();
    asked.state = Some(format!("{APPROVED}{own}"));
    asked
}

/// The approval question for a call of `tool` with `arguments`.
fn question(tool: &str, arguments: &Arguments) -> InputRequired {
    InputRequired {
        requests: BTreeMap::from([(KEY.to_owned(), request(tool, arguments))]),
        state: Some(ASKED.to_owned()),
        task: None,
    }
}

/// The `elicitation/create` that asks whether the call of `tool` with `arguments` may run;
/// only an answer whose `action` is `accept` approves it.
pub(super) fn request(tool: &str, arguments: &Arguments) -> InputRequest {
    let shown: String = arguments.text().chars().take(1_000).collect();
    InputRequest {
        method: "elicitation/create".to_owned(),
        params: json!({
            "mode": "form",
            "message": format!("Approve the call of the tool `{tool}` with the arguments {shown}?"),
            "requestedSchema": { "type": "object", "properties": {} },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments() -> Arguments {
        Arguments::parse(r#"{"path":"a.txt"}"#).expect("arguments")
    }

    fn answered(action: &str) -> Input {
        Input {
            responses: BTreeMap::from([
                (KEY.to_owned(), json!({ "action": action, "content": {} })),
                ("tool's own".to_owned(), json!({ "action": "accept" })),
            ]),
            state: Some(ASKED.to_owned()),
        }
    }

    #[test]
    fn a_first_round_asks_and_only_an_accept_lets_the_call_run() {
        let Approval::Ask(asked) = decide(&mut Input::default(), "delete", &arguments()) else {
            panic!("a first round asks");
        };
        let request = &asked.requests[KEY];
        assert_eq!(request.method, "elicitation/create");
        let message = request.params["message"].as_str().expect("a message");
        assert!(
            message.contains("`delete`") && message.contains("a.txt"),
            "{message}"
        );

        let mut accepted = answered("accept");
        assert!(matches!(
            decide(&mut accepted, "delete", &arguments()),
            Approval::Given
        ));
        // The tool sees its own answers only, and no state of the server's.
        assert_eq!(
            accepted.responses.keys().collect::<Vec<_>>(),
            ["tool's own"]
        );
        assert_eq!(accepted.state, None);
        for action in ["decline", "cancel"] {
            let decided = decide(&mut answered(action), "delete", &arguments());
            assert!(matches!(decided, Approval::Refused(a) if a == action));
        }
        let mut unanswered = answered("accept");
        unanswered.responses.clear();
        assert!(matches!(
            decide(&mut unanswered, "delete", &arguments()),
            Approval::Refused(_)
        ));
    }

    #[test]
    fn an_answer_without_the_servers_question_is_asked_again() {
        // An `accept` the client sends unasked (no state of this server's) approves nothing.
        let mut unasked = answered("accept");
        unasked.state = None;
        assert!(matches!(
            decide(&mut unasked, "delete", &arguments()),
            Approval::Ask(_)
        ));
    }

    #[test]
    fn an_approved_tool_that_asks_keeps_its_state_and_its_approval() {
        for own in [None, Some("step 2".to_owned())] {
            let asked = keep_approved(InputRequired {
                requests: BTreeMap::new(),
                state: own.clone(),
                task: None,
            });
            let mut next = Input {
                responses: BTreeMap::new(),
                state: asked.state,
            };
            assert!(matches!(
                decide(&mut next, "delete", &arguments()),
                Approval::Given
            ));
            assert_eq!(next.state, own);
        }
    }
}

//! The tools the conformance suite's `tasks-*` scenarios (the MCP tasks extension) call:
//! which of them run as tasks is the manifest's choice (`task` under `[tools.NAME]`), not
//! theirs; they only take their time, fail, trap or ask for input the way the scenarios
//! expect.

use serde_json::{Value, json};

use crate::asking::{answer, ask, done, name_question, request};
use crate::exports::toolhost::tool::tools::{CallContext, Outcome, ToolError};
use crate::toolhost::tool::report;

/// The tools, their descriptions and input schemas.
pub const TOOLS: [(&str, &str, &str); 7] = [
    (
        "greet",
        "Greets someone by name, at once.",
        r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#,
    ),
    (
        "slow_compute",
        "Waits the given seconds, reporting progress each second, then answers.",
        r#"{"type":"object","properties":{"seconds":{"type":"number","minimum":0},"label":{"type":"string"}},"required":["seconds"]}"#,
    ),
    (
        "failing_job",
        "Fails as a tool fails (a reported error), after a moment.",
        crate::EMPTY,
    ),
    (
        "protocol_error_job",
        "Traps (a Rust panic): a failure of the call, not a result.",
        crate::EMPTY,
    ),
    (
        "confirm_delete",
        "Asks the user to confirm deleting a file, then says what it did.",
        r#"{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}"#,
    ),
    (
        "multi_input",
        "Asks the user two things at once, then answers with both.",
        crate::EMPTY,
    ),
    (
        "test_tool_with_task",
        "Asks the user's name, then greets them.",
        crate::EMPTY,
    ),
];

/// Runs tool `name` if it is one of these.
pub fn call(
    name: &str,
    arguments: &str,
    context: &CallContext,
) -> Option<Result<Outcome, ToolError>> {
    let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    Some(match name {
        "greet" => done(format!(
            "Hello, {}!",
            arguments["name"].as_str().unwrap_or("?")
        )),
        "slow_compute" => {
            let seconds = arguments["seconds"].as_f64().unwrap_or(0.0);
            let label = arguments["label"].as_str().unwrap_or("unlabelled");
            let whole = seconds.ceil() as u64;
            for second in 0..whole {
                report::progress(second as f64, Some(seconds), Some(label));
                crate::pause(1000);
            }
            done(format!("computed {label} in {seconds} s"))
        }
        "failing_job" => {
            crate::pause(200);
            Err(ToolError::Failed(
                "failing_job always fails, as a tool reports a failure".to_owned(),
            ))
        }
        "protocol_error_job" => panic!("protocol_error_job traps on purpose"),
        "confirm_delete" => {
            let file = arguments["filename"].as_str().unwrap_or("?");
            match answer(context, "confirm") {
                Some(a) if a["action"] == "accept" => done(format!("deleted {file}")),
                Some(_) => done(format!("kept {file}")),
                None => ask(vec![("confirm", confirmation(file))], None),
            }
        }
        "multi_input" => match (answer(context, "first"), answer(context, "second")) {
            (Some(first), Some(second)) => done(format!(
                "first: {}, second: {}",
                first["content"]["name"].as_str().unwrap_or("?"),
                second["content"]["name"].as_str().unwrap_or("?")
            )),
            _ => ask(
                vec![
                    ("first", name_question("First: what is your name?")),
                    ("second", name_question("Second: what is your name?")),
                ],
                None,
            ),
        },
        "test_tool_with_task" => match answer(context, "user_name") {
            Some(a) => done(format!(
                "Hello, {}! (gathered before the task)",
                a["content"]["name"].as_str().unwrap_or("?")
            )),
            None => ask(
                vec![("user_name", name_question("What is your name?"))],
                None,
            ),
        },
        _ => return None,
    })
}

/// The question `confirm_delete` asks.
fn confirmation(file: &str) -> crate::exports::toolhost::tool::tools::InputRequest {
    request(
        "elicitation/create",
        json!({
            "message": format!("Delete {file}?"),
            "requestedSchema": {
                "type": "object",
                "properties": { "confirm": { "type": "boolean" } },
                "required": ["confirm"],
            },
        }),
    )
}

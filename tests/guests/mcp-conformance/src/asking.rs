//! The conformance suite's tools that ask for input before they finish (tool contract 0.2's
//! `input-required`): over 2026-07-28 the host answers with an `InputRequiredResult` and the
//! client calls again with its answers; over 2025-11-25 the host asks the client itself. A
//! prompt asks the same way.

use serde_json::{Value, json};

use crate::exports::toolhost::tool::prompts;
use crate::exports::toolhost::tool::tools::{
    CallContext, Content, InputRequest, InputRequired, Outcome, ToolError, ToolResult,
};

/// The tools, their descriptions and input schemas.
pub const TOOLS: [(&str, &str, &str); 14] = [
    (
        "test_input_required_result_elicitation",
        "Asks the user's name.",
        crate::EMPTY,
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model a question.",
        crate::EMPTY,
    ),
    (
        "test_input_required_result_list_roots",
        "Asks the client's roots.",
        crate::EMPTY,
    ),
    (
        "test_input_required_result_request_state",
        "Asks to confirm, with a state.",
        crate::EMPTY,
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks three things at once.",
        crate::EMPTY,
    ),
    (
        "test_input_required_result_multi_round",
        "Asks twice, one after the other.",
        crate::EMPTY,
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks to confirm, with a state.",
        crate::EMPTY,
    ),
    (
        "test_input_required_result_capabilities",
        "Asks the user and the model.",
        crate::EMPTY,
    ),
    (
        "test_missing_capability",
        "Asks the client's model.",
        crate::EMPTY,
    ),
    ("test_streaming_elicitation", "Asks the user.", crate::EMPTY),
    (
        "test_sampling",
        "Asks the client's model the prompt.",
        r#"{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}"#,
    ),
    (
        "test_elicitation",
        "Asks the user for a name and an email.",
        r#"{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}"#,
    ),
    (
        "test_elicitation_sep1034_defaults",
        "Asks with defaults for every type.",
        crate::EMPTY,
    ),
    (
        "test_elicitation_sep1330_enums",
        "Asks with every kind of enum.",
        crate::EMPTY,
    ),
];

pub(crate) fn request(method: &str, params: Value) -> InputRequest {
    InputRequest {
        method: method.to_owned(),
        params: params.to_string(),
    }
}

pub(crate) fn name_question(message: &str) -> InputRequest {
    request(
        "elicitation/create",
        json!({
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { "name": { "type": "string" } },
                "required": ["name"],
            },
        }),
    )
}

fn confirm() -> InputRequest {
    request(
        "elicitation/create",
        json!({
            "message": "Please confirm",
            "requestedSchema": {
                "type": "object",
                "properties": { "ok": { "type": "boolean" } },
                "required": ["ok"],
            },
        }),
    )
}

fn sampling(prompt: &str, max_tokens: u32) -> InputRequest {
    request(
        "sampling/createMessage",
        json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": max_tokens,
        }),
    )
}

fn roots() -> InputRequest {
    request("roots/list", json!({}))
}

pub(crate) fn ask(requests: Vec<(&str, InputRequest)>, state: Option<&str>) -> Result<Outcome, ToolError> {
    Ok(Outcome::InputRequired(InputRequired {
        requests: requests
            .into_iter()
            .map(|(key, request)| (key.to_owned(), request))
            .collect(),
        state: state.map(str::to_owned),
    }))
}

pub(crate) fn done(text: String) -> Result<Outcome, ToolError> {
    Ok(Outcome::Complete(ToolResult {
        content: vec![Content::Text(text)],
        structured: None,
    }))
}

/// The answer under `key`, as JSON.
pub(crate) fn answer(context: &CallContext, key: &str) -> Option<Value> {
    let (_, text) = context.input_responses.iter().find(|(k, _)| k == key)?;
    serde_json::from_str(text).ok()
}

/// An elicitation's answer as the suite's texts show it.
fn elicited(answer: &Value) -> String {
    format!(
        "action={}, content={}",
        answer["action"].as_str().unwrap_or("?"),
        answer.get("content").cloned().unwrap_or(Value::Null)
    )
}

/// Runs tool `name` if it is one of these.
pub fn call(
    name: &str,
    arguments: &str,
    context: &CallContext,
) -> Option<Result<Outcome, ToolError>> {
    let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let state = context.request_state.as_deref();
    Some(match name {
        "test_input_required_result_elicitation" | "test_streaming_elicitation" => {
            match answer(context, "user_name") {
                Some(a) => done(format!(
                    "Hello, {}!",
                    a["content"]["name"].as_str().unwrap_or("?")
                )),
                None => ask(
                    vec![("user_name", name_question("What is your name?"))],
                    None,
                ),
            }
        }
        "test_input_required_result_sampling" => match answer(context, "capital_question") {
            Some(a) => done(format!(
                "The model said: {}",
                a["content"]["text"].as_str().unwrap_or("?")
            )),
            None => ask(
                vec![(
                    "capital_question",
                    sampling("What is the capital of France?", 100),
                )],
                None,
            ),
        },
        "test_input_required_result_list_roots" => match answer(context, "client_roots") {
            Some(a) => {
                let uris: Vec<&str> = a["roots"]
                    .as_array()
                    .map(|roots| roots.iter().filter_map(|r| r["uri"].as_str()).collect())
                    .unwrap_or_default();
                done(format!("Roots: {}", uris.join(", ")))
            }
            None => ask(vec![("client_roots", roots())], None),
        },
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            match (answer(context, "confirm"), state) {
                (Some(_), Some("confirm-pending")) => done("state-ok: confirmed".to_owned()),
                _ => ask(vec![("confirm", confirm())], Some("confirm-pending")),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let keys = ["user_name", "greeting", "client_roots"];
            if state == Some("all-three") && keys.iter().all(|k| answer(context, k).is_some()) {
                done("Got a name, a greeting and the roots".to_owned())
            } else {
                ask(
                    vec![
                        ("user_name", name_question("What is your name?")),
                        ("greeting", sampling("Generate a greeting", 50)),
                        ("client_roots", roots()),
                    ],
                    Some("all-three"),
                )
            }
        }
        "test_input_required_result_multi_round" => {
            match (state, answer(context, "step1"), answer(context, "step2")) {
                (Some("round-1"), Some(a), _) => {
                    let name = a["content"]["name"].as_str().unwrap_or("?");
                    let color = request(
                        "elicitation/create",
                        json!({
                            "message": "Step 2: What is your favorite color?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": { "color": { "type": "string" } },
                                "required": ["color"],
                            },
                        }),
                    );
                    ask(vec![("step2", color)], Some(&format!("round-2:{name}")))
                }
                (Some(s), _, Some(a)) if s.starts_with("round-2:") => done(format!(
                    "{} likes {}",
                    &s["round-2:".len()..],
                    a["content"]["color"].as_str().unwrap_or("?")
                )),
                _ => ask(
                    vec![("step1", name_question("Step 1: What is your name?"))],
                    Some("round-1"),
                ),
            }
        }
        "test_input_required_result_capabilities" => {
            match (answer(context, "user_name"), answer(context, "greeting")) {
                (None, None) if state.is_none() => ask(
                    vec![
                        ("user_name", name_question("What is your name?")),
                        ("greeting", sampling("Generate a greeting", 50)),
                    ],
                    Some("asked"),
                ),
                _ => done("Answered what the client could".to_owned()),
            }
        }
        "test_missing_capability" => match answer(context, "question") {
            Some(_) => done("answered".to_owned()),
            None => ask(vec![("question", sampling("Say hello", 20))], None),
        },
        "test_sampling" => match answer(context, "llm") {
            Some(a) => done(format!(
                "LLM response: {}",
                a["content"]["text"].as_str().unwrap_or("?")
            )),
            None => ask(
                vec![(
                    "llm",
                    sampling(arguments["prompt"].as_str().unwrap_or(""), 100),
                )],
                None,
            ),
        },
        "test_elicitation" => match answer(context, "user") {
            Some(a) => done(format!("User response: {}", elicited(&a))),
            None => ask(
                vec![(
                    "user",
                    request(
                        "elicitation/create",
                        json!({
                            "message": arguments["message"].as_str().unwrap_or(""),
                            "requestedSchema": {
                                "type": "object",
                                "properties": {
                                    "username": { "type": "string", "description": "User's response" },
                                    "email": { "type": "string", "description": "User's email address" },
                                },
                                "required": ["username", "email"],
                            },
                        }),
                    ),
                )],
                None,
            ),
        },
        "test_elicitation_sep1034_defaults" => match answer(context, "defaults") {
            Some(a) => done(format!("Elicitation completed: {}", elicited(&a))),
            None => ask(
                vec![(
                    "defaults",
                    request(
                        "elicitation/create",
                        json!({
                            "message": "Please review the defaults",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {
                                    "name": { "type": "string", "default": "John Doe" },
                                    "age": { "type": "integer", "default": 30 },
                                    "score": { "type": "number", "default": 95.5 },
                                    "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
                                    "verified": { "type": "boolean", "default": true },
                                },
                            },
                        }),
                    ),
                )],
                None,
            ),
        },
        "test_elicitation_sep1330_enums" => match answer(context, "enums") {
            Some(a) => done(format!("Elicitation completed: {}", elicited(&a))),
            None => ask(
                vec![(
                    "enums",
                    request(
                        "elicitation/create",
                        json!({
                            "message": "Please choose",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {
                                    "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                                    "titledSingle": { "type": "string", "oneOf": [
                                        { "const": "value1", "title": "First Option" },
                                        { "const": "value2", "title": "Second Option" },
                                        { "const": "value3", "title": "Third Option" },
                                    ] },
                                    "legacyEnum": { "type": "string", "enum": ["opt1", "opt2", "opt3"],
                                                    "enumNames": ["Option One", "Option Two", "Option Three"] },
                                    "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                                    "titledMulti": { "type": "array", "items": { "anyOf": [
                                        { "const": "value1", "title": "First Choice" },
                                        { "const": "value2", "title": "Second Choice" },
                                        { "const": "value3", "title": "Third Choice" },
                                    ] } },
                                },
                            },
                        }),
                    ),
                )],
                None,
            ),
        },
        _ => return None,
    })
}

/// The prompt that asks for input (SEP-2322: a request for input is not only a tool's): it
/// asks the user for a context (`user_context`), then fills itself in with the answer. Its
/// state carries which round it is in, to show that it comes back unchanged.
pub fn prompt(context: &prompts::Context) -> Result<prompts::Outcome, prompts::PromptError> {
    let answer = context
        .input_responses
        .iter()
        .find(|(key, _)| key == "user_context")
        .and_then(|(_, text)| serde_json::from_str::<Value>(text).ok());
    let Some(answer) = answer else {
        let question = json!({
            "message": "What context should the prompt use?",
            "requestedSchema": {
                "type": "object",
                "properties": { "context": { "type": "string" } },
                "required": ["context"],
            },
        });
        return Ok(prompts::Outcome::InputRequired(prompts::InputRequired {
            requests: vec![(
                "user_context".to_owned(),
                prompts::InputRequest {
                    method: "elicitation/create".to_owned(),
                    params: question.to_string(),
                },
            )],
            state: Some("asked for the context".to_owned()),
        }));
    };
    if context.request_state.as_deref() != Some("asked for the context") {
        return Err(prompts::PromptError::Failed(format!(
            "the state came back as {:?}",
            context.request_state
        )));
    }
    let text = format!(
        "Use this context: {}",
        answer["content"]["context"].as_str().unwrap_or("(none given)")
    );
    Ok(prompts::Outcome::Complete(prompts::Filled {
        description: Some("A prompt filled in with what the user said.".to_owned()),
        messages: vec![prompts::Message {
            role: prompts::Role::User,
            part: prompts::Part::Text(text),
        }],
    }))
}

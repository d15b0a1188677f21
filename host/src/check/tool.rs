//! The checks of one tool: its descriptions, an example call and its output schema, bad
//! arguments, and the capabilities it used.

use serde_json::{Value, json};

use super::examples::{example_arguments, property, required, wrong_type};
use super::{CheckItem, CheckKind};
use crate::engine::result::breaks_output_schema;
use crate::error::CallError;
use crate::source::{CallContext, ToolOutput};
use crate::spec::{Capability, ToolSpec};
use crate::toolbox::Toolbox;

/// The shortest description that tells a model what a tool is for.
const MIN_DESCRIPTION: usize = 10;

/// What every invalid-arguments message must say: what to send instead.
const SEND: &str = "send ";

/// The longest piece of a result quoted in the checklist.
const QUOTE: usize = 60;

/// Every check of tool `spec`, in the order of the list.
pub(super) async fn check_tool(toolbox: &Toolbox, spec: &ToolSpec) -> Vec<CheckItem> {
    let tool = spec.name.as_str();
    let mut denied = Vec::new();
    let mut items = vec![descriptions(spec)];
    let (call_item, outcome) = example_call(toolbox, spec).await;
    items.push(call_item);
    items.push(output_schema(spec, outcome.as_ref()));
    if let Some(Err(CallError::CapabilityDenied { capability, .. })) = &outcome {
        denied.push(capability.clone());
    }
    items.push(invalid_arguments(toolbox, spec, &mut denied).await);
    let unrequested: Vec<&String> = denied
        .iter()
        .filter(|what| !requested(spec, what))
        .collect();
    items.push(match unrequested.as_slice() {
        [] => CheckItem::pass(
            CheckKind::OnlyRequested,
            Some(tool),
            match spec.requested.len() {
                0 => "requests nothing, and was refused nothing".to_owned(),
                n => format!("was refused nothing beyond the {n} capabilities it requests"),
            },
        ),
        used => CheckItem::fail(
            CheckKind::OnlyRequested,
            Some(tool),
            format!(
                "tried to use {} without requesting it",
                used.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "request it in `describe` (the tool's capabilities, with a reason), so whoever \
             grants it knows the tool needs it; or stop using it",
        ),
    });
    items
}

fn context() -> CallContext {
    CallContext {
        call_id: "host-check".into(),
        ..CallContext::default()
    }
}

fn descriptions(spec: &ToolSpec) -> CheckItem {
    let tool = Some(spec.name.as_str());
    if spec.description.trim().len() < MIN_DESCRIPTION {
        return CheckItem::fail(
            CheckKind::Descriptions,
            tool,
            format!(
                "the description {:?} tells a model too little",
                spec.description
            ),
            "say what the tool does and when to use it, in a sentence or two",
        );
    }
    let undescribed: Vec<&String> = spec
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, schema)| {
            schema
                .get("description")
                .and_then(Value::as_str)
                .is_none_or(|d| d.trim().is_empty())
        })
        .map(|(name, _)| name)
        .collect();
    if undescribed.is_empty() {
        return CheckItem::pass(
            CheckKind::Descriptions,
            tool,
            "the tool and every argument are described",
        );
    }
    CheckItem::fail(
        CheckKind::Descriptions,
        tool,
        format!(
            "argument{} {} ha{} no description",
            if undescribed.len() == 1 { "" } else { "s" },
            quoted(&undescribed),
            if undescribed.len() == 1 { "s" } else { "ve" }
        ),
        "give each argument a `description` in the input schema (a doc comment on the field, \
         in Rust): the model reads it to fill the argument in",
    )
}

/// The example call's item, and its outcome (none when no arguments could be made).
async fn example_call(
    toolbox: &Toolbox,
    spec: &ToolSpec,
) -> (CheckItem, Option<Result<ToolOutput, CallError>>) {
    let tool = Some(spec.name.as_str());
    let arguments = example_arguments(&spec.input_schema);
    if let Ok(validator) = jsonschema::validator_for(&spec.input_schema)
        && let Some(error) = validator.iter_errors(&arguments).next()
    {
        let item = CheckItem::fail(
            CheckKind::ExampleCall,
            tool,
            format!(
                "the arguments made from its input schema, {arguments}, do not fit it: {error}"
            ),
            "add `examples` to the schemas of its required arguments, so a check (and a \
             model) sees a value that fits",
        );
        return (item, None);
    }
    let outcome = toolbox
        .call(&spec.name, &arguments.to_string(), &context())
        .await;
    let item = example_item(spec, &arguments, &outcome);
    (item, Some(outcome))
}

fn example_item(
    spec: &ToolSpec,
    arguments: &Value,
    outcome: &Result<ToolOutput, CallError>,
) -> CheckItem {
    let tool = Some(spec.name.as_str());
    let called = format!("called with {arguments}");
    let pass = |what: String| CheckItem::pass(CheckKind::ExampleCall, tool, what);
    let fail = |what: String, fix: &str| CheckItem::fail(CheckKind::ExampleCall, tool, what, fix);
    match outcome {
        Ok(output) => pass(format!("{called}, it returned {}", quote(&output.text))),
        Err(CallError::ToolFailed { message, .. }) if breaks_output_schema(message) => fail(
            format!("{called}, its result broke the tool contract: {message}"),
            "see `output schema` below",
        ),
        Err(CallError::ToolFailed { message, .. }) => pass(format!(
            "{called}, it returned a failure of its own: {}",
            quote(message)
        )),
        Err(CallError::CapabilityDenied { capability, .. }) => pass(format!(
            "{called}, it was refused {capability} (host check grants nothing) and said so"
        )),
        Err(CallError::InputRequired { methods, .. }) => pass(format!(
            "{called}, it asked for input first ({})",
            methods.join(", ")
        )),
        // Arguments can fit the schema and still mean nothing (a path that is not there):
        // the tool said so, which is a return.
        Err(CallError::InvalidArguments { message, .. }) => pass(format!(
            "{called}, it refused them as invalid arguments: {}; `examples` in the input \
             schema would give a call that succeeds",
            quote(message)
        )),
        Err(CallError::Trap { .. }) => fail(
            format!("{called}, it crashed: {}", outcome_text(outcome)),
            "return an error instead of panicking or aborting (in Rust, `ToolError`); its \
             stderr above may say where",
        ),
        Err(CallError::Exited { .. }) => fail(
            format!("{called}, {}", outcome_text(outcome)),
            "return an error instead of calling exit (in Rust, `ToolError`); its stderr above \
             may say why",
        ),
        Err(
            error @ (CallError::Timeout { .. }
            | CallError::MemoryLimit { .. }
            | CallError::ResultTooLarge { .. }),
        ) => fail(
            format!("{called}, it did not return within the check's limits: {error}"),
            "make the call cheaper, or bound its work by its arguments; `host check --help` \
             shows the limits and how to raise them",
        ),
        Err(error) => fail(
            format!("{called}, it did not return: {error}"),
            "see the reason; a tool's call must return a result or an error",
        ),
    }
}

fn outcome_text(outcome: &Result<ToolOutput, CallError>) -> String {
    match outcome {
        Ok(output) => output.text.clone(),
        Err(error) => error.to_string(),
    }
}

fn output_schema(spec: &ToolSpec, outcome: Option<&Result<ToolOutput, CallError>>) -> CheckItem {
    let tool = Some(spec.name.as_str());
    let Some(schema) = &spec.output_schema else {
        return CheckItem::skip(CheckKind::OutputSchema, tool, "declares none");
    };
    match outcome {
        Some(Ok(output)) => {
            let fits = match (&output.structured, jsonschema::validator_for(schema)) {
                (Some(value), Ok(validator)) => validator.is_valid(value),
                // A `"type": "string"` result is text, which the host does not parse.
                (None, _) => schema.get("type") == Some(&json!("string")),
                (Some(_), Err(_)) => false,
            };
            if fits {
                CheckItem::pass(
                    CheckKind::OutputSchema,
                    tool,
                    "the example call's result fits it",
                )
            } else {
                CheckItem::fail(
                    CheckKind::OutputSchema,
                    tool,
                    format!("the result {} does not fit it", quote(&output.text)),
                    "return structured content that fits the declared output schema",
                )
            }
        }
        Some(Err(CallError::ToolFailed { message, .. })) if breaks_output_schema(message) => {
            CheckItem::fail(
                CheckKind::OutputSchema,
                tool,
                message.clone(),
                "return structured content (JSON) that fits the declared output schema, or \
                 correct the schema",
            )
        }
        _ => CheckItem::skip(
            CheckKind::OutputSchema,
            tool,
            "not checked: the example call returned no result",
        ),
    }
}

/// Arguments that are not JSON, that lack the required fields, and that have the first
/// property of the wrong type, straight to the tool (the host's own schema check bypassed):
/// each must come back as invalid-arguments that say what to send. Refusals of capabilities
/// go to `denied`.
async fn invalid_arguments(
    toolbox: &Toolbox,
    spec: &ToolSpec,
    denied: &mut Vec<String>,
) -> CheckItem {
    let tool = spec.name.as_str();
    let mut cases = vec![("arguments that are not JSON", "this is not JSON".to_owned())];
    let required = required(&spec.input_schema);
    if !required.is_empty() {
        cases.push(("arguments without its required fields", "{}".to_owned()));
    }
    let first = spec
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|properties| properties.keys().next());
    if let Some(name) = first {
        let mut arguments = example_arguments(&spec.input_schema);
        let schema = property(&spec.input_schema, name).unwrap_or(&Value::Null);
        arguments[name] = wrong_type(schema);
        cases.push(("a field of the wrong type", arguments.to_string()));
    }
    let mut problems = Vec::new();
    for (what, arguments) in &cases {
        match toolbox.call_unchecked(tool, arguments, &context()).await {
            Err(CallError::InvalidArguments { message, .. }) => {
                if !message.to_lowercase().contains(SEND) {
                    problems.push(format!(
                        "for {what} ({arguments}), its message {message:?} does not say what to \
                         send instead"
                    ));
                }
            }
            Ok(output) => problems.push(format!(
                "{what} ({arguments}) were accepted: it returned {}",
                quote(&output.text)
            )),
            Err(other) => {
                if let CallError::CapabilityDenied { capability, .. } = &other {
                    denied.push(capability.clone());
                }
                problems.push(format!(
                    "{what} ({arguments}) came back as {}, not invalid_arguments: {other}",
                    other.kind()
                ));
            }
        }
    }
    let checked: Vec<&str> = cases.iter().map(|(what, _)| *what).collect();
    if problems.is_empty() {
        return CheckItem::pass(
            CheckKind::InvalidArguments,
            Some(tool),
            format!("refused, saying what to send: {}", checked.join("; ")),
        );
    }
    CheckItem::fail(
        CheckKind::InvalidArguments,
        Some(tool),
        problems.join("; "),
        "check the arguments before using them, and return invalid-arguments with a message \
         that says what to send instead (\"send {\\\"x\\\": a number}\"); the host checks them \
         against the schema, but an MCP client or another host may not",
    )
}

/// Whether a denial (`HTTP access to example.com:443`, `socket TcpConnect to 10.0.0.1:5432`)
/// is of a capability `spec` requests.
fn requested(spec: &ToolSpec, denial: &str) -> bool {
    spec.requested
        .iter()
        .any(|request| match &request.capability {
            Capability::Http(host) => {
                denial.starts_with("HTTP") && denial.contains(host.trim_start_matches("*."))
            }
            // A denial names the address connected to, a request may name a host: any
            // socket a tool requests covers its socket denials.
            Capability::Socket(_) => denial.starts_with("socket"),
            _ => false,
        })
}

fn quote(text: &str) -> String {
    let mut short: String = text.chars().take(QUOTE).collect();
    if short.len() < text.len() {
        short.push_str("...");
    }
    format!("{short:?}")
}

fn quoted(names: &[&String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

//! The conformance suite every tool component must pass, whatever its language.
//!
//! It runs over every directory of `example-tools/` that holds a tool's source (a
//! `Cargo.toml` or a `build.sh`): adding one adds it here, without editing this file. Each
//! must have a `conformance.toml` with its cases, and its component built into
//! `example-tools/dist/<directory>.wasm` (`just tools`). For every component:
//!
//! 1. describe: valid names, descriptions, and object schemas whose properties are described;
//! 2. arguments that are not JSON, that miss a required field, or that have a field of the
//!    wrong type come back as invalid-arguments from the component itself (the host's own
//!    schema check is bypassed), with a message that says what to send instead;
//! 3. its `ok` calls succeed (with the grants of its `conformance.toml`), with the text, the
//!    structured content, the parts and the progress reports and log lines each case asks for;
//! 4. its `fails` calls come back as a typed tool failure, and its `invalid` calls as
//!    invalid-arguments whose message contains the case's `expect` and says what to send;
//! 5. its `denied` calls, run with nothing granted, are refused, or, for a capability the
//!    tool can do without (one with an `expect`), succeed with a result that shows it was
//!    absent; a component whose tools request capabilities must have at least one.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use serde_json::{Value, json};
use toolhost::{CallContext, CallError, ComponentConfig, Grants, Toolbox};
use toolhost_tests::conformance::{Case, Cases, Subject, subjects};
use toolhost_tests::error::chain;
use toolhost_tests::runtime;

fn context() -> CallContext {
    CallContext {
        call_id: "conformance".into(),
        ..CallContext::default()
    }
}

async fn load(subject: &Subject, grants: Grants) -> Result<Toolbox, String> {
    let mut config = ComponentConfig::new(&subject.wasm);
    config.grants = grants;
    Toolbox::builder(&runtime())
        .component(config)
        .build()
        .await
        .map_err(|e| format!("does not load: {}", chain(&e)))
}

/// A value of another JSON type than `schema` allows.
fn wrong_type(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => json!(12345),
        Some("number" | "integer") => json!("not a number"),
        Some("boolean") => json!("not a boolean"),
        Some("array") => json!("not an array"),
        _ => json!([["not", "an"], "object"]),
    }
}

/// What every invalid-arguments message must say: what to send instead.
const SEND: &str = "send ";

fn invalid_arguments(
    result: Result<toolhost::ToolOutput, CallError>,
    what: &str,
    problems: &mut Vec<String>,
) {
    match result {
        Err(CallError::InvalidArguments { message, .. }) => {
            if !message.to_lowercase().contains(SEND) {
                problems.push(format!(
                    "{what}: the message {message:?} does not say what to {SEND}instead"
                ));
            }
        }
        Ok(output) => problems.push(format!("{what}: succeeded with {:?}", output.text)),
        Err(other) => problems.push(format!(
            "{what}: expected invalid-arguments, got {} ({other})",
            other.kind()
        )),
    }
}

/// Runs every check on `subject` and returns what is wrong with it.
async fn check(subject: &Subject) -> Vec<String> {
    if !subject.wasm.exists() {
        return vec![format!(
            "{} is not built; run `just tools` (or `just test`, which builds it)",
            subject.wasm.display()
        )];
    }
    let mut problems = Vec::new();
    let cases_file = subject.dir.join("conformance.toml");
    let cases: Cases = match std::fs::read_to_string(&cases_file) {
        Ok(text) => match toml::from_str(&text) {
            Ok(cases) => cases,
            Err(e) => return vec![format!("{} is not valid: {e}", cases_file.display())],
        },
        Err(_) => {
            return vec![format!(
                "has no {}; add one with its ok, fails and denied cases",
                cases_file.display()
            )];
        }
    };
    if !subject.wasm.exists() {
        return vec![format!(
            "{} does not exist; build it with `just tools`",
            subject.wasm.display()
        )];
    }
    let bare = match load(subject, Grants::default()).await {
        Ok(toolbox) => toolbox,
        Err(problem) => return vec![problem],
    };

    // 1. describe
    let mut requests_anything = false;
    for spec in bare.specs() {
        let tool = &spec.name;
        if spec.description.trim().len() < 10 {
            problems.push(format!(
                "{tool}: the description {:?} tells the model too little",
                spec.description
            ));
        }
        let properties = spec
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        for (property, schema) in properties.into_iter().flatten() {
            if schema
                .get("description")
                .and_then(Value::as_str)
                .is_none_or(|d| d.trim().is_empty())
            {
                problems.push(format!("{tool}: argument `{property}` has no description"));
            }
        }
        requests_anything |= !spec.requested.is_empty();

        // 2. invalid arguments, straight to the component
        invalid_arguments(
            bare.call_unchecked(tool, "this is not JSON", &context())
                .await,
            &format!("{tool} with non-JSON arguments"),
            &mut problems,
        );
        let required: Vec<&str> = spec
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !required.is_empty() {
            invalid_arguments(
                bare.call_unchecked(tool, "{}", &context()).await,
                &format!("{tool} without its required arguments"),
                &mut problems,
            );
        }
        if let Some((property, schema)) = properties.and_then(|p| p.iter().next()) {
            let mut arguments = json!({});
            for (name, schema) in properties.into_iter().flatten() {
                if required.contains(&name.as_str()) {
                    arguments[name] = example_value(schema);
                }
            }
            arguments[property] = wrong_type(schema);
            invalid_arguments(
                bare.call_unchecked(tool, &arguments.to_string(), &context())
                    .await,
                &format!("{tool} with `{property}` of the wrong type ({arguments})"),
                &mut problems,
            );
        }
    }

    // 3. and 4. with the grants of conformance.toml
    let granted = match load(subject, subject.grants(&cases)).await {
        Ok(toolbox) => toolbox,
        Err(problem) => return vec![format!("with its grants: {problem}")],
    };
    for case in &cases.ok {
        match granted
            .call(&case.tool, &case.arguments.to_string(), &context())
            .await
        {
            Ok(output) => {
                let what = format!("{} {}", case.tool, case.arguments);
                if let Some(expected) = &case.expect
                    && !output.text.contains(expected.as_str())
                {
                    problems.push(format!(
                        "{what}: {:?} does not contain {expected:?}",
                        output.text
                    ));
                }
                problems.extend(
                    parts_problems(case, &output)
                        .into_iter()
                        .map(|p| format!("{what}: {p}")),
                );
            }
            Err(error) => problems.push(format!(
                "{} {}: expected success, got {error}",
                case.tool, case.arguments
            )),
        }
    }
    for case in &cases.fails {
        match granted
            .call(&case.tool, &case.arguments.to_string(), &context())
            .await
        {
            Err(CallError::ToolFailed { .. }) => {}
            other => problems.push(format!(
                "{} {}: expected a tool failure, got {other:?}",
                case.tool, case.arguments
            )),
        }
    }

    for case in &cases.invalid {
        let what = format!("{} {}", case.tool, case.arguments);
        let result = granted
            .call(&case.tool, &case.arguments.to_string(), &context())
            .await;
        if let (Err(CallError::InvalidArguments { message, .. }), Some(expected)) =
            (&result, &case.expect)
            && !message.contains(expected.as_str())
        {
            problems.push(format!("{what}: {message:?} does not contain {expected:?}"));
        }
        invalid_arguments(result, &what, &mut problems);
    }

    // 5. refused without grants
    if requests_anything && cases.denied.is_empty() {
        problems.push("its tools request capabilities, but conformance.toml has no `denied` case to check that they are refused without them".to_owned());
    }
    for case in &cases.denied {
        let result = bare
            .call(&case.tool, &case.arguments.to_string(), &context())
            .await;
        match (result, &case.expect) {
            (Err(CallError::CapabilityDenied { .. } | CallError::ToolFailed { .. }), None) => {}
            (Ok(output), Some(expected)) if output.text.contains(expected.as_str()) => {}
            (other, _) => problems.push(format!(
                "{} {} with nothing granted: expected {}, got {other:?}",
                case.tool,
                case.arguments,
                case.expect.as_ref().map_or_else(
                    || "a refusal".to_owned(),
                    |e| format!("a result with {e:?}")
                )
            )),
        }
    }
    problems
}

/// What a successful result of `case` lacks of the parts of tool contract 0.2 the case asks
/// for: structured content, parts of the given kinds, progress reports, log lines.
fn parts_problems(case: &Case, output: &toolhost::ToolOutput) -> Vec<String> {
    let mut problems = Vec::new();
    for (field, expected) in case.structured.iter().flat_map(|s| s.as_object()).flatten() {
        let got = output.structured.as_ref().and_then(|s| s.get(field));
        if got != Some(expected) {
            let got = output
                .structured
                .as_ref()
                .map_or("none".into(), Value::to_string);
            problems.push(format!(
                "its structured content {got} has no `{field}` of {expected}"
            ));
        }
    }
    if let Some(expected) = &case.parts {
        let kinds: Vec<String> = output
            .content
            .iter()
            .map(|part| {
                serde_json::to_value(part).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        if &kinds != expected {
            problems.push(format!(
                "the result's parts are {kinds:?}, not {expected:?}"
            ));
        }
    }
    if case.progress && output.reports.progress == 0 {
        problems.push("reported no progress".to_owned());
    }
    if case.logs && output.reports.log_lines == 0 {
        problems.push("wrote no log line".to_owned());
    }
    problems
}

/// A plausible value for a required argument, so that only the field under test is wrong.
fn example_value(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => json!("text"),
        Some("number" | "integer") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        _ => json!({}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_tool_component_conforms() {
    let subjects = subjects();
    assert!(
        subjects.len() >= 8,
        "found only {:?}",
        subjects.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let mut report = Vec::new();
    for subject in &subjects {
        for problem in check(subject).await {
            report.push(format!("{}: {problem}", subject.name));
        }
    }
    assert!(
        report.is_empty(),
        "{} conformance problems:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn the_suite_covers_every_language() {
    let names: Vec<String> = subjects().into_iter().map(|s| s.name).collect();
    // Rust, Python, JavaScript, C and Go.
    for expected in [
        "calculator",
        "text-python",
        "json-js",
        "checksum-c",
        "wordcount-go",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
}

//! The conformance suite every tool component must pass, whatever its language.
//!
//! It runs over every directory of `example-tools/` that holds a tool's source (a
//! `Cargo.toml` or a `build.sh`): adding one adds it here, without editing this file. Each
//! must have a `conformance.toml` with its cases, and its component built into
//! `example-tools/dist/<directory>.wasm` (`just tools`). For every component:
//!
//! 1. and 2. `host check`'s checklist ([`toolhost::check`]), with nothing granted: describe
//!    (valid names, descriptions, object schemas whose properties are described), a call with
//!    example arguments made from each schema returns and fits the output schema, arguments
//!    that are not JSON, that miss a required field, or that have a field of the wrong type
//!    come back as invalid-arguments from the component itself (the host's own schema check
//!    is bypassed), with a message that says what to send instead, and nothing is used that
//!    was not requested;
//! 3. its `ok` calls succeed (with the grants of its `conformance.toml`), with the text, the
//!    structured content, the parts and the progress reports and log lines each case asks for;
//! 4. its `fails` calls come back as a typed tool failure, and its `invalid` calls as
//!    invalid-arguments whose message contains the case's `expect` and says what to send;
//! 5. its `denied` calls, run with nothing granted, are refused, or, for a capability the
//!    tool can do without (one with an `expect`), succeed with a result that shows it was
//!    absent; a component whose tools request capabilities must have at least one.
//!
//! Beside it: `check.rs`, `host check` on good and deliberately bad components; `new.rs`, `host
//! new` in each language, built and checked.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod check;
mod new;

use serde_json::Value;
use toolhost::check::{CheckOptions, check_component};
use toolhost::{CallContext, CallError, ComponentConfig, Grants, Toolbox};
use toolhost_tests::conformance::{Case, Subject, subjects};
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
    let cases = match subject.cases() {
        Ok(cases) => cases,
        Err(problem) => return vec![problem],
    };

    // 1. and 2.: `host check`'s checklist, nothing granted
    let checklist = check_component(
        &runtime(),
        ComponentConfig::new(&subject.wasm),
        &CheckOptions::default(),
    )
    .await;
    let mut problems: Vec<String> = checklist
        .failures()
        .map(|item| {
            format!(
                "{}{}: {} (fix: {})",
                item.tool
                    .as_deref()
                    .map(|t| format!("{t}: "))
                    .unwrap_or_default(),
                item.check,
                item.detail,
                item.fix.as_deref().unwrap_or("-")
            )
        })
        .collect();
    if !checklist.passed() {
        return problems;
    }
    let bare = match load(subject, Grants::default()).await {
        Ok(toolbox) => toolbox,
        Err(problem) => return vec![problem],
    };
    let requests_anything = bare.specs().iter().any(|spec| !spec.requested.is_empty());

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

//! Calling tools: results, argument checks, typed errors, context, concurrency.

use std::collections::BTreeMap;
use std::time::Duration;

use toolhost::sandbox::{DirGrant, LimitsConfig};
use toolhost::units::HumanDuration;
use toolhost::{CallContext, CallError, ErrorKind};
use toolhost_tests::components::{CALCULATOR, FILES, MISBEHAVE};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::load;

fn context() -> CallContext {
    CallContext::default()
}

#[tokio::test]
async fn a_valid_call_returns_the_result() {
    let toolbox = load(CALCULATOR, |_| {}).await;
    let output = toolbox
        .call("square_root", r#"{"x": 475695037565}"#, &context())
        .await
        .expect("square_root succeeds");
    assert_eq!(output.text, "689706.4865324959");
    let output = toolbox
        .call("add", r#"{"a": 2, "b": 40}"#, &context())
        .await
        .expect("add succeeds");
    assert_eq!(output.text, "42.0");
}

#[tokio::test]
async fn invalid_arguments_are_rejected_before_the_tool_runs() {
    let notes = tempfile::tempdir().expect("a temporary directory");
    let toolbox = load(FILES, |config| {
        config.grants.dirs.push(DirGrant {
            host: notes.path().to_owned(),
            guest: "/notes".into(),
            write: true,
        });
    })
    .await;
    // `text` is missing: had the tool run, it would have written /notes/hello.md.
    let error = toolbox
        .call("write_note", r#"{"title": "hello"}"#, &context())
        .await
        .expect_err("missing `text` is invalid");
    match &error {
        CallError::InvalidArguments { tool, message } => {
            assert_eq!(tool, "write_note");
            assert!(
                message.contains("\"text\" is a required property"),
                "{message}"
            );
        }
        other => panic!("expected invalid arguments, got {other:?}"),
    }
    assert_eq!(
        std::fs::read_dir(notes.path()).expect("readable").count(),
        0,
        "nothing written"
    );

    let error = toolbox
        .call("write_note", "{not json", &context())
        .await
        .expect_err("not JSON");
    assert_eq!(error.kind(), ErrorKind::InvalidArguments);
    assert_error_chain_contains(&error, "not valid JSON");

    // The same call with valid arguments does write.
    toolbox
        .call(
            "write_note",
            r#"{"title": "hello", "text": "world"}"#,
            &context(),
        )
        .await
        .expect("valid arguments succeed");
    let written = std::fs::read_to_string(notes.path().join("hello.md")).expect("the note exists");
    assert_eq!(written, "# hello\n\nworld\n");
}

#[tokio::test]
async fn a_tool_can_reject_arguments_the_schema_allows() {
    let toolbox = load(CALCULATOR, |_| {}).await;
    let error = toolbox
        .call("square_root", r#"{"x": -4}"#, &context())
        .await
        .expect_err("negative numbers have no real square root");
    assert_eq!(error.kind(), ErrorKind::InvalidArguments);
    assert_error_chain_contains(&error, "negative");
}

#[tokio::test]
async fn a_tool_error_is_reported_as_a_failure() {
    let toolbox = load(MISBEHAVE, |_| {}).await;
    let error = toolbox
        .call("fail", "{}", &context())
        .await
        .expect_err("fail fails");
    match error {
        CallError::ToolFailed { tool, message } => {
            assert_eq!(tool, "fail");
            assert_eq!(message, "it went wrong on purpose");
        }
        other => panic!("expected a tool failure, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_tool_lists_the_available_ones() {
    let toolbox = load(CALCULATOR, |_| {}).await;
    let error = toolbox
        .call("divide", "{}", &context())
        .await
        .expect_err("no divide tool");
    match &error {
        CallError::UnknownTool { name, available } => {
            assert_eq!(name, "divide");
            assert_eq!(available, &["add", "multiply", "square_root"]);
        }
        other => panic!("expected an unknown tool, got {other:?}"),
    }
    assert_error_chain_contains(&error, "add, multiply, square_root");
}

#[tokio::test]
async fn the_call_context_reaches_the_tool() {
    let toolbox = load(MISBEHAVE, |_| {}).await;
    let context = CallContext {
        call_id: "call-7".into(),
        values: BTreeMap::from([
            ("tenant".into(), "acme".into()),
            ("user".into(), "ada".into()),
        ]),
        ..CallContext::default()
    };
    let output = toolbox
        .call("context", "{}", &context)
        .await
        .expect("context succeeds");
    let value: serde_json::Value = serde_json::from_str(&output.text).expect("JSON");
    assert_eq!(
        value,
        serde_json::json!({ "call_id": "call-7", "values": { "tenant": "acme", "user": "ada" } })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_concurrently() {
    // One call computes until its CPU budget runs out; calls made meanwhile still finish
    // first, so a busy tool does not hold up the others.
    let toolbox = load(MISBEHAVE, |config| {
        config.limits = LimitsConfig {
            cpu_time: Some(HumanDuration(Duration::from_secs(3))),
            ..LimitsConfig::default()
        }
        .apply(config.limits);
    })
    .await;
    let spin_context = context();
    let spinning = toolbox.call("spin", "{}", &spin_context);
    let quick = async {
        let mut results = Vec::new();
        for _ in 0..5 {
            results.push(toolbox.call("count", "{}", &context()).await);
        }
        results
    };
    tokio::pin!(spinning);
    tokio::select! {
        biased;
        results = quick => {
            assert!(results.iter().all(|r| r.as_ref().is_ok_and(|o| o.text == "1")));
        }
        outcome = &mut spinning => panic!("spin ended before the quick calls: {outcome:?}"),
    }
    let outcome = spinning.await;
    assert_eq!(
        outcome.expect_err("spin never ends by itself").kind(),
        ErrorKind::Timeout
    );
}

//! Limits: a tool that computes forever, waits forever, eats memory, floods its result,
//! crashes or exits ends with a typed error, and the host keeps serving calls.

use std::time::Duration;

use toolhost::sandbox::LimitsConfig;
use toolhost::units::{ByteSize, HumanDuration};
use toolhost::{CallContext, CallError, TimeLimit, Toolbox};
use toolhost_tests::components::MISBEHAVE;
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::load;

fn context() -> CallContext {
    CallContext::default()
}

async fn misbehave(limits: LimitsConfig) -> Toolbox {
    load(MISBEHAVE, |config| {
        config.limits = limits.apply(config.limits)
    })
    .await
}

/// The host still answers after a failed call.
async fn still_serving(toolbox: &Toolbox) {
    let output = toolbox
        .call("count", "{}", &context())
        .await
        .expect("the host still serves calls");
    assert_eq!(output.text, "1");
}

#[tokio::test]
async fn an_endless_computation_is_stopped_by_the_cpu_budget() {
    let toolbox = misbehave(LimitsConfig {
        cpu_time: Some(HumanDuration(Duration::from_millis(300))),
        ..LimitsConfig::default()
    })
    .await;
    let error = toolbox
        .call("spin", "{}", &context())
        .await
        .expect_err("spin never returns");
    match &error {
        CallError::Timeout { tool, kind, limit } => {
            assert_eq!(tool, "spin");
            assert_eq!(*kind, TimeLimit::CpuTime);
            assert_eq!(*limit, Duration::from_millis(300));
        }
        other => panic!("expected a CPU timeout, got {other:?}"),
    }
    assert_error_chain_contains(&error, "CPU time limit is 300ms");
    still_serving(&toolbox).await;
}

#[tokio::test]
async fn waiting_too_long_is_stopped_by_the_wall_clock_timeout() {
    let toolbox = misbehave(LimitsConfig {
        timeout: Some(HumanDuration(Duration::from_millis(200))),
        ..LimitsConfig::default()
    })
    .await;
    // Sleeping uses no CPU, so only the wall-clock timeout can end it.
    let error = toolbox
        .call("sleep", r#"{"ms": 60000}"#, &context())
        .await
        .expect_err("the sleep outlasts the timeout");
    assert!(
        matches!(
            error,
            CallError::Timeout {
                kind: TimeLimit::WallClock,
                ..
            }
        ),
        "expected a wall-clock timeout, got {error:?}"
    );
    still_serving(&toolbox).await;
}

#[tokio::test]
async fn a_memory_hog_is_stopped_by_the_memory_limit() {
    let toolbox = misbehave(LimitsConfig {
        memory: Some(ByteSize(16 << 20)),
        ..LimitsConfig::default()
    })
    .await;
    let error = toolbox
        .call("hog", "{}", &context())
        .await
        .expect_err("hog never returns");
    match &error {
        CallError::MemoryLimit { tool, limit } => {
            assert_eq!(tool, "hog");
            assert_eq!(*limit, 16 << 20);
        }
        other => panic!("expected the memory limit, got {other:?}"),
    }
    assert_error_chain_contains(&error, "memory limit of 16 MiB");
    still_serving(&toolbox).await;
}

#[tokio::test]
async fn an_oversized_result_is_refused() {
    let toolbox = misbehave(LimitsConfig {
        max_result: Some(ByteSize(1000)),
        ..LimitsConfig::default()
    })
    .await;
    let output = toolbox
        .call("flood", r#"{"bytes": 1000}"#, &context())
        .await
        .expect("at the limit");
    assert_eq!(output.text.len(), 1000);
    let error = toolbox
        .call("flood", r#"{"bytes": 1001}"#, &context())
        .await
        .expect_err("over the limit");
    match error {
        CallError::ResultTooLarge { size, limit, .. } => assert_eq!((size, limit), (1001, 1000)),
        other => panic!("expected an oversized result, got {other:?}"),
    }
    still_serving(&toolbox).await;
}

#[tokio::test]
async fn a_crash_is_a_trap_with_the_panic_message() {
    let toolbox = misbehave(LimitsConfig::default()).await;
    let error = toolbox
        .call("crash", "{}", &context())
        .await
        .expect_err("crash crashes");
    match &error {
        CallError::Trap { tool, trap, stderr } => {
            assert_eq!(tool, "crash");
            assert!(trap.contains("wasm trap"), "{trap}");
            let stderr = stderr.as_deref().unwrap_or_default();
            assert!(
                stderr.contains("crashed on purpose"),
                "the panic message is kept: {stderr}"
            );
            let told = error.model_message();
            assert!(told.contains("crashed on purpose"), "{told}");
            assert!(!told.contains("wasm trap"), "{told}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    still_serving(&toolbox).await;
}

#[tokio::test]
async fn a_tool_that_exits_is_reported_with_its_status_not_as_a_crash() {
    let toolbox = misbehave(LimitsConfig::default()).await;
    for status in [0, 1] {
        let arguments = format!(r#"{{"status": {status}}}"#);
        let error = toolbox
            .call("exit", &arguments, &context())
            .await
            .expect_err("a tool that exits returns no result");
        let CallError::Exited {
            tool,
            status: reported,
            stderr,
        } = &error
        else {
            panic!("expected an exit, got {error:?}");
        };
        assert_eq!((tool.as_str(), *reported), ("exit", status));
        assert_eq!(error.kind().as_str(), "exited");
        assert_eq!(
            stderr.as_deref(),
            Some("the misbehave tool exits on purpose"),
            "why it exited is kept"
        );
        let operator = error.to_string();
        assert!(
            operator.starts_with(&format!(
                "`exit` exited with status {status} instead of returning a result"
            )),
            "{operator}"
        );
        assert!(!operator.contains("wasm backtrace"), "{operator}");
        let told = error.model_message();
        assert!(
            told.starts_with(&format!("the tool exited with status {status}"))
                && told.contains("exits on purpose"),
            "{told}"
        );
    }
    still_serving(&toolbox).await;
}

#[tokio::test]
async fn tool_output_is_captured_and_bounded() {
    let toolbox = misbehave(LimitsConfig {
        max_log: Some(ByteSize(4096)),
        ..LimitsConfig::default()
    })
    .await;
    let output = toolbox
        .call("chatter", r#"{"bytes": 100000}"#, &context())
        .await
        .expect("chatter returns despite its output");
    assert_eq!(output.text, "done");
    assert_eq!(
        output.stdout.text.len(),
        4096,
        "stdout is kept up to the limit"
    );
    assert!(output.stdout.text.starts_with("0123456789abcdef\n"));
    assert!(
        output.stdout.dropped > 90_000,
        "the rest is counted: {}",
        output.stdout.dropped
    );
    assert_eq!(output.stderr.text, "chatter done\n");
    assert_eq!(output.stderr.dropped, 0);
}

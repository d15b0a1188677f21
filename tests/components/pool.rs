//! A full instance pool: calls beyond `RuntimeConfig::max_concurrent_calls` wait for a slot
//! instead of failing, and one that waits longer than its timeout says so.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost::sandbox::LimitsConfig;
use toolhost::units::HumanDuration;
use toolhost::{CallContext, CallError, Runtime, RuntimeConfig, TimeLimit, Toolbox};
use toolhost_tests::components::MISBEHAVE;
use toolhost_tests::target_dir;

/// A runtime whose pool has `slots` instance slots.
fn runtime_with_slots(slots: u32) -> Runtime {
    Runtime::new(RuntimeConfig {
        cache_dir: Some(target_dir().join("test-compile-cache")),
        max_concurrent_calls: slots,
        ..RuntimeConfig::default()
    })
    .expect("the runtime starts")
}

async fn misbehave(runtime: &Runtime, limits: LimitsConfig) -> Toolbox {
    let mut config = toolhost::ComponentConfig::new(MISBEHAVE);
    config.limits = limits.apply(config.limits);
    config
        .grants
        .http
        .push("127.0.0.1".parse().expect("a host pattern"));
    Toolbox::builder(runtime)
        .component(config)
        .build()
        .await
        .expect("misbehave loads")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_beyond_the_pool_wait_for_a_slot_and_all_succeed() {
    let runtime = runtime_with_slots(2);
    let toolbox = misbehave(&runtime, LimitsConfig::default()).await;
    // Each call sleeps (holding its instance slot without computing), so all eight are in
    // flight at once: four times the pool's slots. Without waiting, six would fail to get an
    // instance.
    let context = CallContext::default();
    let calls = (0..8).map(|_| toolbox.call("sleep", r#"{"ms": 100}"#, &context));
    let results = futures::future::join_all(calls).await;
    for result in results {
        let output = result.expect("every call gets a slot in turn");
        assert_eq!(output.text, "awake");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_waits_past_its_timeout_says_it_never_started() {
    let runtime = runtime_with_slots(1);
    let holder = misbehave(&runtime, LimitsConfig::default()).await;
    let waiter = misbehave(
        &runtime,
        LimitsConfig {
            timeout: Some(HumanDuration(Duration::from_millis(300))),
            ..LimitsConfig::default()
        },
    )
    .await;

    // The holder's request reaches this listener, which answers only once the waiter is done:
    // meanwhile the holder keeps the only slot.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}/held", listener.local_addr().expect("bound"));
    let arguments = json!({ "address": url }).to_string();
    let holding = tokio::spawn(async move {
        holder
            .call("fetch", &arguments, &CallContext::default())
            .await
    });
    let (mut connection, _) = listener.accept().await.expect("the holder connects");

    let error = waiter
        .call("count", "{}", &CallContext::default())
        .await
        .expect_err("the only slot is held until the waiter gives up");
    match &error {
        CallError::Timeout { tool, kind, limit } => {
            assert_eq!(tool, "count");
            assert_eq!(*kind, TimeLimit::Queued);
            assert_eq!(*limit, Duration::from_millis(300));
        }
        other => panic!("expected a timeout while waiting for a slot, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains("never started"), "{message}");
    assert!(
        message.contains("RuntimeConfig::max_concurrent_calls"),
        "{message}"
    );

    let mut request = [0u8; 1024];
    let _ = connection.read(&mut request).await.expect("the request");
    connection
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nheld")
        .await
        .expect("the answer is sent");
    let output = holding
        .await
        .expect("the holder's task")
        .expect("the holder finishes once answered");
    assert_eq!(output.text, "held");
    // With the slot free again, the waiter's calls run.
    let output = waiter
        .call("count", "{}", &CallContext::default())
        .await
        .expect("a free slot");
    assert_eq!(output.text, "1");
}

/// A loop of calls that never wait (each finishes at its first poll, so the loop never
/// yields) leaves no pile of deferred work: dropping the calls' stores and making the next
/// call's spare instance take at most a few tasks, not one per call (measured before the
/// bound: +107 MB over 300,000 calculator calls).
#[tokio::test]
async fn calls_that_never_wait_leave_no_pile_of_tasks() {
    let runtime = runtime_with_slots(100);
    let toolbox = misbehave(&runtime, LimitsConfig::default()).await;
    let context = CallContext::default();
    for _ in 0..200 {
        let output = toolbox.call("count", "{}", &context).await.expect("count");
        assert_eq!(output.text, "1");
    }
    let tasks = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    assert!(tasks <= 3, "{tasks} tasks left behind by 200 calls");
}

//! What one model answer may cost: a turn of thousands of calls reads the arguments of only
//! those that may run.

use serde_json::json;
use toolhost::agent::{AgentOptions, RunOptions};
use toolhost_tests::model::{Call, Format, Turn, call, text};

use super::{ask, scripted};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_of_a_huge_turn_past_the_limit_are_refused_without_reading_them() {
    const CALLS: usize = 10_000;
    // The first 32 are good; the rest have arguments that are not JSON. Reading them would
    // set them apart as cut off by the token limit (the answer ends with `length`); unread,
    // each is refused for what it is: past the turn's limit.
    let many: Vec<Call> = (0..CALLS)
        .map(|i| {
            let arguments = if i < 32 {
                format!(r#"{{"a": {i}, "b": 1}}"#)
            } else {
                format!(r#"{{"a": {i}, "b":"#)
            };
            call(&format!("c{i}"), "add", &arguments)
        })
        .collect();
    let turns = vec![
        Turn::CutOffAfter {
            text: String::new(),
            calls: many,
        },
        text("done"),
    ];
    let (model, agent) = scripted(Format::OpenAi, false, turns, AgentOptions::default()).await;
    let (result, _) = ask(&agent, "add them all", &RunOptions::default()).await;
    let result = result.unwrap();
    assert_eq!(result.text, "done");
    assert_eq!(result.executions.len(), 32, "the first 32 ran");
    assert_eq!(result.invalid_calls.len(), CALLS - 32);
    for invalid in &result.invalid_calls {
        assert_eq!(json!(invalid.problem), "too_many_calls", "{invalid:?}");
        assert!(
            invalid.message.contains("at most 32 tool calls"),
            "{}",
            invalid.message
        );
    }
    let second = &model.bodies()[1];
    let messages = second["messages"].as_array().unwrap();
    let echoed = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["tool_calls"].as_array())
        .expect("the model's turn is in the history");
    assert_eq!(echoed.len(), CALLS);
    assert_eq!(echoed[0]["function"]["arguments"], r#"{"a": 0, "b": 1}"#);
    assert!(
        echoed[32..]
            .iter()
            .all(|c| c["function"]["arguments"] == "{}"),
        "the calls past the limit go back unread, as `{{}}`"
    );
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(results, CALLS, "every call gets a result");
}

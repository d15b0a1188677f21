//! What one model answer may cost: a turn of thousands of calls reads the arguments of only
//! those that may run, and a streamed answer is bounded as a whole, as an answer that is not
//! streamed is.

use serde_json::json;
use toolhost::agent::{Agent, AgentError, AgentOptions, RunOptions};
use toolhost::llm::{HttpOptions, ProviderError};
use toolhost_tests::model::{Call, Format, ScriptedModel, Turn, call, text};

use super::{ask, http_options, provider, scripted, toolbox};

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

/// An event stream of one tool call whose arguments come in `pieces` events of 1 MiB each.
fn arguments_in_pieces(pieces: usize) -> Vec<u8> {
    let chunk = |delta: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    };
    let arguments =
        |text: &str| json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]});
    let mut body = chunk(
        json!({"tool_calls": [{"index": 0, "id": "a", "type": "function",
        "function": {"name": "add", "arguments": "{\"a\": \""}}]}),
    );
    let piece = "x".repeat(1 << 20);
    for _ in 0..pieces {
        body.push_str(&chunk(arguments(&piece)));
    }
    body.push_str(&chunk(arguments("\", \"b\": 1}")));
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_is_bounded_as_a_whole_like_one_that_is_not_streamed() {
    let limit = 4 << 20;
    let turns = vec![Turn::Raw {
        content_type: "text/event-stream".into(),
        body: arguments_in_pieces(6),
    }];
    let model = ScriptedModel::start(Format::OpenAi, turns).await;
    let options = HttpOptions {
        max_answer_size: limit,
        max_retries: 0,
        ..http_options()
    };
    let agent = Agent::new(
        provider(Format::OpenAi, &model.base_url(), options),
        toolbox().await,
        AgentOptions {
            stream: true,
            ..AgentOptions::default()
        },
    );
    let (result, _) = ask(&agent, "add", &RunOptions::default()).await;
    let error = match result {
        Err(AgentError::Provider(error)) => error,
        other => panic!("expected the answer to be refused as too large, got {other:?}"),
    };
    assert!(
        matches!(
            error,
            ProviderError::TooLarge { what: "a streamed answer", limit: l, .. } if l == limit
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("sent a streamed answer larger than 4 MiB"),
        "{error}"
    );
    assert_eq!(model.requests().len(), 1, "refused, not retried");
}

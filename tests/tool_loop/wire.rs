//! What goes over the wire in each format: tools, calls, results, ids, tool choice, context.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolhost::agent::{AgentOptions, Conversation, RunEnd, RunOptions};
use toolhost::llm::ToolChoice;
use toolhost_tests::model::{Call, Format, call, calls, text};

use super::{MODES, ask, scripted};

/// The tool results a request sends back, as (call id, content, is_error) in order.
fn results_sent(format: Format, body: &Value) -> Vec<(String, String, bool)> {
    let messages = body["messages"].as_array().unwrap();
    match format {
        Format::OpenAi => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                (
                    m["tool_call_id"].as_str().unwrap().to_owned(),
                    m["content"].as_str().unwrap().to_owned(),
                    false,
                )
            })
            .collect(),
        Format::Anthropic => messages
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| {
                (
                    b["tool_use_id"].as_str().unwrap().to_owned(),
                    b["content"].as_str().unwrap().to_owned(),
                    b["is_error"].as_bool().unwrap_or(false),
                )
            })
            .collect(),
    }
}

/// The ids of the calls an assistant message sends back.
fn calls_sent(format: Format, body: &Value) -> Vec<(String, Value)> {
    let messages = body["messages"].as_array().unwrap();
    let assistant = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    match format {
        Format::OpenAi => assistant["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let arguments = c["function"]["arguments"].as_str().unwrap();
                (
                    c["id"].as_str().unwrap().to_owned(),
                    serde_json::from_str(arguments).unwrap(),
                )
            })
            .collect(),
        Format::Anthropic => assistant["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| (b["id"].as_str().unwrap().to_owned(), b["input"].clone()))
            .collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_goes_through_a_tool_in_every_format_and_mode() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![call("c1", "square_root", r#"{"x": 475695037565}"#)]),
            text("The square root is about 689706.486532."),
        ];
        let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let (result, streamed) = ask(
            &agent,
            "What is the square root of 475695037565?",
            &RunOptions::default(),
        )
        .await;
        let result = result.unwrap_or_else(|e| panic!("{format:?} stream={stream}: {e:#}"));
        assert_eq!(result.text, "The square root is about 689706.486532.");
        assert_eq!(result.end, RunEnd::Answered);
        assert_eq!(result.rounds, 2);
        if stream {
            assert_eq!(streamed, result.text, "the answer streamed in deltas");
        } else {
            assert!(streamed.is_empty());
        }
        assert_eq!(result.executions.len(), 1);
        let execution = &result.executions[0];
        assert_eq!(
            (execution.name.as_str(), execution.is_ok()),
            ("square_root", true)
        );
        assert_eq!(execution.output, "689706.4865324959");

        let bodies = model.bodies();
        assert_eq!(bodies.len(), 2, "{format:?} stream={stream}");
        assert_eq!(bodies[0]["stream"].as_bool().unwrap_or(false), stream);
        let tools = bodies[0]["tools"].as_array().unwrap();
        let square_root = tools
            .iter()
            .find(|t| t["name"] == "square_root" || t["function"]["name"] == "square_root")
            .expect("square_root is offered");
        let schema = match format {
            Format::OpenAi => {
                assert_eq!(square_root["type"], "function");
                &square_root["function"]["parameters"]
            }
            Format::Anthropic => &square_root["input_schema"],
        };
        assert_eq!(schema["properties"]["x"]["type"], "number");
        assert_eq!(
            results_sent(format, &bodies[1]),
            vec![("c1".to_owned(), "689706.4865324959".to_owned(), false)]
        );
        assert_eq!(
            calls_sent(format, &bodies[1]),
            vec![("c1".to_owned(), json!({"x": 475695037565u64}))]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_fragmented_calls_run_and_answer_in_call_order() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![
                call("a", "add", r#"{"a": 1.5, "b": 2}"#),
                call("m", "multiply", r#"{"a": 6, "b": 7}"#),
                call("s", "square_root", r#"{"x": 81}"#),
            ]),
            text("Done."),
        ];
        let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let (result, _) = ask(&agent, "Three sums.", &RunOptions::default()).await;
        let result = result.unwrap_or_else(|e| panic!("{format:?} stream={stream}: {e:#}"));
        let outputs: Vec<&str> = result
            .executions
            .iter()
            .map(|e| e.output.as_str())
            .collect();
        assert_eq!(outputs, ["3.5", "42.0", "9.0"]);
        let sent = results_sent(format, &model.bodies()[1]);
        let ids: Vec<&str> = sent.iter().map(|(id, _, _)| id.as_str()).collect();
        assert_eq!(ids, ["a", "m", "s"], "{format:?} stream={stream}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_empty_ids_get_stable_unique_ones() {
    for stream in [false, true] {
        let no_id = |name: &str, arguments: &str, id: Option<&str>| Call {
            id: id.map(str::to_owned),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        };
        let turns = vec![
            calls(vec![
                no_id("add", r#"{"a":1,"b":1}"#, None),
                no_id("add", r#"{"a":2,"b":2}"#, Some("")),
            ]),
            calls(vec![no_id("add", r#"{"a":3,"b":3}"#, Some(""))]),
            text("ok"),
        ];
        let (model, agent) = scripted(Format::OpenAi, stream, turns, AgentOptions::default()).await;
        let (result, _) = ask(&agent, "add", &RunOptions::default()).await;
        result.unwrap();
        let bodies = model.bodies();
        let first: Vec<String> = calls_sent(Format::OpenAi, &bodies[1])
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let answered: Vec<String> = results_sent(Format::OpenAi, &bodies[1])
            .into_iter()
            .map(|(id, _, _)| id)
            .collect();
        assert_eq!(first, answered, "each result carries its call's id");
        assert!(first.iter().all(|id| !id.is_empty()));
        assert_ne!(first[0], first[1]);
        // The ids of the first turn are sent again unchanged with the second: stable.
        let again: Vec<String> = bodies[2]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(again[..2], first[..]);
        assert!(
            !first.contains(&again[2]),
            "a later call gets a new id: {again:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_choice_is_sent_in_each_formats_shape() {
    let cases = [
        (ToolChoice::Auto, json!("auto"), json!({"type": "auto"})),
        (ToolChoice::None, json!("none"), json!({"type": "none"})),
        (
            ToolChoice::Required,
            json!("required"),
            json!({"type": "any"}),
        ),
        (
            ToolChoice::Tool("add".into()),
            json!({"type": "function", "function": {"name": "add"}}),
            json!({"type": "tool", "name": "add"}),
        ),
    ];
    for (choice, openai, anthropic) in cases {
        for format in [Format::OpenAi, Format::Anthropic] {
            let (model, agent) =
                scripted(format, false, vec![text("ok")], AgentOptions::default()).await;
            let options = RunOptions {
                tool_choice: choice.clone(),
                ..RunOptions::default()
            };
            ask(&agent, "hi", &options).await.0.unwrap();
            let expected = if format == Format::OpenAi {
                &openai
            } else {
                &anthropic
            };
            assert_eq!(
                &model.bodies()[0]["tool_choice"],
                expected,
                "{format:?} {choice:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_context_reaches_tools_and_never_the_model() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let turns = vec![calls(vec![call("ctx", "context", "{}")]), text("ok")];
        let (model, agent) = scripted(format, true, turns, AgentOptions::default()).await;
        let options = RunOptions {
            context: BTreeMap::from([("tenant".to_owned(), "tenant-7f3a".to_owned())]),
            ..RunOptions::default()
        };
        let (result, _) = ask(&agent, "who am I?", &options).await;
        let result = result.unwrap();
        let seen: Value = serde_json::from_str(&result.executions[0].output).unwrap();
        assert_eq!(
            seen,
            json!({"call_id": "ctx", "values": {"tenant": "tenant-7f3a"}})
        );
        let first = model.requests()[0].body.clone();
        assert!(
            !String::from_utf8_lossy(&first).contains("tenant-7f3a"),
            "the context is not in the prompt"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_prompt_leads_in_each_format() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let options = AgentOptions {
            system: Some("Answer in one word.".into()),
            temperature: Some(0.0),
            max_tokens: Some(64),
            ..AgentOptions::default()
        };
        let (model, agent) = scripted(format, false, vec![text("ok")], options).await;
        ask(&agent, "hi", &RunOptions::default()).await.0.unwrap();
        let body = &model.bodies()[0];
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["max_tokens"], 64);
        match format {
            Format::OpenAi => assert_eq!(
                body["messages"][0],
                json!({"role": "system", "content": "Answer in one word."})
            ),
            Format::Anthropic => {
                assert_eq!(body["system"], "Answer in one word.");
                assert_eq!(body["messages"][0]["role"], "user");
                assert_eq!(
                    model.requests()[0].header("anthropic-version"),
                    Some("2023-06-01")
                );
                assert_eq!(model.requests()[0].header("x-api-key"), Some("test-key"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_counts_are_read_in_every_format_and_mode() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![call("c1", "add", r#"{"a": 1, "b": 2}"#)]),
            text("3"),
        ];
        let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let result = ask(&agent, "1+2?", &RunOptions::default()).await.0.unwrap();
        // The scripted model counts 20 tokens in and 10 out for every answer.
        assert_eq!(
            (result.usage.input_tokens, result.usage.output_tokens),
            (40, 20),
            "{format:?} stream={stream}"
        );
        let asked = &model.bodies()[0]["stream_options"];
        if stream && format == Format::OpenAi {
            assert_eq!(asked, &json!({"include_usage": true}));
        } else {
            assert!(asked.is_null(), "{format:?} stream={stream}: {asked}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_answer_is_never_sent_back_as_an_empty_turn() {
    for stream in [false, true] {
        let turns = vec![text(""), text("Yes.")];
        let (model, agent) =
            scripted(Format::Anthropic, stream, turns, AgentOptions::default()).await;
        let mut conversation = Conversation::new();
        conversation.push_user("hi");
        let first = agent
            .run(&mut conversation, &RunOptions::default(), &mut |_| {})
            .await
            .unwrap();
        assert_eq!(first.text, "");
        conversation.push_user("are you there?");
        let second = agent
            .run(&mut conversation, &RunOptions::default(), &mut |_| {})
            .await
            .unwrap();
        assert_eq!(second.text, "Yes.");
        assert_eq!(
            model.bodies()[1]["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "text", "text": "are you there?"},
            ]}]),
            "stream={stream}: the empty turn is left out, not sent as `content: []`"
        );
    }
}

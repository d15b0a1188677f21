//! The rules of the loop: concurrency, errors as results, unknown tools, the round limit, the
//! history check, truncated calls, return-direct, tool selection, caller-controlled execution.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use toolhost::ErrorKind;
use toolhost::agent::{
    AgentError, AgentEvent, AgentOptions, Conversation, InvalidProblem, RunEnd, RunOptions, Step,
    ToolSelection, UnknownTool,
};
use toolhost::llm::Message;
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::model::{Format, Turn, call, calls, text};

use super::{ask, scripted};

/// The tool results the second request carried, by content, as the OpenAI format sends them.
fn tool_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_one_turn_run_concurrently_and_answer_in_call_order() {
    let turns = vec![
        calls(vec![
            call("slow", "sleep", r#"{"ms": 1500}"#),
            call("quick", "count", "{}"),
        ]),
        text("done"),
    ];
    let (model, agent) = scripted(Format::OpenAi, true, turns, AgentOptions::default()).await;
    let mut conversation = Conversation::new();
    conversation.push_user("go");
    let mut finished = Vec::new();
    let mut events = |event: AgentEvent<'_>| {
        if let AgentEvent::ToolFinished { execution } = event {
            finished.push(execution.call_id.clone());
        }
    };
    agent
        .run(&mut conversation, &RunOptions::default(), &mut events)
        .await
        .unwrap();
    assert_eq!(
        finished,
        ["quick", "slow"],
        "the quick call did not wait for the slow one"
    );
    assert_eq!(
        tool_messages(&model.bodies()[1]),
        ["awake", "1"],
        "results go back in call order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_go_back_to_the_model_and_the_run_goes_on() {
    let turns = vec![
        calls(vec![
            call("broken", "add", r#"{"a": 1, "b":"#),
            call("mistyped", "add", r#"{"a": "one", "b": 2}"#),
        ]),
        calls(vec![call("fixed", "add", r#"{"a": 1, "b": 2}"#)]),
        text("3"),
    ];
    let (model, agent) = scripted(Format::OpenAi, false, turns, AgentOptions::default()).await;
    let (result, _) = ask(&agent, "1+2", &RunOptions::default()).await;
    let result = result.unwrap();
    assert_eq!(result.text, "3");
    // Arguments that are not JSON are an invalid call, recorded apart; arguments that are
    // JSON but do not fit the schema are the tool's to refuse.
    assert_eq!(result.invalid_calls.len(), 1);
    assert_eq!(result.invalid_calls[0].call_id, "broken");
    assert_eq!(
        result.invalid_calls[0].problem,
        InvalidProblem::ArgumentsNotJson
    );
    assert_eq!(result.invalid_calls[0].arguments, r#"{"a": 1, "b":"#);
    let kinds: Vec<Option<ErrorKind>> = result.executions.iter().map(|e| e.error_kind()).collect();
    assert_eq!(kinds, [Some(ErrorKind::InvalidArguments), None]);

    let second = &model.bodies()[1];
    let sent = tool_messages(second);
    assert!(
        sent[0].contains("not") && sent[0].contains(r#"{"a": 1, "b":"#),
        "{}",
        sent[0]
    );
    assert!(
        sent[1].contains(r#""one" is not of type "number""#),
        "{}",
        sent[1]
    );
    // The broken arguments are never echoed back as invalid JSON.
    for call in second["messages"][1]["tool_calls"].as_array().unwrap() {
        let arguments = call["function"]["arguments"].as_str().unwrap();
        assert!(
            serde_json::from_str::<Value>(arguments).is_ok(),
            "{arguments}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_failures_become_typed_error_results() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let turns = vec![
            calls(vec![
                call("f", "fail", "{}"),
                call("c", "crash", "{}"),
                call("s", "spin", "{}"),
                call("d", "fetch", r#"{"address": "http://127.0.0.1:9/secret"}"#),
            ]),
            text("All four failed."),
        ];
        let (model, agent) = scripted(format, false, turns, AgentOptions::default()).await;
        let (result, _) = ask(&agent, "break things", &RunOptions::default()).await;
        let result = result.unwrap_or_else(|e| panic!("{format:?}: {e:#}"));
        assert_eq!(result.text, "All four failed.");
        let kinds: Vec<ErrorKind> = result
            .executions
            .iter()
            .map(|e| e.error_kind().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                ErrorKind::ToolFailed,
                ErrorKind::Trap,
                ErrorKind::Timeout,
                ErrorKind::CapabilityDenied
            ]
        );
        assert_eq!(
            result.executions[0].output,
            "the tool failed: it went wrong on purpose"
        );
        assert!(result.executions[1].output.contains("crashed on purpose"));
        assert!(
            result.executions[3]
                .output
                .contains("HTTP access to 127.0.0.1:9")
        );
        assert!(
            !result.executions[3].output.contains("--allow-http"),
            "the model is not told grant syntax: {}",
            result.executions[3].output
        );
        if format == Format::Anthropic {
            let body = &model.bodies()[1];
            let blocks = body["messages"][2]["content"].as_array().unwrap();
            assert!(blocks.iter().all(|b| b["is_error"] == true), "{blocks:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tools_are_reported_with_the_available_ones_or_end_the_run() {
    let turns = vec![
        calls(vec![call("u", "divide", r#"{"a": 1, "b": 2}"#)]),
        text("sorry"),
    ];
    let (model, agent) = scripted(Format::OpenAi, false, turns, AgentOptions::default()).await;
    let (result, _) = ask(&agent, "1/2", &RunOptions::default()).await;
    let result = result.unwrap();
    assert!(result.executions.is_empty(), "nothing ran");
    assert_eq!(result.invalid_calls[0].name, "divide");
    assert_eq!(result.invalid_calls[0].problem, InvalidProblem::NotOffered);
    let sent = &tool_messages(&model.bodies()[1])[0];
    assert!(
        sent.contains("there is no tool `divide`") && sent.contains("square_root"),
        "{sent}"
    );

    let options = AgentOptions {
        unknown_tool: UnknownTool::Fail,
        ..AgentOptions::default()
    };
    let turns = vec![calls(vec![call("u", "divide", "{}")])];
    let (_model, agent) = scripted(Format::OpenAi, false, turns, options).await;
    let error = ask(&agent, "1/2", &RunOptions::default())
        .await
        .0
        .unwrap_err();
    assert!(
        matches!(error, AgentError::UnknownTool { ref name, .. } if name == "divide"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_round_limit_ends_a_run_that_never_answers() {
    let turns: Vec<Turn> = (0..20)
        .map(|i| {
            calls(vec![call(
                &format!("c{i}"),
                "add",
                &format!(r#"{{"a": {i}, "b": 1}}"#),
            )])
        })
        .collect();
    let options = AgentOptions {
        max_rounds: 4,
        ..AgentOptions::default()
    };
    let (model, agent) = scripted(Format::Anthropic, true, turns, options).await;
    let error = ask(&agent, "count forever", &RunOptions::default())
        .await
        .0
        .unwrap_err();
    match &error {
        AgentError::RoundLimit { limit, record } => {
            assert_eq!(*limit, 4);
            assert_eq!(record.executions.len(), 4);
        }
        other => panic!("expected the round limit, got {other}"),
    }
    assert_error_chain_contains(&error, "after 4 rounds");
    assert_eq!(model.requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_a_result_stops_the_next_request() {
    let (model, agent) = scripted(
        Format::OpenAi,
        false,
        vec![text("never sent")],
        AgentOptions::default(),
    )
    .await;
    let mut conversation = Conversation::from_messages(vec![
        Message::user("hi"),
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![toolhost::llm::ToolCall {
                id: "lost".into(),
                name: "add".into(),
                arguments: "{}".into(),
            }],
        },
    ]);
    let error = agent
        .step(&mut conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(error, AgentError::UnansweredToolCall { ref id, .. } if id == "lost"),
        "{error}"
    );
    assert!(model.requests().is_empty(), "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_off_by_the_token_limit_is_never_sent_back() {
    for stream in [false, true] {
        let turns = vec![
            Turn::CutOffCall(call("cut", "add", r#"{"a": 1, "#)),
            text("never asked"),
        ];
        let options = AgentOptions {
            max_tokens: Some(8),
            ..AgentOptions::default()
        };
        let (model, agent) = scripted(Format::OpenAi, stream, turns, options).await;
        let error = ask(&agent, "add", &RunOptions::default())
            .await
            .0
            .unwrap_err();
        assert!(
            matches!(
                error,
                AgentError::Truncated {
                    max_tokens: Some(8),
                    ..
                }
            ),
            "{error}"
        );
        assert_error_chain_contains(&error, "raise max_tokens");
        assert_eq!(
            model.requests().len(),
            1,
            "the broken call was not echoed in a new request"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_return_direct_tool_answers_the_run() {
    let options = AgentOptions {
        stop_at: BTreeSet::from(["square_root".to_owned()]),
        ..AgentOptions::default()
    };
    let turns = vec![
        calls(vec![call("r", "square_root", r#"{"x": 16}"#)]),
        text("never asked"),
    ];
    let (model, agent) = scripted(Format::Anthropic, false, turns, options).await;
    let (result, _) = ask(&agent, "sqrt 16", &RunOptions::default()).await;
    let result = result.unwrap();
    assert_eq!(
        (result.text.as_str(), result.end),
        ("4.0", RunEnd::ReturnDirect)
    );
    assert_eq!(model.requests().len(), 1);

    // When the tool fails, the model gets the error as usual.
    let options = AgentOptions {
        stop_at: BTreeSet::from(["square_root".to_owned()]),
        ..AgentOptions::default()
    };
    let turns = vec![
        calls(vec![call("r", "square_root", r#"{"x": -1}"#)]),
        text("cannot"),
    ];
    let (model, agent) = scripted(Format::Anthropic, false, turns, options).await;
    let result = ask(&agent, "sqrt -1", &RunOptions::default())
        .await
        .0
        .unwrap();
    assert_eq!(
        (result.text.as_str(), result.end),
        ("cannot", RunEnd::Answered)
    );
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_offers_the_selected_tools() {
    let offered = |body: &Value| -> Vec<String> {
        body["tools"].as_array().map_or_else(Vec::new, |tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
    };
    let only = RunOptions {
        tools: ToolSelection::Only(BTreeSet::from(["add".to_owned(), "multiply".to_owned()])),
        ..RunOptions::default()
    };
    let turns = vec![
        calls(vec![call("x", "square_root", r#"{"x": 4}"#)]),
        text("ok"),
    ];
    let (model, agent) = scripted(Format::OpenAi, false, turns, AgentOptions::default()).await;
    let result = ask(&agent, "add", &only).await.0.unwrap();
    assert_eq!(offered(&model.bodies()[0]), ["add", "multiply"]);
    assert!(
        result.executions.is_empty() && result.invalid_calls[0].name == "square_root",
        "a loaded tool that was not offered is not run"
    );

    // A filter chooses per request, from the conversation.
    let filter = RunOptions {
        tools: ToolSelection::Filter(Arc::new(|spec, messages| {
            let asks_for_roots = messages
                .iter()
                .any(|m| matches!(m, Message::User { text } if text.contains("root")));
            spec.name == "square_root" && asks_for_roots
        })),
        ..RunOptions::default()
    };
    let (model, agent) = scripted(
        Format::OpenAi,
        false,
        vec![text("a"), text("b")],
        AgentOptions::default(),
    )
    .await;
    ask(&agent, "a square root please", &filter)
        .await
        .0
        .unwrap();
    ask(&agent, "hello", &filter).await.0.unwrap();
    let bodies = model.bodies();
    assert_eq!(offered(&bodies[0]), ["square_root"]);
    assert!(
        bodies[1].get("tools").is_none(),
        "no tools offered, none sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caller_can_take_the_tool_requests_and_submit_results() {
    let turns = vec![
        calls(vec![
            call("n1", "count", "{}"),
            call("n2", "add", r#"{"a": 1, "b": 1}"#),
        ]),
        text("The answer is 7."),
    ];
    let (model, agent) = scripted(Format::Anthropic, true, turns, AgentOptions::default()).await;
    let options = RunOptions::default();
    let mut conversation = Conversation::new();
    conversation.push_user("count");
    let step = agent
        .step(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    let Step::ToolCalls(requested) = step else {
        panic!("expected tool calls, got {step:?}");
    };
    assert_eq!(
        requested
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["count", "add"]
    );
    assert_eq!(conversation.pending_calls().len(), 2);

    // The caller answers the first itself, and lets toolhost run the second in the sandbox.
    conversation.submit("n1", Ok("7".into())).unwrap();
    let ran = agent
        .run_calls(&mut conversation, &requested[1..], &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(ran[0].output, "2.0");
    let step = agent
        .step(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(
        step,
        Step::Answer {
            text: "The answer is 7.".into(),
            finish: toolhost::llm::FinishReason::Stop
        }
    );
    let second = &model.bodies()[1];
    let results = second["messages"][2]["content"].as_array().unwrap();
    assert_eq!(results[0]["content"], "7");
    assert_eq!(results[1]["content"], "2.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_report_text_and_tool_activity() {
    let turns = vec![
        Turn::Calls {
            text: "Let me add.".into(),
            calls: vec![call("e", "add", r#"{"a": 2, "b": 2}"#)],
        },
        text("It is 4."),
    ];
    let (_model, agent) = scripted(Format::Anthropic, true, turns, AgentOptions::default()).await;
    let mut conversation = Conversation::new();
    conversation.push_user("2+2");
    let mut log = Vec::new();
    let mut events = |event: AgentEvent<'_>| {
        log.push(match event {
            AgentEvent::Text(text) => format!("text {text}"),
            AgentEvent::ToolStarted { call } => format!("start {}", call.name),
            AgentEvent::ToolFinished { execution } => {
                format!("done {} {}", execution.name, execution.output)
            }
            other => format!("other {other:?}"),
        });
    };
    let result = agent
        .run(&mut conversation, &RunOptions::default(), &mut events)
        .await
        .unwrap();
    let text: String = log.iter().filter_map(|l| l.strip_prefix("text ")).collect();
    assert_eq!(text, "Let me add.It is 4.");
    let tools: Vec<&String> = log.iter().filter(|l| !l.starts_with("text")).collect();
    assert_eq!(tools, ["start add", "done add 4.0"]);
    assert_eq!(result.text, "It is 4.");
    assert!(result.executions[0].duration > std::time::Duration::ZERO);
    // The conversation keeps the whole exchange, so a chat can go on.
    assert_eq!(conversation.messages().len(), 4);
}

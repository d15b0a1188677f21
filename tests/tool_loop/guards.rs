//! The loop's guards against a model that repeats itself, for every model: a repeated
//! successful call is answered from the earlier result and the model is made to answer; the
//! same call failing twice ends the run; a forced tool choice holds for the first round only.
//! Each in both wire formats, streamed and not.

use toolhost::agent::{AgentError, AgentEvent, AgentOptions, Conversation, RunEnd, RunOptions};
use toolhost::llm::ToolChoice;
use toolhost_tests::model::{call, calls, text};

use super::{MODES, scripted, sent};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_already_succeeded_is_answered_from_its_result_and_the_model_must_answer() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![call("first", "add", r#"{"a": 1234, "b": 5678}"#)]),
            // The same call, written differently: key order, spacing, 5678.0 for 5678.
            calls(vec![call("again", "add", r#"{"b":5678.0,"a":1234}"#)]),
            text("6912"),
        ];
        let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let mut conversation = Conversation::new();
        conversation.push_user("Add 1234 and 5678.");
        let mut started = Vec::new();
        let mut events = |event: AgentEvent<'_>| {
            if let AgentEvent::ToolStarted { call } = event {
                started.push(call.id.clone());
            }
        };
        let result = agent
            .run(&mut conversation, &RunOptions::default(), &mut events)
            .await
            .unwrap_or_else(|e| panic!("{format:?} {stream}: {e:#}"));
        assert_eq!(
            (result.text.as_str(), result.end),
            ("6912", RunEnd::Answered)
        );
        assert_eq!(
            started,
            ["first"],
            "{format:?} {stream}: the repeat did not run"
        );
        let repeat = &result.executions[1];
        assert_eq!(repeat.repeat_of.as_deref(), Some("first"));
        assert_eq!(repeat.output, "6912.0");

        let bodies = model.bodies();
        assert_eq!(bodies.len(), 3);
        let results = sent::results(format, &bodies[2]);
        assert_eq!(results[1].0, "again");
        assert_eq!(results[1].1, "6912.0", "the model got the earlier result");
        assert!(!sent::tools(format, &bodies[1]).is_empty());
        assert_eq!(
            sent::tools(format, &bodies[2]),
            Vec::<String>::new(),
            "{format:?} {stream}: after a repeat, no tools are offered, so the model answers"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_offered_again_after_the_answering_request() {
    // The model ignores the hint and calls a tool that was not offered; the request after
    // that offers the tools again, and the call runs.
    let turns = vec![
        calls(vec![call("a", "add", r#"{"a": 1, "b": 2}"#)]),
        calls(vec![call("b", "add", r#"{"a": 1, "b": 2}"#)]),
        calls(vec![call("c", "multiply", r#"{"a": 3, "b": 3}"#)]),
        calls(vec![call("d", "multiply", r#"{"a": 3, "b": 4}"#)]),
        text("12"),
    ];
    let (format, stream) = MODES[1];
    let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
    let (result, _) = super::ask(&agent, "go", &RunOptions::default()).await;
    let result = result.unwrap();
    assert_eq!(result.invalid_calls[0].call_id, "c", "not offered");
    assert_eq!(result.executions[2].output, "12.0");
    let offered: Vec<usize> = model
        .bodies()
        .iter()
        .map(|body| sent::tools(format, body).len())
        .collect();
    assert_eq!(offered[2], 0, "{offered:?}");
    assert!(offered[3] > 0 && offered[4] > 0, "{offered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_call_failing_twice_ends_the_run_naming_the_tool_and_its_error() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![call("f1", "square_root", r#"{"x": -4}"#)]),
            calls(vec![call("f2", "square_root", r#"{ "x": -4.0 }"#)]),
            text("never asked"),
        ];
        let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let (result, _) = super::ask(&agent, "root of -4", &RunOptions::default()).await;
        let error = result.unwrap_err();
        let AgentError::RepeatedFailure {
            tool,
            error: last,
            count,
            record,
            ..
        } = &error
        else {
            panic!("{format:?} {stream}: expected a repeated failure, got {error}");
        };
        assert_eq!((tool.as_str(), *count), ("square_root", 2));
        assert!(last.contains("negative number"), "{last}");
        assert_eq!(record.executions.len(), 2);
        let message = error.to_string();
        assert!(
            message.contains("`square_root`") && message.contains("negative number"),
            "{message}"
        );
        assert_eq!(
            model.requests().len(),
            2,
            "no request after the second failure"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_corrected_by_the_model_goes_on() {
    for (format, stream) in MODES {
        // Failing with other arguments each time is the model trying, not repeating itself.
        let turns = vec![
            calls(vec![call("f1", "square_root", r#"{"x": -4}"#)]),
            calls(vec![call("f2", "square_root", r#"{"x": -9}"#)]),
            calls(vec![call("ok", "square_root", r#"{"x": 9}"#)]),
            text("3"),
        ];
        let (_model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let (result, _) = super::ask(&agent, "root", &RunOptions::default()).await;
        let result = result.unwrap_or_else(|e| panic!("{format:?} {stream}: {e:#}"));
        assert_eq!(result.text, "3");
        assert_eq!(result.executions.len(), 3);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_tool_choice_holds_for_the_first_round_only() {
    for (format, stream) in MODES {
        for (forced, name) in [
            (ToolChoice::Tool("multiply".into()), "multiply"),
            (ToolChoice::Required, "required"),
        ] {
            let turns = vec![
                calls(vec![call("m", "multiply", r#"{"a": 6, "b": 7}"#)]),
                calls(vec![call("s", "add", r#"{"a": 42, "b": 0}"#)]),
                text("42"),
            ];
            let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
            let options = RunOptions {
                tool_choice: forced,
                ..RunOptions::default()
            };
            let (result, _) = super::ask(&agent, "6 times 7", &options).await;
            assert_eq!(result.unwrap().text, "42", "{format:?} {stream}");
            let choices: Vec<String> = model
                .bodies()
                .iter()
                .map(|body| sent::tool_choice(format, body))
                .collect();
            assert_eq!(choices, [name, "auto", "auto"], "{format:?} {stream}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_choice_of_none_holds_for_every_round() {
    let (format, stream) = MODES[2];
    let turns = vec![
        calls(vec![call("a", "add", r#"{"a": 1, "b": 1}"#)]),
        text("2"),
    ];
    let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
    let options = RunOptions {
        tool_choice: ToolChoice::None,
        ..RunOptions::default()
    };
    super::ask(&agent, "1+1", &options).await.0.unwrap();
    let choices: Vec<String> = model
        .bodies()
        .iter()
        .map(|body| sent::tool_choice(format, body))
        .collect();
    assert_eq!(choices, ["none", "none"]);
}

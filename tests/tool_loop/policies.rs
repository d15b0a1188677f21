//! What the loop does with tool results, per tool and per turn: `on_error = "fail_run"`,
//! `stop_at`, `max_parallel_calls`, invalid calls recorded apart, and "Success" for a tool
//! that returns nothing. In both wire formats, streamed and not.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use toolhost::agent::{Agent, AgentError, AgentOptions, InvalidProblem, RunEnd, RunOptions};
use toolhost::{
    Arguments, CallContext, CallError, Origin, SourceOptions, ToolOutput, ToolSource, ToolSpec,
    Toolbox,
};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::model::{Call, Format, ScriptedModel, Turn, call, calls, text};
use toolhost_tests::runtime;

use super::{MODES, ask, http_options, provider, scripted, sent};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fail_run_tool_ends_the_run_with_its_error() {
    for (format, stream) in MODES {
        let options = AgentOptions {
            fail_run: BTreeSet::from(["square_root".to_owned()]),
            ..AgentOptions::default()
        };
        let turns = vec![
            calls(vec![
                call("ok", "add", r#"{"a": 1, "b": 1}"#),
                call("bad", "square_root", r#"{"x": -1}"#),
            ]),
            text("never asked"),
        ];
        let (model, agent) = scripted(format, stream, turns, options).await;
        let error = ask(&agent, "go", &RunOptions::default())
            .await
            .0
            .unwrap_err();
        let AgentError::ToolFailed {
            tool,
            error: message,
            ..
        } = &error
        else {
            panic!("{format:?} {stream}: expected the tool's failure, got {error}");
        };
        assert_eq!(tool, "square_root");
        assert!(message.contains("negative number"), "{message}");
        assert_error_chain_contains(&error, "on_error");
        assert_eq!(
            error.executions().len(),
            2,
            "both calls ran and are recorded"
        );
        assert_eq!(model.requests().len(), 1, "the model never sees the error");

        // Other tools' errors still go to the model.
        let turns = vec![calls(vec![call("other", "fail", "{}")]), text("It failed.")];
        let options = AgentOptions {
            fail_run: BTreeSet::from(["square_root".to_owned()]),
            ..AgentOptions::default()
        };
        let (_model, agent) = scripted(format, stream, turns, options).await;
        let result = ask(&agent, "go", &RunOptions::default()).await.0.unwrap();
        assert_eq!(result.text, "It failed.");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_at_tool_answers_the_run_with_its_result() {
    for (format, stream) in MODES {
        let options = AgentOptions {
            stop_at: BTreeSet::from(["multiply".to_owned()]),
            ..AgentOptions::default()
        };
        let turns = vec![
            calls(vec![call("a", "add", r#"{"a": 1, "b": 2}"#)]),
            // Alongside another call: the turn's calls all run, then the run stops.
            calls(vec![
                call("m", "multiply", r#"{"a": 6, "b": 7}"#),
                call("s", "square_root", r#"{"x": 9}"#),
            ]),
            text("never asked"),
        ];
        let (model, agent) = scripted(format, stream, turns, options).await;
        let result = ask(&agent, "go", &RunOptions::default()).await.0.unwrap();
        assert_eq!(
            (result.text.as_str(), result.end),
            ("42.0", RunEnd::ReturnDirect),
            "{format:?} {stream}"
        );
        assert_eq!(result.executions.len(), 3);
        assert_eq!(model.requests().len(), 2);
    }
}

/// A native tool source whose `wait` tool records how many of its calls run at once. Each
/// call waits until `together` calls are running (or every call of the test has started),
/// so calls that may overlap do, whatever the timing.
struct Overlap {
    origin: Origin,
    together: usize,
    total: usize,
    started: AtomicUsize,
    running: AtomicUsize,
    most: AtomicUsize,
    changed: tokio::sync::Notify,
}

impl Overlap {
    fn new(together: usize, total: usize) -> Self {
        Self {
            origin: Origin::Native {
                name: "overlap".into(),
            },
            together,
            total,
            started: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            changed: tokio::sync::Notify::new(),
        }
    }
}

impl ToolSource for Overlap {
    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "wait".into(),
            description: "Waits for company.".into(),
            input_schema: json!({ "type": "object", "properties": { "n": { "type": "integer" } } }),
            output_schema: None,
            requested: Vec::new(),
            annotations: Default::default(),
        }]
    }

    fn call<'a>(
        &'a self,
        _tool: &'a str,
        _arguments: &'a Arguments,
        _context: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
        Box::pin(async move {
            self.started.fetch_add(1, Ordering::SeqCst);
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            self.changed.notify_waiters();
            loop {
                let changed = self.changed.notified();
                if self.running.load(Ordering::SeqCst) >= self.together
                    || self.started.load(Ordering::SeqCst) >= self.total
                {
                    break;
                }
                changed.await;
            }
            // Every call holds its place until all have started or the cap kept them out.
            tokio::task::yield_now().await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            self.changed.notify_waiters();
            Ok(ToolOutput::text("done", Duration::ZERO))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_parallel_calls_caps_the_calls_running_at_once() {
    for (cap, expected) in [(Some(2), 2), (Some(1), 1), (None, 5)] {
        let (format, stream) = MODES[(expected + 1) % 4];
        let together = cap.unwrap_or(5);
        let source = Arc::new(Overlap::new(together, 5));
        let toolbox = Toolbox::builder(&runtime())
            .source(source.clone(), SourceOptions::default())
            .build()
            .await
            .unwrap();
        let turn: Vec<Call> = (0..5)
            .map(|i| call(&format!("w{i}"), "wait", &format!(r#"{{"n": {i}}}"#)))
            .collect();
        let model = ScriptedModel::start(format, vec![calls(turn), text("all done")]).await;
        let agent = Agent::new(
            provider(format, &model.base_url(), http_options()),
            Arc::new(toolbox),
            AgentOptions {
                stream,
                max_parallel_calls: cap.and_then(NonZeroUsize::new),
                ..AgentOptions::default()
            },
        );
        let options = RunOptions::default();
        let run = ask(&agent, "wait", &options);
        let (result, _) = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .unwrap_or_else(|_| panic!("cap {cap:?}: the calls never got {together} together"));
        assert_eq!(result.unwrap().executions.len(), 5);
        assert_eq!(
            source.most.load(Ordering::SeqCst),
            expected,
            "cap {cap:?}: the most calls running at once"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_calls_are_recorded_on_the_result_apart_from_executed_ones() {
    for (format, stream) in MODES {
        // Anthropic's whole (not streamed) answers carry arguments as a JSON object, so they
        // cannot be broken JSON, nor cut off.
        let broken_possible = format == Format::OpenAi || stream;
        let mut first = vec![
            call("ghost", "divide", r#"{"a": 1, "b": 2}"#),
            call("fine", "add", r#"{"a": 1, "b": 2}"#),
        ];
        if broken_possible {
            first.push(call("broken", "add", r#"{"a": 1,, "b": 2}"#));
        }
        let mut turns = vec![calls(first)];
        if broken_possible {
            turns.push(Turn::CutOffAfter {
                text: String::new(),
                calls: vec![
                    call("whole", "multiply", r#"{"a": 2, "b": 3}"#),
                    call("cut", "multiply", r#"{"a": 2, "#),
                ],
            });
        }
        turns.push(text("done"));
        let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let result = ask(&agent, "go", &RunOptions::default())
            .await
            .0
            .unwrap_or_else(|e| panic!("{format:?} {stream}: {e:#}"));
        let invalid: Vec<(&str, InvalidProblem)> = result
            .invalid_calls
            .iter()
            .map(|c| (c.call_id.as_str(), c.problem))
            .collect();
        let executed: Vec<&str> = result
            .executions
            .iter()
            .map(|e| e.call_id.as_str())
            .collect();
        if broken_possible {
            assert_eq!(
                invalid,
                [
                    ("ghost", InvalidProblem::NotOffered),
                    ("broken", InvalidProblem::ArgumentsNotJson),
                    ("cut", InvalidProblem::CutOff),
                ],
                "{format:?} {stream}"
            );
            assert_eq!(executed, ["fine", "whole"]);
            assert_eq!(result.invalid_calls[1].arguments, r#"{"a": 1,, "b": 2}"#);
            // The cut call is never sent back; the others are answered with what was wrong.
            let last = model.bodies().pop().unwrap();
            let ids: Vec<String> = sent::results(format, &last)
                .into_iter()
                .map(|r| r.0)
                .collect();
            assert_eq!(ids, ["ghost", "fine", "broken", "whole"]);
            assert!(!last.to_string().contains(r#""cut""#));
        } else {
            assert_eq!(invalid, [("ghost", InvalidProblem::NotOffered)]);
            assert_eq!(executed, ["fine"]);
        }
        let ghost = &sent::results(format, &model.bodies()[1])[0];
        assert!(ghost.1.contains("there is no tool `divide`"), "{}", ghost.1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_call_alone_fails_the_run_and_is_recorded_on_the_error() {
    let turns = vec![Turn::CutOffCall(call("cut", "add", r#"{"a": 1, "#))];
    let options = AgentOptions {
        max_tokens: Some(8),
        ..AgentOptions::default()
    };
    let (_model, agent) = scripted(Format::OpenAi, true, turns, options).await;
    let error = ask(&agent, "add", &RunOptions::default())
        .await
        .0
        .unwrap_err();
    assert!(matches!(error, AgentError::Truncated { .. }), "{error}");
    let invalid = error.invalid_calls();
    assert_eq!(invalid.len(), 1);
    assert_eq!(
        (invalid[0].call_id.as_str(), invalid[0].problem),
        ("cut", InvalidProblem::CutOff)
    );
    assert_eq!(invalid[0].arguments, r#"{"a": 1, "#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_returns_nothing_tells_the_model_success() {
    for (format, stream) in MODES {
        let turns = vec![calls(vec![call("n", "nothing", "{}")]), text("Done.")];
        let (model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
        let result = ask(&agent, "do it", &RunOptions::default())
            .await
            .0
            .unwrap();
        assert_eq!(result.executions[0].output, "Success");
        let sent = sent::results(format, &model.bodies()[1]);
        assert_eq!(sent[0].1, "Success", "{format:?} {stream}");
    }
    // The SDK sends nothing for `()`, and the tool declares no output schema.
    let toolbox = super::toolbox().await;
    let spec = toolbox.spec("nothing").unwrap();
    assert_eq!(spec.output_schema, None);
    let output = toolbox
        .call("nothing", "{}", &CallContext::default())
        .await
        .unwrap();
    assert_eq!(output.text, "");
}

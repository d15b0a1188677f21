//! Asking before acting, in the library: a run pauses with the calls that need approval,
//! its conversation (paused run included) goes through JSON, and it resumes with approve,
//! reject (with a reason) or always-for-this-run per call. In both wire formats, streamed and
//! not.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use toolhost::agent::{
    Agent, AgentError, AgentEvent, AgentOptions, Approval, ApprovalMode, ApprovalRules, AskFor,
    Conversation, FORMAT_VERSION, FormatError, Outcome, RunEnd, RunOptions, RunResult,
};
use toolhost::sandbox::{HostPattern, LimitsConfig};
use toolhost::{ComponentConfig, Grants, Toolbox};
use toolhost_tests::components::{CALCULATOR, MISBEHAVE};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::runtime;

use super::{MODES, http_options, provider, scripted, sent};

/// Options where every call of `tools` waits for approval.
fn approve(tools: &[&str]) -> AgentOptions {
    AgentOptions {
        approval: ApprovalRules {
            tools: tools
                .iter()
                .map(|t| (t.to_string(), ApprovalMode::Always))
                .collect(),
            ask_for: BTreeSet::new(),
        },
        ..AgentOptions::default()
    }
}

/// Runs `conversation` on `agent`, returning the result and the ids of the calls started.
async fn go(
    agent: &Agent,
    conversation: &mut Conversation,
    options: &RunOptions,
    resume: bool,
) -> (Result<RunResult, AgentError>, Vec<String>) {
    let mut started = Vec::new();
    let mut events = |event: AgentEvent<'_>| {
        if let AgentEvent::ToolStarted { call } = event {
            started.push(call.id.clone());
        }
    };
    let result = if resume {
        agent.resume(conversation, options, &mut events).await
    } else {
        agent.run(conversation, options, &mut events).await
    };
    (result, started)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pauses_and_resumes_in_another_agent_across_a_json_round_trip() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![
                call("c1", "add", r#"{"a": 1, "b": 2}"#),
                call("c2", "multiply", r#"{"a": 2, "b": 3}"#),
            ]),
            text("3 and 6"),
        ];
        let (model, agent) = scripted(format, stream, turns, approve(&["add"])).await;
        let options = RunOptions::default();
        let mut conversation = Conversation::new();
        conversation.push_user("1+2, 2*3");
        let (result, started) = go(&agent, &mut conversation, &options, false).await;
        let result = result.unwrap_or_else(|e| panic!("{format:?} {stream}: {e:#}"));
        assert_eq!(result.end, RunEnd::Paused);
        assert_eq!(result.pending.len(), 1);
        let pending = &result.pending[0];
        assert_eq!(
            (pending.call_id.as_str(), pending.tool.as_str()),
            ("c1", "add")
        );
        assert_eq!(
            pending.arguments_json(),
            Some(serde_json::json!({"a": 1, "b": 2}))
        );
        assert!(
            matches!(&pending.origin, Some(toolhost::Origin::Component { name, .. }) if name == "calculator"),
            "{pending:?}"
        );
        assert!(started.is_empty(), "nothing runs while the turn waits");
        assert_eq!(model.requests().len(), 1);

        // The paused run goes through JSON, and resumes with another agent (as another
        // process would) talking to the same model.
        let saved = serde_json::to_string(&conversation).unwrap();
        drop(conversation);
        let mut conversation = Conversation::from_json(&saved).unwrap();
        assert_eq!(conversation.pending_approvals().len(), 1);
        conversation.approve("c1").unwrap();
        let other = Agent::new(
            provider(format, &model.base_url(), http_options()),
            super::toolbox().await,
            AgentOptions {
                stream,
                ..approve(&["add"])
            },
        );
        let (result, started) = go(&other, &mut conversation, &options, true).await;
        let result = result.unwrap_or_else(|e| panic!("{format:?} {stream}: {e:#}"));
        assert_eq!(
            (result.text.as_str(), result.end),
            ("3 and 6", RunEnd::Answered)
        );
        assert_eq!(started, ["c1", "c2"]);
        let approvals: Vec<Approval> = result.executions.iter().map(|e| e.approval).collect();
        assert_eq!(approvals, [Approval::Approved, Approval::NotRequired]);
        let results = sent::results(format, &model.bodies()[1]);
        let contents: Vec<&str> = results.iter().map(|r| r.1.as_str()).collect();
        assert_eq!(contents, ["3.0", "6.0"], "{format:?} {stream}");
        assert!(conversation.paused_run().is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_call_reaches_the_model_as_a_rejection_with_its_reason() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![call("w", "add", r#"{"a": 5, "b": 5}"#)]),
            text("Understood, I did not add them."),
        ];
        let (model, agent) = scripted(format, stream, turns, approve(&["add"])).await;
        let options = RunOptions::default();
        let mut conversation = Conversation::new();
        conversation.push_user("5+5");
        let (result, _) = go(&agent, &mut conversation, &options, false).await;
        assert_eq!(result.unwrap().end, RunEnd::Paused);
        conversation
            .reject("w", "adding is not allowed today")
            .unwrap();
        let (result, started) = go(&agent, &mut conversation, &options, true).await;
        let result = result.unwrap();
        assert!(started.is_empty(), "a rejected call does not run");
        assert_eq!(result.text, "Understood, I did not add them.");
        let execution = &result.executions[0];
        assert_eq!(execution.approval, Approval::Rejected);
        assert_eq!(
            execution.outcome,
            Outcome::Rejected {
                reason: "adding is not allowed today".into()
            }
        );
        let (id, content, is_error) = sent::results(format, &model.bodies()[1]).pop().unwrap();
        assert_eq!(id, "w");
        assert!(
            content.contains("not approved") && content.contains("adding is not allowed today"),
            "{content}"
        );
        if format == Format::Anthropic {
            assert!(is_error, "sent as an error result");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_for_this_run_approves_the_tool_until_the_run_ends() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![
                call("a1", "add", r#"{"a": 1, "b": 1}"#),
                call("a2", "add", r#"{"a": 2, "b": 2}"#),
            ]),
            calls(vec![call("a3", "add", r#"{"a": 3, "b": 3}"#)]),
            text("2, 4, 6"),
            // The next run asks again.
            calls(vec![call("a4", "add", r#"{"a": 4, "b": 4}"#)]),
        ];
        let (_model, agent) = scripted(format, stream, turns, approve(&["add"])).await;
        let options = RunOptions::default();
        let mut conversation = Conversation::new();
        conversation.push_user("add some");
        let (result, _) = go(&agent, &mut conversation, &options, false).await;
        assert_eq!(result.unwrap().pending.len(), 2);
        conversation.approve_for_run("a1").unwrap();
        assert!(
            conversation.pending_approvals().is_empty(),
            "the other pending call of the tool is approved with it"
        );
        let (result, started) = go(&agent, &mut conversation, &options, true).await;
        let result = result.unwrap_or_else(|e| panic!("{format:?} {stream}: {e:#}"));
        assert_eq!(result.end, RunEnd::Answered, "no second pause");
        assert_eq!(started, ["a1", "a2", "a3"]);
        assert!(
            result
                .executions
                .iter()
                .all(|e| e.approval == Approval::ApprovedForRun && e.is_ok())
        );

        conversation.push_user("once more");
        let (result, _) = go(&agent, &mut conversation, &options, false).await;
        assert_eq!(
            result.unwrap().end,
            RunEnd::Paused,
            "{format:?} {stream}: a new run asks again"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_predicate_over_the_call_decides_which_calls_wait() {
    let (format, stream) = MODES[3];
    let turns = vec![
        calls(vec![
            call("small", "add", r#"{"a": 1, "b": 2}"#),
            call("large", "add", r#"{"a": 1000000, "b": 2}"#),
        ]),
        text("ok"),
    ];
    let (_model, agent) = scripted(format, stream, turns, AgentOptions::default()).await;
    let options = RunOptions {
        needs_approval: Some(Arc::new(|call| {
            call.arguments_json()
                .and_then(|args| args["a"].as_f64())
                .is_some_and(|a| a > 1000.0)
        })),
        ..RunOptions::default()
    };
    let mut conversation = Conversation::new();
    conversation.push_user("add");
    let (result, _) = go(&agent, &mut conversation, &options, false).await;
    let pending: Vec<String> = result
        .unwrap()
        .pending
        .iter()
        .map(|p| p.call_id.clone())
        .collect();
    assert_eq!(pending, ["large"]);
    // Still undecided: resuming leaves it paused.
    let (result, started) = go(&agent, &mut conversation, &options, true).await;
    assert_eq!(result.unwrap().end, RunEnd::Paused);
    assert!(started.is_empty());
    // A new run cannot start over a paused one.
    let error = go(&agent, &mut conversation, &options, false)
        .await
        .0
        .unwrap_err();
    assert!(matches!(error, AgentError::RunPaused { .. }), "{error}");
    conversation.approve("large").unwrap();
    let (result, started) = go(&agent, &mut conversation, &options, true).await;
    assert_eq!(result.unwrap().end, RunEnd::Answered);
    assert_eq!(started, ["small", "large"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_asks_for_tools_by_what_they_hold_and_shows_it() {
    let mut misbehave = ComponentConfig::new(MISBEHAVE);
    misbehave.grants = Grants {
        http: vec!["127.0.0.1:9".parse::<HostPattern>().unwrap()],
        ..Grants::default()
    };
    misbehave.limits = LimitsConfig::default().apply(misbehave.limits);
    let toolbox = Toolbox::builder(&runtime())
        .components([ComponentConfig::new(CALCULATOR), misbehave])
        .build()
        .await
        .unwrap();
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![
                call("sum", "add", r#"{"a": 1, "b": 2}"#),
                call("net", "count", "{}"),
            ]),
            text("ok"),
        ],
    )
    .await;
    let options = AgentOptions {
        approval: ApprovalRules {
            tools: BTreeMap::new(),
            ask_for: BTreeSet::from([AskFor::Http, AskFor::WriteDir]),
        },
        ..AgentOptions::default()
    };
    let agent = Agent::new(
        provider(Format::OpenAi, &model.base_url(), http_options()),
        Arc::new(toolbox),
        options,
    );
    let mut conversation = Conversation::new();
    conversation.push_user("go");
    let (result, _) = go(&agent, &mut conversation, &RunOptions::default(), false).await;
    let result = result.unwrap();
    assert_eq!(result.pending.len(), 1, "{:?}", result.pending);
    let pending = &result.pending[0];
    assert_eq!(
        pending.tool, "count",
        "the tool holding an HTTP grant waits"
    );
    assert_eq!(pending.holdings(), ["http 127.0.0.1:9"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_name_pending_calls_and_saved_conversations_are_checked() {
    let turns = vec![calls(vec![call("p", "add", r#"{"a": 1, "b": 2}"#)])];
    let (_model, agent) = scripted(Format::OpenAi, false, turns, approve(&["add"])).await;
    let mut conversation = Conversation::new();
    conversation.push_user("add");
    go(&agent, &mut conversation, &RunOptions::default(), false)
        .await
        .0
        .unwrap();
    let error = conversation.approve("nope").unwrap_err();
    assert!(
        matches!(error, AgentError::NoSuchPendingCall { .. }),
        "{error}"
    );

    let error = Conversation::new().approve("p").unwrap_err();
    assert!(
        matches!(error, AgentError::NoSuchPendingCall { .. }),
        "{error}"
    );
    let error = agent
        .resume(
            &mut Conversation::new(),
            &RunOptions::default(),
            &mut |_| {},
        )
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::NothingToResume), "{error}");

    // Another version, a damaged file, something else: each a clear error.
    let saved = serde_json::to_value(&conversation).unwrap();
    assert_eq!(saved["version"], FORMAT_VERSION);
    let mut newer = saved.clone();
    newer["version"] = (FORMAT_VERSION + 1).into();
    let error = Conversation::from_json(&newer.to_string()).unwrap_err();
    assert!(
        matches!(error, FormatError::Version { found } if found == FORMAT_VERSION + 1),
        "{error}"
    );
    assert_error_chain_contains(&error, "newer");
    let text = saved.to_string();
    let error = Conversation::from_json(&text[..text.len() / 2]).unwrap_err();
    assert!(matches!(error, FormatError::NotJson(_)), "{error}");
    let error = Conversation::from_json(r#"{"messages": []}"#).unwrap_err();
    assert!(matches!(error, FormatError::NoVersion), "{error}");
    let mut broken = saved.clone();
    broken["messages"][0]["role"] = "narrator".into();
    let error = Conversation::from_json(&broken.to_string()).unwrap_err();
    assert!(matches!(error, FormatError::Damaged(_)), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_skipped_for_calls_answered_without_running() {
    // A repeat of an approved call is answered from its result: nobody is asked again.
    let turns = vec![
        calls(vec![call("first", "add", r#"{"a": 1, "b": 2}"#)]),
        calls(vec![call("again", "add", r#"{"a": 1, "b": 2}"#)]),
        text("3"),
    ];
    let (_model, agent) = scripted(Format::Anthropic, true, turns, approve(&["add"])).await;
    let options = RunOptions::default();
    let mut conversation = Conversation::new();
    conversation.push_user("1+2");
    go(&agent, &mut conversation, &options, false)
        .await
        .0
        .unwrap();
    conversation.approve("first").unwrap();
    let result = go(&agent, &mut conversation, &options, true)
        .await
        .0
        .unwrap();
    assert_eq!(result.end, RunEnd::Answered);
    assert_eq!(result.executions[1].repeat_of.as_deref(), Some("first"));
}

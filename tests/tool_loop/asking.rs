//! Tools that ask for input before they can finish (contract 0.2's `input-required`), in the
//! loop: the library pauses the run like an approval, the paused run goes through JSON, and
//! the call runs again with the answers, as often as the tool asks; `host run` asks the
//! person at the terminal with a form (a real pseudo-terminal), and says why it cannot
//! without one.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::agent::{
    Agent, AgentErrorKind, AgentOptions, Conversation, Outcome, RunEnd, RunOptions, RunResult,
};
use toolhost::{ComponentConfig, ErrorKind, Toolbox};
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::components::{CALCULATOR, MCP_CONFORMANCE};
use toolhost_tests::model::{Format, ScriptedModel, Turn, call, calls, text};
use toolhost_tests::runtime;

use super::{MODES, http_options, provider, sent};
use crate::approve_cli::OnTerminal;

/// The calculator, and the conformance guest, whose `test_input_required_result_*` tools
/// ask.
async fn toolbox() -> Arc<Toolbox> {
    let configs = vec![
        ComponentConfig::new(CALCULATOR),
        ComponentConfig::new(MCP_CONFORMANCE),
    ];
    Arc::new(
        Toolbox::builder(&runtime())
            .components(configs)
            .build()
            .await
            .unwrap(),
    )
}

async fn agent(format: Format, stream: bool, turns: Vec<Turn>) -> (ScriptedModel, Agent) {
    let model = ScriptedModel::start(format, turns).await;
    let agent = Agent::new(
        provider(format, &model.base_url(), http_options()),
        toolbox().await,
        AgentOptions {
            stream,
            ..AgentOptions::default()
        },
    );
    (model, agent)
}

/// The conversation through JSON, as another process would take it up.
fn round_trip(conversation: &Conversation) -> Conversation {
    let saved = serde_json::to_string(conversation).unwrap();
    Conversation::from_json(&saved).unwrap()
}

/// An elicitation's answer to request `key`: accepted, with `content`.
fn accepted(key: &str, content: Value) -> BTreeMap<String, Value> {
    BTreeMap::from([(
        key.to_owned(),
        json!({ "action": "accept", "content": content }),
    )])
}

async fn resume(agent: &Agent, conversation: &mut Conversation) -> RunResult {
    agent
        .resume(conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pauses_for_each_question_and_the_tool_finishes_with_the_answers() {
    for (format, stream) in MODES {
        let turns = vec![
            calls(vec![
                call("c1", "test_input_required_result_multi_round", "{}"),
                call("c2", "add", r#"{"a": 1, "b": 2}"#),
            ]),
            text("Ann likes blue, and 1 + 2 = 3."),
        ];
        let (model, agent) = agent(format, stream, turns).await;
        let mut conversation = Conversation::new();
        conversation.push_user("Ask me two things, and add 1 and 2.");
        let result = agent
            .run(&mut conversation, &RunOptions::default(), &mut |_| {})
            .await
            .unwrap_or_else(|e| panic!("{format:?} {stream}: {e:#}"));
        assert_eq!(result.end, RunEnd::Paused);
        assert!(result.pending.is_empty(), "no approval is involved");
        let asking = &result.asking[0];
        assert_eq!(
            (asking.call_id.as_str(), asking.tool.as_str()),
            ("c1", "test_input_required_result_multi_round")
        );
        let question = &asking.requests["step1"];
        assert_eq!(question.method, "elicitation/create");
        assert_eq!(question.params["message"], "Step 1: What is your name?");
        assert_eq!(
            model.requests().len(),
            1,
            "the model waits for both results"
        );

        // Answered in "another process"; the tool asks a second question, with its state.
        let mut conversation = round_trip(&conversation);
        assert_eq!(conversation.asking_calls().len(), 1);
        conversation
            .answer_input("c1", accepted("step1", json!({"name": "Ann"})))
            .unwrap();
        let result = resume(&agent, &mut conversation).await;
        assert_eq!(result.end, RunEnd::Paused);
        let question = &result.asking[0].requests["step2"];
        assert_eq!(
            question.params["message"],
            "Step 2: What is your favorite color?"
        );
        assert_eq!(model.requests().len(), 1);

        let mut conversation = round_trip(&conversation);
        conversation
            .answer_input("c1", accepted("step2", json!({"color": "blue"})))
            .unwrap();
        let result = resume(&agent, &mut conversation).await;
        assert_eq!(
            (result.text.as_str(), result.end),
            ("Ann likes blue, and 1 + 2 = 3.", RunEnd::Answered)
        );
        let bodies = model.bodies();
        assert_eq!(bodies.len(), 2);
        let results = sent::results(format, &bodies[1]);
        let contents: Vec<(&str, &str)> = results
            .iter()
            .map(|(id, content, _)| (id.as_str(), content.as_str()))
            .collect();
        assert_eq!(contents, [("c1", "Ann likes blue"), ("c2", "3.0")]);
        // The add ran once, in the first pass, and the asking call's last round finished.
        assert_eq!(result.executions.len(), 2, "{:?}", result.executions);
        assert!(result.executions.iter().all(|e| e.outcome == Outcome::Ok));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_ends_the_call_with_an_error_the_model_reads() {
    let (format, stream) = (Format::Anthropic, true);
    let turns = vec![
        calls(vec![call(
            "c1",
            "test_input_required_result_elicitation",
            "{}",
        )]),
        text("I could not ask you."),
    ];
    let (model, agent) = agent(format, stream, turns).await;
    let mut conversation = Conversation::new();
    conversation.push_user("Greet me.");
    let result = agent
        .run(&mut conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(result.end, RunEnd::Paused);
    conversation.refuse_input("c1", "the user is away").unwrap();
    let result = resume(&agent, &mut conversation).await;
    assert_eq!(result.end, RunEnd::Answered);
    let execution = &result.executions[0];
    match &execution.outcome {
        Outcome::Error { kind, message } => {
            assert_eq!(*kind, ErrorKind::InputRequired);
            assert!(message.contains("the user is away"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let results = sent::results(format, &model.bodies()[1]);
    assert!(results[0].2, "sent as an error: {results:?}");
    assert!(results[0].1.contains("the user is away"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_call_cannot_take_is_refused_and_the_run_stays_paused() {
    let turns = vec![calls(vec![call(
        "c1",
        "test_input_required_result_elicitation",
        "{}",
    )])];
    let (_model, agent) = agent(Format::OpenAi, false, turns).await;
    let mut conversation = Conversation::new();
    conversation.push_user("Greet me.");
    agent
        .run(&mut conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap();
    let not_an_object = BTreeMap::from([("user_name".to_owned(), json!("Ann"))]);
    let error = conversation.answer_input("c1", not_an_object).unwrap_err();
    assert_eq!(error.kind(), AgentErrorKind::InvalidInputAnswer);
    assert!(
        error.to_string().contains("must be a JSON object"),
        "{error}"
    );
    let unknown_key = accepted("name", json!({"name": "Ann"}));
    let error = conversation.answer_input("c1", unknown_key).unwrap_err();
    assert!(error.to_string().contains("user_name"), "{error}");
    let error = conversation
        .answer_input("nope", BTreeMap::new())
        .unwrap_err();
    assert_eq!(error.kind(), AgentErrorKind::NoSuchPendingCall);
    assert_eq!(conversation.asking_calls().len(), 1, "still waiting");
}

/// A manifest with the conformance guest.
fn manifest() -> ManifestFile {
    ManifestFile::new(&format!(
        "[components.conformance]\npath = {MCP_CONFORMANCE:?}\n"
    ))
}

fn greeting_model_turns() -> Vec<Turn> {
    vec![
        calls(vec![call(
            "c1",
            "test_input_required_result_elicitation",
            "{}",
        )]),
        text("Done."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_run_asks_the_question_on_the_terminal_and_the_tool_gets_the_answer() {
    let model = ScriptedModel::start(Format::OpenAi, greeting_model_turns()).await;
    let manifest = manifest();
    let command = HostCommand::new("run")
        .manifest(&manifest)
        .model(&model)
        .arg("Greet me")
        .into_command();
    let mut terminal = OnTerminal::spawn(command);
    terminal.wait_for("asks: What is your name?", 1);
    terminal.wait_for("answer? [y]es, [n]o (decline), [c]ancel: ", 1);
    terminal.type_line("y");
    terminal.wait_for("name: ", 1);
    terminal.type_line("");
    terminal.wait_for("name is required", 1);
    terminal.type_line("Ann");
    let (out, screen) = terminal.finish();
    assert!(out.status.success(), "{screen}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Done.");
    let results = sent::results(Format::OpenAi, &model.bodies()[1]);
    assert_eq!(results[0].1, "Hello, Ann!", "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_run_without_a_terminal_says_why_it_cannot_ask() {
    let model = ScriptedModel::start(Format::OpenAi, greeting_model_turns()).await;
    let manifest = manifest();
    let out = HostCommand::new("run")
        .manifest(&manifest)
        .model(&model)
        .arg("Greet me")
        .stdin("")
        .run()
        .await;
    out.assert_success();
    assert!(
        out.stderr.contains("there is no terminal to ask on"),
        "{}",
        out.stderr
    );
    let results = sent::results(Format::OpenAi, &model.bodies()[1]);
    assert!(
        results[0].1.contains("needed input from the user"),
        "{results:?}"
    );
}

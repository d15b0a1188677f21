//! End to end: the real llama-server with Gemma 3 270M and this project's chat template,
//! through both wire formats it serves, with the real calculator component. The model must
//! answer the square-root question through the tool.

use std::sync::Arc;

use toolhost::agent::{Agent, AgentOptions, Conversation, RunOptions, Step, ToolSelection};
use toolhost::llm::local::{LocalServer, LocalServerConfig};
use toolhost::llm::{
    AnthropicProvider, HttpOptions, OpenAiProvider, Provider, ToolCall, ToolChoice,
};
use toolhost::{ComponentConfig, Toolbox};
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::runtime;

use super::ask;

async fn square_root_through(provider: Arc<dyn Provider>, stream: bool) {
    let toolbox = Toolbox::builder(&runtime())
        .component(ComponentConfig::new(CALCULATOR))
        .build()
        .await
        .unwrap();
    let options = AgentOptions {
        temperature: Some(0.0),
        stream,
        ..AgentOptions::default()
    };
    let agent = Agent::new(provider.clone(), Arc::new(toolbox), options);
    let only_square_root = RunOptions {
        tools: ToolSelection::Only(["square_root".to_owned()].into()),
        ..RunOptions::default()
    };
    let (result, streamed) = ask(
        &agent,
        "What is the square root of 475695037565?",
        &only_square_root,
    )
    .await;
    let result =
        result.unwrap_or_else(|e| panic!("{}: {:#}", provider.describe(), anyhow::Error::from(e)));
    let call = result
        .executions
        .iter()
        .find(|e| e.name == "square_root" && e.is_ok())
        .unwrap_or_else(|| {
            panic!(
                "{}: the model did not use square_root: {result:?}",
                provider.describe()
            )
        });
    let arguments: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(
        arguments["x"].as_f64(),
        Some(475695037565.0),
        "{}",
        call.arguments
    );
    assert_eq!(call.output, "689706.4865324959");
    assert!(
        result.text.contains("689706"),
        "{}: the answer is {:?}",
        provider.describe(),
        result.text
    );
    if stream {
        assert_eq!(streamed, result.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_answers_through_the_calculator_in_both_formats() {
    let server = LocalServer::start(&LocalServerConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e} (just test runs scripts/setup-local-llm.sh first)"));
    let http = HttpOptions::default();
    let openai = OpenAiProvider::new(
        &format!("{}/v1", server.base_url()),
        "gemma-3-270m",
        None,
        http.clone(),
    )
    .unwrap();
    let anthropic = AnthropicProvider::new(server.base_url(), "gemma-3-270m", None, http).unwrap();
    square_root_through(Arc::new(openai.clone()), false).await;
    square_root_through(Arc::new(openai), true).await;
    square_root_through(Arc::new(anthropic.clone()), false).await;
    square_root_through(Arc::new(anthropic), true).await;
}

/// Code mode with the real local model. Gemma 3 270M cannot write a program (asked to copy
/// `tools.square_root({x:475695037565})` into `run_code`, it writes
/// `square_root({x:475695037565}}`), so the program is given, as an application that runs the
/// calls itself would give it: the model is asked, it calls `run_code`, the given program runs
/// in its place (`Agent::run_calls`), and the model answers from the program's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_answers_from_a_given_program_in_code_mode() {
    let server = LocalServer::start(&LocalServerConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e} (just test runs scripts/setup-local-llm.sh first)"));
    let provider = OpenAiProvider::new(
        &format!("{}/v1", server.base_url()),
        "gemma-3-270m",
        None,
        HttpOptions::default(),
    )
    .unwrap();
    let toolbox = Toolbox::builder(&runtime())
        .component(ComponentConfig::new(CALCULATOR))
        .build()
        .await
        .unwrap();
    let options = AgentOptions {
        temperature: Some(0.0),
        ..AgentOptions::default()
    };
    let agent = Agent::new(Arc::new(provider), Arc::new(toolbox), options);
    let first = RunOptions {
        code_mode: Some(toolhost_tests::code_mode::code_mode(&runtime()).await),
        tool_choice: ToolChoice::Tool("run_code".to_owned()),
        ..RunOptions::default()
    };
    let mut conversation = Conversation::new();
    conversation.push_user("What is the square root of 475695037565?");
    let step = agent
        .step(&mut conversation, &first, &mut |_| {})
        .await
        .unwrap();
    let Step::ToolCalls(calls) = step else {
        panic!("the model did not call run_code: {step:?}");
    };
    assert_eq!(calls[0].name, "run_code");
    let given = ToolCall {
        arguments:
            serde_json::json!({"code": "return await tools.square_root({x: 475695037565});"})
                .to_string(),
        ..calls[0].clone()
    };
    let ran = agent
        .run_calls(&mut conversation, &[given], &first, &mut |_| {})
        .await
        .unwrap();
    let nested: Vec<(&str, &str)> = ran[0]
        .nested
        .iter()
        .map(|call| (call.name.as_str(), call.output.as_str()))
        .collect();
    assert_eq!(nested, [("square_root", "689706.4865324959")]);
    assert!(
        ran[0].output.contains(r#""result":689706.4865324959"#),
        "{}",
        ran[0].output
    );
    let then = RunOptions {
        tool_choice: ToolChoice::None,
        ..first
    };
    let answer = agent
        .run(&mut conversation, &then, &mut |_| {})
        .await
        .unwrap();
    assert!(
        answer.text.contains("689706"),
        "the answer is {:?}",
        answer.text
    );
}

//! A model server that misbehaves: the run recovers, or fails with a clear error; nothing
//! hangs.

use std::time::Duration;

use serde_json::json;
use toolhost::agent::{AgentError, AgentOptions, RunOptions};
use toolhost::llm::{ChatRequest, Message, ModelConfig, ProviderError, ProviderKind, ToolChoice};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::model::{Format, ScriptedModel, Turn, call, calls, text};

use super::{ask, scripted};

fn error(status: u16, message: &str, headers: &[(&str, &str)]) -> Turn {
    Turn::Error {
        status,
        message: message.to_owned(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    }
}

fn provider_error(result: Result<toolhost::agent::RunResult, AgentError>) -> ProviderError {
    match result {
        Err(AgentError::Provider(error)) => error,
        other => panic!("expected a provider error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_retried_after_the_wait_the_server_asks_for() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let turns = vec![
            error(429, "Rate limit reached", &[("retry-after", "0.3")]),
            error(503, "overloaded", &[]),
            text("finally"),
        ];
        let (model, agent) = scripted(format, true, turns, AgentOptions::default()).await;
        let started = std::time::Instant::now();
        let (result, _) = ask(&agent, "hi", &RunOptions::default()).await;
        assert_eq!(result.unwrap().text, "finally");
        assert_eq!(model.requests().len(), 3);
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "Retry-After was honoured"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_that_persists_ends_in_a_clear_error() {
    let turns = (0..10)
        .map(|_| error(500, "the GPU caught fire", &[]))
        .collect();
    let (model, agent) = scripted(Format::OpenAi, false, turns, AgentOptions::default()).await;
    let error = provider_error(ask(&agent, "hi", &RunOptions::default()).await.0);
    match &error {
        ProviderError::Status {
            status,
            message,
            attempts,
            ..
        } => {
            assert_eq!(
                (*status, message.as_str(), *attempts),
                (500, "the GPU caught fire", 4)
            );
        }
        other => panic!("expected a status error, got {other}"),
    }
    assert!(
        error
            .to_string()
            .contains("answered 500: the GPU caught fire"),
        "{error}"
    );
    assert_eq!(model.requests().len(), 4, "one try and three retries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_errors_are_not_retried() {
    let turns = vec![error(401, "invalid x-api-key", &[]), text("never")];
    let (model, agent) = scripted(Format::Anthropic, false, turns, AgentOptions::default()).await;
    let error = provider_error(ask(&agent, "hi", &RunOptions::default()).await.0);
    assert!(
        matches!(error, ProviderError::Unauthorized { status: 401, .. }),
        "{error}"
    );
    assert_error_chain_contains(
        &error,
        "401: invalid x-api-key; check the API key set by `api_key` in the manifest's \
             [model] section",
    );
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_names_the_variable_it_came_from() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let model = ScriptedModel::start(format, vec![error(403, "forbidden", &[])]).await;
        // PATH stands for a key variable: every environment has it.
        let config = ModelConfig {
            provider: Some(match format {
                Format::OpenAi => ProviderKind::OpenAi,
                Format::Anthropic => ProviderKind::Anthropic,
            }),
            base_url: Some(model.base_url()),
            api_key_env: Some("PATH".into()),
            ..ModelConfig::default()
        };
        let provider = config.connect().await.unwrap();
        let request = ChatRequest {
            messages: vec![Message::user("hi")],
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            temperature: None,
            max_tokens: None,
            stream: false,
            extra: Default::default(),
        };
        let error = provider.chat(&request, &mut |_| {}).await.unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("403: forbidden; check the API key in the environment variable PATH"),
            "{format:?}: {error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_tool_support_is_named_as_such() {
    let turns = vec![error(
        400,
        "registry.ollama.ai/library/gemma:2b does not support tools",
        &[],
    )];
    let (model, agent) = scripted(Format::OpenAi, false, turns, AgentOptions::default()).await;
    let error = provider_error(ask(&agent, "hi", &RunOptions::default()).await.0);
    assert!(
        matches!(error, ProviderError::ToolsNotSupported { .. }),
        "{error}"
    );
    assert_error_chain_contains(&error, "cannot use tools");
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_mid_stream_is_an_error_not_a_hang() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let answer = Turn::Calls {
            text: "Working on it".into(),
            calls: vec![call("c", "add", r#"{"a": 1, "b": 2}"#)],
        };
        let turns = vec![Turn::CutConnection {
            turn: Box::new(answer),
            events: 4,
        }];
        let (_model, agent) = scripted(format, true, turns, AgentOptions::default()).await;
        let options = RunOptions::default();
        let run = ask(&agent, "hi", &options);
        let (result, _) = tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .expect("no hang");
        let error = provider_error(result);
        match &error {
            ProviderError::Disconnected { .. } => assert!(
                error
                    .to_string()
                    .contains("broke in the middle of the answer"),
                "{error}"
            ),
            ProviderError::Protocol { .. } => {}
            other => panic!("{format:?}: {other}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_events_are_a_protocol_error() {
    let (_model, agent) = scripted(
        Format::OpenAi,
        true,
        vec![Turn::MalformedStream],
        AgentOptions::default(),
    )
    .await;
    let error = provider_error(ask(&agent, "hi", &RunOptions::default()).await.0);
    assert!(matches!(error, ProviderError::Protocol { .. }), "{error}");
    assert!(
        error
            .to_string()
            .ends_with("a stream event is not JSON: {\"choices\": [this is not json"),
        "{error}"
    );
    let cause = std::error::Error::source(&error).expect("the JSON error is the cause");
    assert!(cause.to_string().contains("at line 1 column"), "{cause}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_stalls_times_out() {
    let stalled = Turn::Stall {
        turn: Box::new(text("slow words")),
        pause: Duration::from_secs(30),
    };
    let model = ScriptedModel::start(Format::Anthropic, vec![stalled]).await;
    let options = toolhost::llm::HttpOptions {
        idle_timeout: Duration::from_millis(300),
        ..super::http_options()
    };
    let agent = toolhost::agent::Agent::new(
        super::provider(Format::Anthropic, &model.base_url(), options),
        super::toolbox().await,
        AgentOptions::default(),
    );
    let (result, _) = tokio::time::timeout(
        Duration::from_secs(10),
        ask(&agent, "hi", &RunOptions::default()),
    )
    .await
    .expect("the idle timeout fires first");
    let error = provider_error(result);
    assert!(
        matches!(error, ProviderError::Timeout { stalled: true, .. }),
        "{error}"
    );
    assert_error_chain_contains(
        &error,
        "sent nothing for 300ms in the middle of a streamed answer; if the model \
                       needs longer, raise `timeout` in the manifest's [model] section",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_the_format_is_a_protocol_error_naming_the_field() {
    let no_name = json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": "{}"}}],
        }}],
    });
    let no_block_name = json!({
        "type": "message", "role": "assistant", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "t1", "input": {}}],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    });
    let cases = [
        (
            Format::OpenAi,
            json!({"unexpected": true}),
            "choices is missing",
        ),
        (
            Format::OpenAi,
            no_name,
            "choices[0].message.tool_calls[0].function.name is missing",
        ),
        (
            Format::Anthropic,
            no_block_name,
            "content[0].name is missing",
        ),
    ];
    for (format, body, expected) in cases {
        let turns = vec![Turn::Raw {
            content_type: "application/json".into(),
            body: body.to_string().into_bytes(),
        }];
        let (_model, agent) = scripted(format, false, turns, AgentOptions::default()).await;
        let error = provider_error(ask(&agent, "hi", &RunOptions::default()).await.0);
        assert!(matches!(error, ProviderError::Protocol { .. }), "{error}");
        assert!(
            error
                .to_string()
                .ends_with(&format!("sent an answer toolhost cannot read: {expected}")),
            "{format:?}: {error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_a_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let options = toolhost::llm::HttpOptions {
        max_retries: 1,
        ..super::http_options()
    };
    let agent = toolhost::agent::Agent::new(
        super::provider(Format::OpenAi, &url, options),
        super::toolbox().await,
        AgentOptions::default(),
    );
    let error = provider_error(ask(&agent, "hi", &RunOptions::default()).await.0);
    assert!(matches!(error, ProviderError::Connection { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        format!("cannot reach {url}: check `base_url` and that the server is up")
    );
    let cause = std::error::Error::source(&error).expect("the HTTP client's error is the cause");
    assert!(
        cause.to_string().contains("error sending request"),
        "{cause}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_arguments_from_a_stream_are_reported_to_the_model() {
    let turns = vec![
        calls(vec![call("bad", "multiply", "{a: 2, b: 3}")]),
        text("fixed it"),
    ];
    let (model, agent) = scripted(Format::OpenAi, true, turns, AgentOptions::default()).await;
    let result = ask(&agent, "2*3", &RunOptions::default()).await.0.unwrap();
    assert!(result.executions.is_empty());
    assert_eq!(
        result.invalid_calls[0].problem,
        toolhost::agent::InvalidProblem::ArgumentsNotJson
    );
    let second = &model.bodies()[1];
    assert_eq!(
        second["messages"][1]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    assert!(
        second["messages"][2]["content"]
            .as_str()
            .unwrap()
            .contains("{a: 2, b: 3}")
    );
}

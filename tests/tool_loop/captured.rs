//! Genuine llama-server output, captured byte for byte (tests/fixtures/wire), replayed to the
//! providers; and the scripted model's framing checked against it.

use serde_json::Value;
use toolhost::llm::{ChatRequest, FinishReason, Message, Provider, ToolChoice, Usage};
use toolhost_tests::model::{Format, ScriptedModel, call, calls};
use toolhost_tests::repo_root;
use toolhost_tests::server::{Reply, ReplyBody, TestServer};

use super::{http_options, provider};

fn capture(name: &str) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures/wire").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A server that answers every request with the capture `name`, verbatim.
async fn replay(name: &str) -> TestServer {
    let body = capture(name);
    let content_type = if name.ends_with(".sse") {
        "text/event-stream"
    } else {
        "application/json"
    };
    TestServer::start(move |_| Reply {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        body: ReplyBody::Full(body.clone()),
    })
    .await
}

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user("What is the square root of 475695037565?")],
        tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        temperature: Some(0.0),
        max_tokens: None,
        stream,
        extra: Default::default(),
    }
}

async fn ask(format: Format, name: &str) -> toolhost::llm::ChatResponse {
    let server = replay(name).await;
    let base = match format {
        Format::OpenAi => format!("{}/v1", server.url()),
        Format::Anthropic => server.url(),
    };
    let provider: std::sync::Arc<dyn Provider> = provider(format, &base, http_options());
    let mut streamed = String::new();
    let response = provider
        .chat(&request(name.ends_with(".sse")), &mut |text| {
            streamed.push_str(text)
        })
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    if name.ends_with(".sse") {
        assert_eq!(
            streamed, response.text,
            "{name}: the deltas add up to the text"
        );
    }
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_server_answers_are_read_in_both_formats() {
    for (format, prefix, first) in [
        (Format::OpenAi, "openai", "openai-tool-call"),
        (Format::Anthropic, "anthropic", "anthropic-tool-use"),
    ] {
        for extension in ["json", "sse"] {
            let response = ask(format, &format!("{first}.{extension}")).await;
            assert_eq!(
                response.finish,
                FinishReason::ToolCalls,
                "{first}.{extension}"
            );
            assert_eq!(response.tool_calls.len(), 1);
            let call = &response.tool_calls[0];
            assert_eq!(call.name, "square_root");
            assert!(!call.id.is_empty(), "the server sent an id");
            let arguments: Value = serde_json::from_str(&call.arguments).unwrap();
            assert_eq!(
                arguments["x"].as_f64(),
                Some(475695037565.0),
                "{first}.{extension}"
            );

            let last = format!("{prefix}-final.{extension}");
            let response = ask(format, &last).await;
            assert_eq!(response.finish, FinishReason::Stop, "{last}");
            assert!(response.tool_calls.is_empty());
            assert!(
                response.text.contains("689706.48"),
                "{last}: {:?}",
                response.text
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_capture_replays() {
    let dir = repo_root().join("tests/fixtures/wire");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".sse") || name.ends_with(".json"))
        .filter(|name| !name.ends_with(".request.json"))
        .collect();
    names.sort();
    assert!(names.len() >= 9, "{names:?}");
    for name in names {
        let format = if name.starts_with("openai") {
            Format::OpenAi
        } else {
            Format::Anthropic
        };
        let response = ask(format, &name).await;
        assert!(
            !response.text.is_empty() || !response.tool_calls.is_empty(),
            "{name}: {response:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_llama_server_token_counts_are_read() {
    let counts = |input_tokens, output_tokens| {
        Some(Usage {
            input_tokens,
            output_tokens,
        })
    };
    for (format, name, expected) in [
        (Format::OpenAi, "openai-tool-call.json", counts(724, 40)),
        // Captured before toolhost asked for counts in streams: there are none.
        (Format::OpenAi, "openai-tool-call.sse", None),
        // Asked for with `stream_options.include_usage`: a last chunk without choices.
        (
            Format::OpenAi,
            "openai-tool-call-usage.sse",
            counts(724, 40),
        ),
        (Format::Anthropic, "anthropic-tool-use.json", counts(1, 40)),
        (Format::Anthropic, "anthropic-tool-use.sse", counts(1, 40)),
    ] {
        let response = ask(format, name).await;
        assert_eq!(response.usage, expected, "{name}");
        assert_eq!(response.tool_calls[0].name, "square_root", "{name}");
    }
}

/// The event kinds of a stream, repeats collapsed: OpenAI chunks by what their delta holds,
/// Anthropic events by type (pings left out: servers send them at will).
fn shape(format: Format, bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut kinds: Vec<String> = Vec::new();
    for event in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let data = event
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .unwrap_or_else(|| panic!("an event without data: {event:?}"));
        let kind = match format {
            Format::OpenAi if data == "[DONE]" => "[DONE]".to_owned(),
            Format::OpenAi => {
                let chunk: Value = serde_json::from_str(data).unwrap();
                if chunk["choices"].as_array().unwrap().is_empty() {
                    assert!(chunk["usage"].is_object(), "{data}");
                    kinds.push("usage".to_owned());
                    continue;
                }
                let choice = &chunk["choices"][0];
                let delta = &choice["delta"];
                if choice["finish_reason"].is_string() {
                    format!("finish {}", choice["finish_reason"].as_str().unwrap())
                } else if delta.get("role").is_some() {
                    "role".to_owned()
                } else if let Some(call) = delta["tool_calls"].get(0) {
                    if call["function"].get("name").is_some() {
                        "call start"
                    } else {
                        "call fragment"
                    }
                    .to_owned()
                } else {
                    "text".to_owned()
                }
            }
            Format::Anthropic => {
                let value: Value = serde_json::from_str(data).unwrap();
                let kind = value["type"].as_str().unwrap().to_owned();
                let header = event.lines().next().unwrap_or("");
                assert_eq!(
                    header,
                    format!("event: {kind}"),
                    "the event line names the data's type"
                );
                match kind.as_str() {
                    "ping" => continue,
                    "content_block_start" => format!(
                        "{kind} {}",
                        value["content_block"]["type"].as_str().unwrap()
                    ),
                    "content_block_delta" => {
                        format!("{kind} {}", value["delta"]["type"].as_str().unwrap())
                    }
                    _ => kind,
                }
            }
        };
        if kinds.last() != Some(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_model_frames_streams_like_the_real_server() {
    for (format, name, usage) in [
        (Format::OpenAi, "openai-tool-call.sse", false),
        (Format::OpenAi, "openai-tool-call-usage.sse", true),
        (Format::Anthropic, "anthropic-tool-use.sse", false),
    ] {
        let model = ScriptedModel::start(
            format,
            vec![calls(vec![call(
                "c1",
                "square_root",
                r#"{"x": 475695037565}"#,
            )])],
        )
        .await;
        let (path, url) = match format {
            Format::OpenAi => ("/chat/completions", model.base_url()),
            Format::Anthropic => ("/v1/messages", model.base_url()),
        };
        let body = if usage {
            r#"{"stream": true, "stream_options": {"include_usage": true}}"#
        } else {
            r#"{"stream": true}"#
        };
        let scripted = post_streaming(&format!("{url}{path}"), body).await;
        assert_eq!(
            shape(format, &scripted),
            shape(format, &capture(name)),
            "{name}"
        );
        let text = String::from_utf8_lossy(&scripted);
        assert!(
            text.ends_with("\n\n") && !text.contains("\r"),
            "events end with a blank line"
        );
    }
}

/// POSTs a streaming request (`body`) with a bare HTTP/1.1 client and returns the decoded
/// body of the answer.
async fn post_streaming(url: &str, body: &str) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    dechunk(&raw[split..])
}

/// Decodes a chunked transfer-encoded body.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).unwrap().trim(), 16)
            .unwrap();
        raw = &raw[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

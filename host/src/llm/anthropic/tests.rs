use serde_json::json;

use super::*;
use crate::content::Media;
use crate::llm::ToolDefinition;

fn body(request: &ChatRequest) -> Value {
    serde_json::to_value(Anthropic::body("m", request)).unwrap()
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        messages,
        tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        temperature: None,
        max_tokens: None,
        stream: false,
        extra: Default::default(),
    }
}

fn assistant(text: &str, tool_calls: Vec<ToolCall>) -> Message {
    Message::Assistant {
        text: text.into(),
        tool_calls,
    }
}

fn call(id: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "add".into(),
        arguments: arguments.into(),
    }
}

/// Feeds events (their data; the SSE `event:` line is not read) to a stream and returns the
/// answer, or the first error.
fn stream(events: &[Value]) -> Result<ChatResponse, String> {
    let mut state = StreamState::default();
    for data in events {
        let event = Event {
            event: String::new(),
            data: data.to_string(),
        };
        if Anthropic::apply(&mut state, &event, &mut |_| {}).map_err(|e| e.message)? {
            break;
        }
    }
    Anthropic::finish(state).map_err(|e| e.message)
}

fn started() -> Value {
    json!({"type": "message_start", "message": {"id": "msg", "content": [], "usage": {"input_tokens": 20, "output_tokens": 1}}})
}

fn stopped(reason: &str) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]
}

fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn block_delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn parse(value: Value) -> Result<ChatResponse, String> {
    Anthropic::parse(value).map_err(|e| e.message)
}

fn answer(content: Value) -> Value {
    json!({"type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7}})
}

#[test]
fn tool_results_and_the_next_user_text_share_one_user_message() {
    let mut request = request(vec![
        Message::system("Be brief."),
        Message::user("2+2 and 3+3?"),
        assistant(
            "",
            vec![call("t1", r#"{"a":2,"b":2}"#), call("t2", "{broken")],
        ),
        Message::ToolResult {
            call_id: "t1".into(),
            name: "add".into(),
            content: "4".into(),
            is_error: false,
            images: Vec::new(),
        },
        Message::ToolResult {
            call_id: "t2".into(),
            name: "add".into(),
            content: "bad".into(),
            is_error: true,
            images: Vec::new(),
        },
    ]);
    request.tools = vec![ToolDefinition {
        name: "add".into(),
        description: "Adds.".into(),
        parameters: json!({"type":"object"}),
    }];
    request.tool_choice = ToolChoice::Required;
    request.temperature = Some(0.0);
    let body = body(&request);
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        body["tools"],
        json!([{"name": "add", "description": "Adds.", "input_schema": {"type": "object"}}])
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 2, "b": 2}})
    );
    assert_eq!(
        messages[1]["content"][1]["input"],
        json!({}),
        "broken JSON is never sent"
    );
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        messages[2]["content"][1],
        json!({"type": "tool_result", "tool_use_id": "t2", "content": "bad", "is_error": true})
    );
    assert!(messages[2]["content"][0].get("is_error").is_none());
}

#[test]
fn an_empty_assistant_turn_is_never_sent_as_empty_content() {
    let body = body(&request(vec![
        Message::user("hi"),
        assistant("", Vec::new()),
        Message::user("are you there?"),
        assistant(" \n", vec![call("t1", "{}")]),
    ]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "text", "text": "are you there?"},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "add", "input": {}},
            ]},
        ]),
        "the empty turn is left out, the user turns around it merge, and a text block of \
         only whitespace is not sent"
    );
}

#[test]
fn a_tool_use_block_without_a_name_or_id_is_refused_naming_the_field() {
    let tool_use = json!({"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}});
    let ok = parse(answer(json!([{"type": "text", "text": "Sure."}, tool_use]))).unwrap();
    assert_eq!(ok.text, "Sure.");
    assert_eq!(ok.tool_calls, vec![call("t1", r#"{"a":1}"#)]);
    assert_eq!(ok.finish, FinishReason::ToolCalls);
    assert_eq!(
        ok.usage,
        Some(Usage {
            input_tokens: 5,
            output_tokens: 7
        })
    );

    let no_name = answer(
        json!([{"type": "text", "text": "x"}, {"type": "tool_use", "id": "t1", "input": {}}]),
    );
    assert_eq!(parse(no_name).unwrap_err(), "content[1].name is missing");
    let no_id = answer(json!([{"type": "tool_use", "name": "add", "input": {}}]));
    assert_eq!(parse(no_id).unwrap_err(), "content[0].id is missing");
    let no_input = answer(json!([{"type": "tool_use", "id": "t", "name": "add"}]));
    assert_eq!(parse(no_input).unwrap_err(), "content[0].input is missing");
    let text_input = answer(json!([{"type": "tool_use", "id": "t", "name": "add", "input": "{}"}]));
    assert_eq!(
        parse(text_input).unwrap_err(),
        r#"content[0].input is not an object: "{}""#
    );
    let mut no_stop = answer(json!([]));
    no_stop["stop_reason"] = Value::Null;
    assert_eq!(parse(no_stop).unwrap_err(), "stop_reason is missing");
}

#[test]
fn unknown_blocks_are_refused_and_thinking_is_skipped() {
    let unknown = parse(answer(
        json!([{"type": "server_tool_use", "id": "s", "name": "web_search"}]),
    ))
    .unwrap_err();
    assert!(
        unknown.starts_with(
            "content[0].type: unknown variant `server_tool_use`, expected one of `text`, `tool_use`"
        ),
        "{unknown}"
    );
    let thinking = parse(answer(json!([
        {"type": "thinking", "thinking": "Let me add.", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "4"},
    ])))
    .unwrap();
    assert_eq!(thinking.text, "4");
}

#[test]
fn a_streamed_answer_is_assembled_from_its_blocks() {
    let mut events = vec![
        started(),
        block_start(0, json!({"type": "thinking", "thinking": ""})),
        block_delta(0, json!({"type": "thinking_delta", "thinking": "hm"})),
        block_delta(0, json!({"type": "signature_delta", "signature": "sig"})),
        block_start(1, json!({"type": "text", "text": ""})),
        json!({"type": "ping"}),
        block_delta(1, json!({"type": "text_delta", "text": "Adding."})),
        json!({"type": "a_new_kind_of_event", "whatever": 1}),
        // Anthropic starts `input` empty; llama-server leaves it out.
        block_start(
            2,
            json!({"type": "tool_use", "id": "t1", "name": "add", "input": {}}),
        ),
        block_delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "{\"a\": "}),
        ),
        block_delta(2, json!({"type": "input_json_delta", "partial_json": "1}"})),
        block_start(3, json!({"type": "tool_use", "id": "t2", "name": "add"})),
        block_delta(3, json!({"type": "input_json_delta", "partial_json": ""})),
    ];
    events.extend(stopped("tool_use"));
    let response = stream(&events).unwrap();
    assert_eq!(response.text, "Adding.");
    assert_eq!(
        response.tool_calls,
        vec![call("t1", r#"{"a": 1}"#), call("t2", "")]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 20,
            output_tokens: 9
        })
    );
}

#[test]
fn a_stream_of_the_wrong_shape_names_what_is_wrong() {
    let error = |events: &[Value]| stream(events).unwrap_err();
    assert_eq!(
        error(&[
            started(),
            block_start(0, json!({"type": "tool_use", "id": "t1", "input": {}}))
        ]),
        "in a content_block_start event, content_block.name is missing"
    );
    assert_eq!(
        error(&[
            started(),
            block_start(0, json!({"type": "tool_use", "name": "add"}))
        ]),
        "in a content_block_start event, content_block.id is missing"
    );
    assert!(
        error(&[started(), block_start(0, json!({"type": "image"}))]).starts_with(
            "in a content_block_start event, content_block.type: unknown variant `image`"
        )
    );
    assert!(
        error(&[
            started(),
            block_start(0, json!({"type": "text", "text": ""})),
            block_delta(0, json!({"type": "citations_delta", "citation": {}})),
        ])
        .starts_with(
            "in a content_block_delta event, delta.type: unknown variant `citations_delta`"
        )
    );
    assert_eq!(
        error(&[
            started(),
            block_delta(4, json!({"type": "text_delta", "text": "x"}))
        ]),
        "a content_block_delta event is for block 4, which no content_block_start began"
    );
    assert_eq!(
        error(&[
            started(),
            block_start(0, json!({"type": "text", "text": ""})),
            block_delta(0, json!({"type": "input_json_delta", "partial_json": "{}"})),
        ]),
        "a content_block_delta event brings input_json_delta to block 0, which is a text block"
    );
    assert_eq!(
        error(&[block_start(0, json!({"type": "text", "text": ""}))]),
        "a content_block_start event came before message_start"
    );
    assert_eq!(
        error(&[json!({"index": 0})]),
        "a stream event's type is missing"
    );
    assert_eq!(
        error(&[started(), json!({"type": "message_stop"})]),
        "the stream ended without a stop reason (message_delta.delta.stop_reason)"
    );
    assert_eq!(error(&[started()]), "the stream ended before message_stop");
    assert_eq!(
        error(&[
            started(),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        ]),
        "the stream reported an error: Overloaded"
    );
}

fn with_images(content: &str, types: &[&str]) -> Message {
    Message::ToolResult {
        call_id: "t1".into(),
        name: "draw".into(),
        content: content.into(),
        is_error: false,
        images: types
            .iter()
            .map(|mime| Media {
                mime_type: (*mime).into(),
                data: "aGVsbG8=".into(),
            })
            .collect(),
    }
}

#[test]
fn images_in_a_tool_result_are_image_blocks() {
    let sent = body(&request(vec![
        Message::user("Draw a dot."),
        assistant("", vec![call("t1", "{}")]),
        with_images("a dot:", &["image/png", "image/tiff"]),
    ]));
    let result = &sent["messages"][2]["content"][0];
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": "a dot:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}},
            {"type": "text", "text": "[the tool also returned an image (image/tiff, 5 B), which cannot be shown here]"},
        ]),
        "a type Anthropic does not take is described instead: {result}"
    );
}

#[test]
fn a_tool_result_without_images_stays_a_string() {
    let sent = body(&request(vec![
        Message::user("Draw a dot."),
        assistant("", vec![call("t1", "{}")]),
        with_images("nothing to draw", &[]),
    ]));
    assert_eq!(
        sent["messages"][2]["content"][0]["content"],
        "nothing to draw"
    );
}

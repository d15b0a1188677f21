use serde_json::json;

use super::*;
use crate::llm::ToolDefinition;

fn event(data: Value) -> Event {
    Event {
        event: String::new(),
        data: data.to_string(),
    }
}

/// Feeds `chunks` to a stream and returns the answer, or the first error.
fn stream(chunks: &[Value]) -> Result<ChatResponse, String> {
    let mut state = StreamState::default();
    for chunk in chunks {
        OpenAi::apply(&mut state, &event(chunk.clone()), &mut |_| {}).map_err(|e| e.message)?;
    }
    OpenAi::finish(state).map_err(|e| e.message)
}

fn delta(delta: Value) -> Value {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn parse(value: Value) -> Result<ChatResponse, String> {
    OpenAi::parse(value).map_err(|e| e.message)
}

fn body(request: &ChatRequest) -> Value {
    serde_json::to_value(OpenAi::body("m", request)).unwrap()
}

fn request(messages: Vec<Message>, stream: bool) -> ChatRequest {
    ChatRequest {
        messages,
        tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        temperature: None,
        max_tokens: None,
        stream,
        extra: Default::default(),
    }
}

#[test]
fn fragmented_calls_are_assembled_by_index() {
    let response = stream(&[
        delta(json!({"role": "assistant", "content": null})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "add", "arguments": ""}}]}),
        ),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "", "function": {"name": "square_root", "arguments": "{\"x\""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\": 1, "}}]})),
        delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": ": 4}"}}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"b\": 2}"}}]})),
        finish("tool_calls"),
    ])
    .unwrap();
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "add".into(),
                arguments: "{\"a\": 1, \"b\": 2}".into()
            },
            ToolCall {
                id: String::new(),
                name: "square_root".into(),
                arguments: "{\"x\": 4}".into()
            },
        ]
    );
}

#[test]
fn a_streamed_call_that_never_gets_a_name_is_refused() {
    let error = stream(&[
        delta(json!({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]})),
        finish("tool_calls"),
    ])
    .unwrap_err();
    assert_eq!(
        error,
        "the streamed tool call with index 0 never got a name \
         (choices[0].delta.tool_calls[].function.name)"
    );
}

#[test]
fn a_chunk_of_the_wrong_shape_names_the_field() {
    let error = stream(&[json!({"choices": [{"delta": {"content": 7}}]})]).unwrap_err();
    assert_eq!(
        error,
        "in a stream chunk, choices[0].delta.content: invalid type: integer `7`, expected a \
         string"
    );
    let error = stream(&[json!({"object": "chat.completion.chunk"})]).unwrap_err();
    assert_eq!(error, "in a stream chunk, choices is missing");
    let error = stream(&[json!({"choices": [{"finish_reason": "stop"}]})]).unwrap_err();
    assert_eq!(error, "in a stream chunk, choices[0].delta is missing");
    let error = stream(&[delta(json!({"content": "half"}))]).unwrap_err();
    assert!(error.contains("without a finish reason"), "{error}");
    let error = stream(&[json!({"error": {"message": "out of memory"}})]).unwrap_err();
    assert_eq!(error, "the stream reported an error: out of memory");
}

#[test]
fn the_last_chunk_of_a_stream_brings_the_token_counts() {
    let response = stream(&[
        delta(json!({"content": "Hi"})),
        finish("stop"),
        json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}),
    ])
    .unwrap();
    assert_eq!(response.text, "Hi");
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 12,
            output_tokens: 3
        })
    );
    let without = stream(&[delta(json!({"content": "Hi"})), finish("stop")]).unwrap();
    assert_eq!(without.usage, None, "no counts are not zero counts");
}

#[test]
fn streamed_requests_ask_for_the_token_counts() {
    let messages = vec![Message::user("hi")];
    assert_eq!(
        body(&request(messages.clone(), true))["stream_options"],
        json!({"include_usage": true})
    );
    let whole = body(&request(messages, false));
    assert!(whole.get("stream_options").is_none(), "{whole}");
    assert!(whole.get("stream").is_none(), "{whole}");
}

fn answer(message: Value) -> Value {
    json!({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]})
}

#[test]
fn a_tool_call_without_a_name_or_id_is_refused_naming_the_field() {
    let call = |function: Value| json!({"id": "c1", "type": "function", "function": function});
    let good = call(json!({"name": "add", "arguments": "{}"}));
    let no_name = parse(answer(json!({
        "role": "assistant", "content": null,
        "tool_calls": [good.clone(), call(json!({"arguments": "{}"}))],
    })))
    .unwrap_err();
    assert_eq!(
        no_name,
        "choices[0].message.tool_calls[1].function.name is missing"
    );
    let no_id = parse(answer(json!({
        "role": "assistant",
        "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": "{}"}}],
    })))
    .unwrap_err();
    assert_eq!(no_id, "choices[0].message.tool_calls[0].id is missing");
    let empty_name = parse(answer(
        json!({"tool_calls": [call(json!({"name": "", "arguments": "{}"}))]}),
    ))
    .unwrap_err();
    assert_eq!(
        empty_name,
        "choices[0].message.tool_calls[0].function.name is empty"
    );
    let bad_arguments = parse(answer(
        json!({"tool_calls": [call(json!({"name": "add", "arguments": 3}))]}),
    ))
    .unwrap_err();
    assert_eq!(
        bad_arguments,
        "choices[0].message.tool_calls[0].function.arguments is neither JSON text nor an \
         object: 3"
    );
}

#[test]
fn a_whole_answer_must_have_one_choice_and_a_finish_reason() {
    assert_eq!(
        parse(json!({"unexpected": true})).unwrap_err(),
        "choices is missing"
    );
    assert_eq!(
        parse(json!({"choices": []})).unwrap_err(),
        "choices[0] is missing"
    );
    assert_eq!(
        parse(json!({"choices": [{"message": {"content": "hi"}}]})).unwrap_err(),
        "choices[0].finish_reason is missing"
    );
    let two = json!({"message": {"content": "hi"}, "finish_reason": "stop"});
    assert_eq!(
        parse(json!({"choices": [two.clone(), two]})).unwrap_err(),
        "choices has 2 entries; toolhost asks for one"
    );
}

#[test]
fn arguments_sent_as_an_object_and_refusals_are_read() {
    let response = parse(answer(json!({
        "tool_calls": [{"id": "c", "function": {"name": "add", "arguments": {"a": 1}}}],
    })))
    .unwrap();
    assert_eq!(response.tool_calls[0].arguments, r#"{"a":1}"#);
    let refused = parse(json!({"choices": [{
        "message": {"content": null, "refusal": "I cannot help with that."},
        "finish_reason": "stop",
    }]}))
    .unwrap();
    assert_eq!(refused.text, "I cannot help with that.");
}

#[test]
fn assistant_messages_with_calls_have_null_content() {
    let request = request(
        vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "add".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: Vec::new(),
            },
        ],
        false,
    );
    let value = body(&request);
    assert_eq!(value["messages"][0]["content"], Value::Null);
    assert_eq!(value["messages"][0]["tool_calls"][0]["type"], "function");
    assert_eq!(
        value["messages"][0]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    assert_eq!(
        value["messages"][1],
        json!({"role": "assistant", "content": ""})
    );
}

#[test]
fn tools_and_settings_are_sent_only_when_set() {
    let mut request = request(vec![Message::user("hi")], false);
    assert_eq!(
        body(&request),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    );
    request.tools = vec![ToolDefinition {
        name: "add".into(),
        description: "Adds.".into(),
        parameters: json!({"type": "object"}),
    }];
    request.tool_choice = ToolChoice::Tool("add".into());
    request.temperature = Some(0.7);
    request.max_tokens = Some(64);
    let value = body(&request);
    assert_eq!(
        value["tools"],
        json!([{"type": "function", "function": {"name": "add", "description": "Adds.", "parameters": {"type": "object"}}}])
    );
    assert_eq!(
        value["tool_choice"],
        json!({"type": "function", "function": {"name": "add"}})
    );
    assert_eq!(value["max_tokens"], 64);
    let text = serde_json::to_string(&OpenAi::body("m", &request)).unwrap();
    assert!(text.contains(r#""temperature":0.7"#), "{text}");
}

#[test]
fn an_image_in_a_tool_result_is_a_note_after_the_text() {
    let image = crate::content::Media {
        mime_type: "image/png".into(),
        data: "aGVsbG8=".into(),
    };
    let result = |content: &str| Message::ToolResult {
        call_id: "c1".into(),
        name: "draw".into(),
        content: content.into(),
        is_error: false,
        images: vec![image.clone()],
    };
    let note = "[the tool also returned an image (image/png, 5 B), which cannot be shown here]";
    let sent = body(&request(vec![result("a dot:"), result("")], false));
    assert_eq!(sent["messages"][0]["content"], format!("a dot:\n{note}"));
    assert_eq!(sent["messages"][1]["content"], note);
}

#[test]
fn extra_fields_are_sent_but_never_replace_the_formats_own() {
    let mut request = request(vec![Message::user("hi")], false);
    request.extra.insert("dry_multiplier".into(), json!(0.8));
    request.extra.insert("model".into(), json!("other"));
    request.extra.insert("messages".into(), json!([]));
    let body = body(&request);
    assert_eq!(body["dry_multiplier"], json!(0.8));
    assert_eq!(body["model"], json!("m"));
    assert_eq!(body["messages"][0]["content"], json!("hi"));
    let text = serde_json::to_string(&OpenAi::body("m", &request)).unwrap();
    assert_eq!(text.matches("\"model\"").count(), 1, "{text}");
}

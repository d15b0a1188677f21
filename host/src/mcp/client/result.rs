//! MCP's shapes into toolhost's: a server's tool into a [`ToolSpec`], a `tools/call` result
//! into a [`ToolOutput`] or a [`CallError`].

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

use crate::content::{
    self, ContentPart, EmbeddedResource, InputRequest, InputRequired, Media, ResourceLink,
};
use crate::error::CallError;
use crate::source::ToolOutput;
use crate::spec::is_valid_tool_name;
use crate::spec::{ToolAnnotations, ToolSpec};

/// What a server's input-required result asks for, as the host passes it to its caller: the
/// requests by their keys (each an MCP request, which the host reads no further), and the
/// server's state, untouched.
pub(crate) fn input_required(
    tool: &str,
    asked: rmcp::model::InputRequiredResult,
) -> Result<InputRequired, CallError> {
    let mut requests = std::collections::BTreeMap::new();
    for (key, request) in asked.input_requests.unwrap_or_default() {
        let request = serde_json::to_value(request)
            .and_then(serde_json::from_value::<InputRequest>)
            .map_err(|e| CallError::ToolFailed {
                tool: tool.to_owned(),
                message: format!("the MCP server asked for input the host cannot read ({e})"),
            })?;
        requests.insert(key, request);
    }
    Ok(InputRequired {
        requests,
        state: asked.request_state,
        task: None,
    })
}

/// What a server's task for a call asks (the MCP tasks extension), as the host passes it to
/// its caller: the requests, and the task's id, to which the answers go.
pub(crate) fn task_asks(
    tool: &str,
    task: String,
    requests: rmcp::model::InputRequests,
) -> Result<InputRequired, CallError> {
    let asked = rmcp::model::InputRequiredResult::new(Some(requests), None);
    let asked = input_required(tool, asked)?;
    Ok(InputRequired {
        task: Some(task),
        ..asked
    })
}

/// A server's tool as toolhost offers it: its spec (under a name models can call), and the
/// name the server knows it by.
pub(super) fn spec(tool: &Tool) -> Result<(ToolSpec, String), String> {
    let own = tool.name.to_string();
    let name = callable_name(&own);
    if name.is_empty() {
        return Err("has an empty name".to_owned());
    }
    let input_schema = Value::Object((*tool.input_schema).clone());
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("has an input schema whose top level is not `\"type\": \"object\"`".to_owned());
    }
    let description = tool
        .description
        .as_deref()
        .map(str::to_owned)
        .or_else(|| tool.title.clone())
        .unwrap_or_default();
    let output_schema = tool
        .output_schema
        .as_ref()
        .map(|schema| Value::Object((**schema).clone()));
    let spec = ToolSpec {
        name,
        description,
        input_schema,
        output_schema,
        requested: Vec::new(),
        annotations: ToolAnnotations {
            title: tool.title.clone().or_else(|| {
                tool.annotations
                    .as_ref()
                    .and_then(|annotations| annotations.title.clone())
            }),
            read_only: tool.annotations.as_ref().and_then(|a| a.read_only_hint),
            destructive: tool.annotations.as_ref().and_then(|a| a.destructive_hint),
            idempotent: tool.annotations.as_ref().and_then(|a| a.idempotent_hint),
            open_world: tool.annotations.as_ref().and_then(|a| a.open_world_hint),
        },
    };
    Ok((spec, own))
}

/// `name` with every character a model cannot call replaced by `_`, cut to 64 bytes (MCP
/// allows `.` and 128 characters; the model APIs do not).
fn callable_name(name: &str) -> String {
    if is_valid_tool_name(name) {
        return name.to_owned();
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// An MCP content block as a part of a toolhost result.
pub(crate) fn part(block: ContentBlock) -> ContentPart {
    match block {
        ContentBlock::Text(text) => ContentPart::Text { text: text.text },
        ContentBlock::Image(image) => ContentPart::Image(Media {
            mime_type: image.mime_type,
            data: image.data,
        }),
        ContentBlock::Audio(audio) => ContentPart::Audio(Media {
            mime_type: audio.mime_type,
            data: audio.data,
        }),
        ContentBlock::Resource(embedded) => {
            let (uri, mime_type, text, blob) = match embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => (uri, mime_type, Some(text), None),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => (uri, mime_type, None, Some(blob)),
                other => {
                    return ContentPart::Text {
                        text: format!("[resource not shown: {}]", content_kind(&other)),
                    };
                }
            };
            ContentPart::Resource(EmbeddedResource {
                uri,
                mime_type,
                text,
                blob,
            })
        }
        ContentBlock::ResourceLink(link) => ContentPart::ResourceLink(ResourceLink {
            uri: link.uri,
            name: link.name,
            description: link.description,
            mime_type: link.mime_type,
        }),
        other => ContentPart::Text {
            text: format!("[content not shown: {}]", content_kind(&other)),
        },
    }
}

/// What is wrong with a part a server sent, if anything: bytes that are not base64, a media
/// type of the wrong kind.
fn bad_part(part: &ContentPart) -> Option<String> {
    let problem = match part {
        ContentPart::Image(media) => content::check_mime_type(&media.mime_type, "image")
            .and_then(|()| content::check_base64(&media.data)),
        ContentPart::Audio(media) => content::check_mime_type(&media.mime_type, "audio")
            .and_then(|()| content::check_base64(&media.data)),
        ContentPart::Resource(EmbeddedResource {
            blob: Some(blob), ..
        }) => content::check_base64(blob),
        _ => Ok(()),
    };
    problem.err()
}

/// The `type` of a content block or resource this version does not know, for a note.
fn content_kind(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "an unknown kind".to_owned())
}

/// A `tools/call` result: its text for the model, its `structuredContent`, every part as the
/// server gave it (images also go to models that take them); an `isError` result is a
/// [`CallError::ToolFailed`] with its text. Everything together must fit in `max_result`
/// bytes.
pub(super) fn output(
    tool: &str,
    result: CallToolResult,
    max_result: usize,
    duration: Duration,
) -> Result<ToolOutput, CallError> {
    let structured = result.structured_content;
    let content: Vec<ContentPart> = result.content.into_iter().map(part).collect();
    let mut texts: Vec<String> = Vec::new();
    if let Some(value) = &structured {
        texts.push(value.to_string());
    }
    for part in &content {
        match part {
            // Servers also send their structured result as text (the specification asks
            // them to, for older clients): once is enough.
            ContentPart::Text { text }
                if structured.as_ref().is_some_and(|value| {
                    serde_json::from_str::<Value>(text).is_ok_and(|v| &v == value)
                }) => {}
            // Images go to the model as images, or as a note where its format takes none.
            ContentPart::Image(_) => {}
            other => texts.push(other.model_text()),
        }
    }
    let text = texts.join("\n");
    // What the server sent: its parts, and its structured result (once in `texts`).
    let structured_size = structured.as_ref().map_or(0, |_| texts[0].len());
    let size = structured_size + content.iter().map(ContentPart::carried_size).sum::<usize>();
    if size > max_result {
        return Err(CallError::ResultTooLarge {
            tool: tool.to_owned(),
            size,
            limit: max_result,
        });
    }
    if let Some(problem) = content.iter().enumerate().find_map(|(at, part)| {
        bad_part(part).map(|problem| format!("part {at} of its result {problem}"))
    }) {
        return Err(CallError::ToolFailed {
            tool: tool.to_owned(),
            message: problem,
        });
    }
    if result.is_error == Some(true) {
        let message = if text.trim().is_empty() {
            "it reported an error without saying what".to_owned()
        } else {
            text
        };
        return Err(CallError::ToolFailed {
            tool: tool.to_owned(),
            message,
        });
    }
    Ok(ToolOutput {
        structured,
        content,
        ..ToolOutput::text(text, duration)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Resource;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn structured_content_is_sent_once_as_json() {
        let answer = result(json!({
            "content": [{"type": "text", "text": "{\"temperature\": 22.5}"}, {"type": "text", "text": "Sunny."}],
            "structuredContent": {"temperature": 22.5},
        }));
        let output = output("w", answer, 1 << 20, Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(output.text, "{\"temperature\":22.5}\nSunny.");
        assert_eq!(output.structured, Some(json!({"temperature": 22.5})));
    }

    #[test]
    fn images_are_kept_apart_and_other_blocks_described() {
        let mut answer = CallToolResult::success(vec![
            ContentBlock::text("Here it is:"),
            ContentBlock::image("aGVsbG8=", "image/png"),
        ]);
        answer
            .content
            .push(ContentBlock::resource_link(Resource::new(
                "file:///a.txt",
                "a.txt",
            )));
        let output =
            output("img", answer, 1 << 20, Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            output.text,
            "Here it is:\n[resource link a.txt <file:///a.txt>]"
        );
        let images: Vec<&Media> = output.images().collect();
        assert_eq!(
            images,
            vec![&Media {
                mime_type: "image/png".into(),
                data: "aGVsbG8=".into()
            }]
        );
        // Every part is kept, in order, to be served again as it came.
        assert_eq!(
            output.content,
            vec![
                ContentPart::Text {
                    text: "Here it is:".into()
                },
                ContentPart::Image(Media {
                    mime_type: "image/png".into(),
                    data: "aGVsbG8=".into()
                }),
                ContentPart::ResourceLink(ResourceLink {
                    uri: "file:///a.txt".into(),
                    name: "a.txt".into(),
                    description: None,
                    mime_type: None,
                }),
            ]
        );
    }

    #[test]
    fn is_error_is_a_tool_failure_and_size_is_bounded() {
        let failed = CallToolResult::error(vec![ContentBlock::text("Invalid timezone: Mars")]);
        let error = output("t", failed, 1 << 20, Duration::ZERO).unwrap_err();
        assert!(
            matches!(&error, CallError::ToolFailed { message, .. } if message == "Invalid timezone: Mars"),
            "{error}"
        );
        let big = CallToolResult::success(vec![ContentBlock::text("x".repeat(2000))]);
        let error = output("t", big, 1000, Duration::ZERO).unwrap_err();
        assert!(
            matches!(
                error,
                CallError::ResultTooLarge {
                    size: 2000,
                    limit: 1000,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn names_models_cannot_call_are_made_callable() {
        assert_eq!(callable_name("files.read"), "files_read");
        assert_eq!(callable_name("get-sum"), "get-sum");
        assert_eq!(callable_name(&"a".repeat(100)).len(), 64);
    }
}

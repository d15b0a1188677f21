//! MCP's shapes into toolhost's: a server's tool into a [`ToolSpec`], a `tools/call` result
//! into a [`ToolOutput`] or a [`CallError`].

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

use crate::error::CallError;
use crate::source::{ToolImage, ToolOutput};
use crate::spec::ToolSpec;
use crate::spec::is_valid_tool_name;
use crate::units::format_bytes;

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

/// The `type` of a content block or resource this version does not know, for a note.
fn content_kind(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "an unknown kind".to_owned())
}

/// An embedded resource as the model reads it: a text resource whole, a binary one named.
fn resource_text(resource: ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            format!("[resource {uri}]\n{text}")
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[resource {uri} ({}, {}) not shown]",
            mime_type.as_deref().unwrap_or("binary"),
            format_bytes((blob.len() / 4 * 3) as u64)
        ),
        other => format!("[resource not shown: {}]", content_kind(&other)),
    }
}

/// A `tools/call` result: its text for the model, its `structuredContent`, its images; an
/// `isError` result is a [`CallError::ToolFailed`] with its text. Everything together must
/// fit in `max_result` bytes.
pub(super) fn output(
    tool: &str,
    result: CallToolResult,
    max_result: usize,
    duration: Duration,
) -> Result<ToolOutput, CallError> {
    let structured = result.structured_content;
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    if let Some(value) = &structured {
        parts.push(value.to_string());
    }
    for block in result.content {
        match block {
            // Servers also send their structured result as text (the specification asks
            // them to, for older clients): once is enough.
            ContentBlock::Text(text)
                if structured.as_ref().is_some_and(|value| {
                    serde_json::from_str::<Value>(&text.text).is_ok_and(|v| &v == value)
                }) => {}
            ContentBlock::Text(text) => parts.push(text.text),
            ContentBlock::Image(image) => images.push(ToolImage {
                mime_type: image.mime_type,
                data: image.data,
            }),
            ContentBlock::Audio(audio) => parts.push(format!(
                "[audio ({}, {}) not shown]",
                audio.mime_type,
                format_bytes((audio.data.len() / 4 * 3) as u64)
            )),
            ContentBlock::Resource(embedded) => parts.push(resource_text(embedded.resource)),
            ContentBlock::ResourceLink(link) => {
                let about = link
                    .description
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                parts.push(format!(
                    "[resource link {} <{}>{about}]",
                    link.name, link.uri
                ));
            }
            other => parts.push(format!("[content not shown: {}]", content_kind(&other))),
        }
    }
    let text = parts.join("\n");
    let size = text.len() + images.iter().map(|image| image.data.len()).sum::<usize>();
    if size > max_result {
        return Err(CallError::ResultTooLarge {
            tool: tool.to_owned(),
            size,
            limit: max_result,
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
        images,
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
        assert_eq!(
            output.images,
            vec![ToolImage {
                mime_type: "image/png".into(),
                data: "aGVsbG8=".into()
            }]
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

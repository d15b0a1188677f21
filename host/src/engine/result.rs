//! A component's result, checked and turned into what the rest of the host reads: the text a
//! model is given, the structured content, and the parts (tool contract 0.2). Whatever a tool
//! returns that breaks the contract (a media type of the wrong kind, structured content that is
//! not JSON or does not fit the tool's output schema, a result over `max_result`) ends the
//! call as a failure of the tool that says what was wrong, never more than that call.

use std::collections::BTreeMap;

use serde_json::Value;

use super::bindings::{VersionedOutcome, wit};
use crate::content::{
    self, ContentPart, EmbeddedResource, INPUT_METHODS, InputRequest, InputRequired, Media,
    ResourceLink,
};
use crate::error::CallError;
use crate::sandbox::Limits;

/// The beginnings of the messages of a result that breaks its tool's output schema (below).
#[cfg(feature = "cli")]
const OUTPUT_SCHEMA_FAILURES: [&str; 3] = [
    "its structured content is not JSON",
    "it declares an output schema, but",
    "its structured content does not fit its output schema",
];

/// Whether a tool failure's `message` is the host's verdict that the result broke the tool's
/// output schema (rather than the tool's own failure): for `host check`.
#[cfg(feature = "cli")]
pub(crate) fn breaks_output_schema(message: &str) -> bool {
    OUTPUT_SCHEMA_FAILURES
        .iter()
        .any(|start| message.starts_with(start))
}

/// A checked result: the model's text, the structured content, the parts; or what the tool
/// asks for before it can finish.
#[derive(Default)]
pub(crate) struct Checked {
    pub(crate) text: String,
    pub(crate) structured: Option<Value>,
    pub(crate) content: Vec<ContentPart>,
    pub(crate) input_required: Option<InputRequired>,
}

/// At most this many requests for input in one round.
const MAX_INPUT_REQUESTS: usize = 16;

/// The longest state a tool may keep across rounds.
const MAX_REQUEST_STATE: usize = 64 * 1024;

/// Checks `result` of tool `tool` against `limits` and its output schema (`output`).
pub(crate) fn check(
    tool: &str,
    result: VersionedOutcome,
    limits: &Limits,
    output: Option<&jsonschema::Validator>,
) -> Result<Checked, CallError> {
    let result = match result {
        VersionedOutcome::V0_1(text) => {
            limits.check_result(tool, text.len())?;
            return Ok(Checked {
                text,
                ..Checked::default()
            });
        }
        VersionedOutcome::V0_2(wit::Outcome::InputRequired(asked)) => {
            return input_required(tool, asked, limits).map(|asked| Checked {
                input_required: Some(asked),
                ..Checked::default()
            });
        }
        VersionedOutcome::V0_2(wit::Outcome::Complete(result)) => result,
    };
    let failed = |message: String| CallError::ToolFailed {
        tool: tool.to_owned(),
        message,
    };
    // The size as carried (bytes as base64), counted before anything is encoded.
    let size = result.content.iter().map(carried_size).sum::<usize>()
        + result.structured.as_ref().map_or(0, String::len);
    limits.check_result(tool, size)?;
    let structured = match result.structured {
        Some(text) => Some(serde_json::from_str::<Value>(&text).map_err(|e| {
            failed(format!(
                "its structured content is not JSON ({e}); return JSON text that fits its output \
                 schema"
            ))
        })?),
        None => None,
    };
    if let Some(validator) = output {
        let Some(value) = &structured else {
            return Err(failed(
                "it declares an output schema, but its result has no structured content".to_owned(),
            ));
        };
        if let Some(error) = validator.iter_errors(value).next() {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            return Err(failed(format!(
                "its structured content does not fit its output schema at {at} (schema {}): \
                 {error}",
                error.schema_path()
            )));
        }
    }
    let content = result
        .content
        .into_iter()
        .enumerate()
        .map(|(at, part)| part_of(part).map_err(|problem| failed(format!("part {at} {problem}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let text = model_text(&content, structured.as_ref());
    Ok(Checked {
        text,
        structured,
        content,
        input_required: None,
    })
}

/// A tool's (or a prompt's) request for input, checked: 1 to 16 requests under distinct non-empty keys, each
/// of a method a tool may ask with and params that are a JSON object, and a state within
/// its size limit.
pub(crate) fn input_required(
    tool: &str,
    asked: wit::InputRequired,
    limits: &Limits,
) -> Result<InputRequired, CallError> {
    let failed = |message: String| CallError::ToolFailed {
        tool: tool.to_owned(),
        message,
    };
    let size = asked.state.as_ref().map_or(0, String::len)
        + asked
            .requests
            .iter()
            .map(|(key, request)| key.len() + request.method.len() + request.params.len())
            .sum::<usize>();
    limits.check_result(tool, size)?;
    if asked.requests.is_empty() || asked.requests.len() > MAX_INPUT_REQUESTS {
        return Err(failed(format!(
            "it asked for input with {} requests; ask 1 to {MAX_INPUT_REQUESTS}",
            asked.requests.len()
        )));
    }
    if asked
        .state
        .as_ref()
        .is_some_and(|state| state.len() > MAX_REQUEST_STATE)
    {
        return Err(failed(format!(
            "it asked for input with a state over {} KiB; keep less, or keep it elsewhere",
            MAX_REQUEST_STATE / 1024
        )));
    }
    let mut requests = BTreeMap::new();
    for (key, request) in asked.requests {
        if !INPUT_METHODS
            .iter()
            .any(|(method, _)| *method == request.method)
        {
            let methods: Vec<&str> = INPUT_METHODS.iter().map(|(method, _)| *method).collect();
            return Err(failed(format!(
                "it asked for input with the method {:?}; a tool may ask with {}",
                request.method.chars().take(80).collect::<String>(),
                methods.join(", ")
            )));
        }
        let params: Value = match request.params.trim() {
            "" => Value::Object(serde_json::Map::new()),
            text => serde_json::from_str(text).map_err(|e| {
                failed(format!(
                    "its `{}` request's params are not JSON ({e})",
                    request.method
                ))
            })?,
        };
        if !params.is_object() {
            return Err(failed(format!(
                "its `{}` request's params are not a JSON object",
                request.method
            )));
        }
        if key.is_empty() || requests.contains_key(&key) {
            return Err(failed(format!(
                "it asked for input under the key {key:?} twice or empty; give each request \
                 a key of its own"
            )));
        }
        requests.insert(
            key,
            InputRequest {
                method: request.method,
                params,
            },
        );
    }
    Ok(InputRequired {
        requests,
        state: asked.state,
        task: None,
    })
}

/// What a model reads of a result: its parts as text (images go as images), or the
/// structured content when there are no parts.
fn model_text(content: &[ContentPart], structured: Option<&Value>) -> String {
    if content.is_empty() {
        return structured.map(Value::to_string).unwrap_or_default();
    }
    content
        .iter()
        .filter(|part| !matches!(part, ContentPart::Image(_)))
        .map(ContentPart::model_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The size of a part as MCP carries it: bytes as base64.
fn carried_size(part: &wit::Content) -> usize {
    let base64 = |bytes: &[u8]| bytes.len().div_ceil(3) * 4;
    match part {
        wit::Content::Text(text) => text.len(),
        wit::Content::Image(media) | wit::Content::Audio(media) => {
            base64(&media.data) + media.mime_type.len()
        }
        wit::Content::ResourceLink(link) => {
            link.uri.len()
                + link.name.len()
                + link.description.as_ref().map_or(0, String::len)
                + link.mime_type.as_ref().map_or(0, String::len)
        }
        wit::Content::EmbeddedResource(resource) => {
            resource.uri.len()
                + resource.mime_type.as_ref().map_or(0, String::len)
                + match &resource.contents {
                    wit::ResourceContents::Text(text) => text.len(),
                    wit::ResourceContents::Blob(bytes) => base64(bytes),
                }
        }
    }
}

/// A part of a 0.2 result as the host carries it, or what is wrong with it.
fn part_of(part: wit::Content) -> Result<ContentPart, String> {
    let media = |media: wit::Media, kind: &str| {
        content::check_mime_type(&media.mime_type, kind)?;
        if media.data.is_empty() {
            return Err(format!("is an {kind} with no bytes"));
        }
        Ok(Media {
            mime_type: media.mime_type,
            data: content::encode(&media.data),
        })
    };
    Ok(match part {
        wit::Content::Text(text) => ContentPart::Text { text },
        wit::Content::Image(image) => ContentPart::Image(media(image, "image")?),
        wit::Content::Audio(audio) => ContentPart::Audio(media(audio, "audio")?),
        wit::Content::ResourceLink(link) => {
            check_uri(&link.uri)?;
            ContentPart::ResourceLink(ResourceLink {
                uri: link.uri,
                name: link.name,
                description: link.description,
                mime_type: link.mime_type,
            })
        }
        wit::Content::EmbeddedResource(resource) => {
            check_uri(&resource.uri)?;
            let (text, blob) = match resource.contents {
                wit::ResourceContents::Text(text) => (Some(text), None),
                wit::ResourceContents::Blob(bytes) => (None, Some(content::encode(&bytes))),
            };
            ContentPart::Resource(EmbeddedResource {
                uri: resource.uri,
                mime_type: resource.mime_type,
                text,
                blob,
            })
        }
    })
}

/// Why `uri` is not a URI (`scheme:rest`), if it is not.
fn check_uri(uri: &str) -> Result<(), String> {
    let scheme = uri.split_once(':').map(|(scheme, _)| scheme);
    match scheme {
        Some(scheme)
            if scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "names the resource {:?}, which is not a URI; use `scheme:...`, such as \
             `file:///notes/a.md`",
            uri.chars().take(80).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: Vec<wit::Content>, structured: Option<&str>) -> VersionedOutcome {
        VersionedOutcome::V0_2(wit::Outcome::Complete(wit::ToolResult {
            content,
            structured: structured.map(str::to_owned),
        }))
    }

    fn failure(result: Result<Checked, CallError>) -> String {
        match result {
            Err(CallError::ToolFailed { message, .. }) => message,
            Err(other) => panic!("not a tool failure: {other}"),
            Ok(checked) => panic!("accepted: {}", checked.text),
        }
    }

    #[test]
    fn parts_are_encoded_and_the_model_reads_the_rest_as_text() {
        let checked = check(
            "t",
            result(
                vec![
                    wit::Content::Text("A chart:".into()),
                    wit::Content::Image(wit::Media {
                        data: vec![1, 2, 3],
                        mime_type: "image/png".into(),
                    }),
                    wit::Content::EmbeddedResource(wit::EmbeddedResource {
                        uri: "test://data".into(),
                        mime_type: Some("text/csv".into()),
                        contents: wit::ResourceContents::Text("a,b".into()),
                    }),
                ],
                None,
            ),
            &Limits::default(),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(checked.text, "A chart:\n[resource test://data]\na,b");
        assert_eq!(
            checked.content[1],
            ContentPart::Image(Media {
                mime_type: "image/png".into(),
                data: "AQID".into()
            })
        );
    }

    #[test]
    fn bad_parts_fail_the_call_and_say_which() {
        let image = |mime: &str, data: Vec<u8>| {
            result(
                vec![
                    wit::Content::Text("x".into()),
                    wit::Content::Image(wit::Media {
                        data,
                        mime_type: mime.into(),
                    }),
                ],
                None,
            )
        };
        let wrong = failure(check(
            "t",
            image("text/html", vec![1]),
            &Limits::default(),
            None,
        ));
        assert!(
            wrong.starts_with("part 1 has the media type \"text/html\""),
            "{wrong}"
        );
        let empty = failure(check(
            "t",
            image("image/png", vec![]),
            &Limits::default(),
            None,
        ));
        assert!(empty.contains("no bytes"), "{empty}");
        let limits = Limits {
            max_result: 1000,
            ..Limits::default()
        };
        let big = check("t", image("image/png", vec![0; 2000]), &limits, None);
        assert!(
            matches!(
                big,
                Err(CallError::ResultTooLarge {
                    size: 2678,
                    limit: 1000,
                    ..
                })
            ),
            "{:?}",
            big.err()
        );
    }

    #[test]
    fn structured_content_must_fit_the_output_schema() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"]
        });
        let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{e}"));
        let limits = Limits::default();
        let ok = check(
            "t",
            result(vec![], Some(r#"{"count": 3}"#)),
            &limits,
            Some(&validator),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.text, r#"{"count":3}"#);
        let wrong = failure(check(
            "t",
            result(vec![], Some(r#"{"count": "three"}"#)),
            &limits,
            Some(&validator),
        ));
        assert!(wrong.contains("at /count"), "{wrong}");
        let missing = failure(check("t", result(vec![], None), &limits, Some(&validator)));
        assert!(missing.contains("no structured content"), "{missing}");
        let not_json = failure(check("t", result(vec![], Some("{")), &limits, None));
        assert!(not_json.contains("not JSON"), "{not_json}");
        // `host check` tells these from the tool's own failures.
        #[cfg(feature = "cli")]
        {
            for message in [&wrong, &missing, &not_json] {
                assert!(breaks_output_schema(message), "{message}");
            }
            assert!(!breaks_output_schema("the city was not found"));
        }
    }
}

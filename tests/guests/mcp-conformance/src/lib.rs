//! The tools the official MCP conformance suite (`@modelcontextprotocol/conformance`, server
//! mode) calls by name, for `host mcp --http` to serve, written against tool contract 0.2
//! (`wit/tool.wit`): text, images, audio, embedded resources, progress, requests for input
//! (from tools and from a prompt), resources and prompts, and the
//! tools of the tasks scenarios (`tasks.rs`). What the suite's revisions still
//! fail is in `tests/mcp_server/conformance-*.yml`, each with its reason.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "toolbox-with-resources-and-prompts",
});

use exports::toolhost::tool::tools::{
    Annotations, CallContext, Content, EmbeddedResource, Guest, Media, Outcome, ResourceContents,
    ToolError, ToolResult, ToolSpec,
};
use exports::toolhost::tool::{prompts, resources};
use toolhost::tool::report;

mod asking;
mod tasks;

/// No arguments at all.
const EMPTY: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

/// The input schema the `json-schema-2020-12` scenario checks, key for key.
const SCHEMA_2020_12: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}"##;

/// A red pixel, as a PNG.
const PNG: [u8; 69] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0,
    0, 0, 144, 119, 83, 222, 0, 0, 0, 12, 73, 68, 65, 84, 120, 156, 99, 248, 207, 192, 0, 0, 3, 1,
    1, 0, 201, 254, 146, 239, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// A tenth of a second of silence, as a WAV file (8 kHz, 8 bits, mono).
fn wav() -> Vec<u8> {
    let samples = 800u32;
    let mut wav = Vec::with_capacity(44 + samples as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + samples).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes());
    wav.extend_from_slice(&8000u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes());
    wav.extend_from_slice(&8u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&samples.to_le_bytes());
    wav.resize(44 + samples as usize, 128);
    wav
}

fn image() -> Content {
    Content::Image(Media {
        data: PNG.to_vec(),
        mime_type: "image/png".to_owned(),
    })
}

fn resource() -> Content {
    Content::EmbeddedResource(EmbeddedResource {
        uri: "test://embedded-resource".to_owned(),
        mime_type: Some("text/plain".to_owned()),
        contents: ResourceContents::Text("This is an embedded resource content.".to_owned()),
    })
}

fn text(text: &str) -> Result<ToolResult, ToolError> {
    Ok(ToolResult {
        content: vec![Content::Text(text.to_owned())],
        structured: None,
    })
}

fn parts(content: Vec<Content>) -> Result<ToolResult, ToolError> {
    Ok(ToolResult {
        content,
        structured: None,
    })
}

/// Waits `ms` milliseconds (the progress scenario wants reports spread over time).
fn pause(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

const TOOLS: [(&str, &str, &str); 11] = [
    (
        "test_simple_text",
        "Returns a fixed text, for the MCP conformance suite.",
        EMPTY,
    ),
    (
        "test_error_handling",
        "Always fails, for the MCP conformance suite.",
        EMPTY,
    ),
    (
        "test_tool_with_logging",
        "Writes three log lines to stderr, then returns.",
        EMPTY,
    ),
    (
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        SCHEMA_2020_12,
    ),
    (
        "test_reconnection",
        "Returns a fixed text (SSE resumability check).",
        EMPTY,
    ),
    ("test_image_content", "Returns a PNG image.", EMPTY),
    ("test_audio_content", "Returns a WAV sound.", EMPTY),
    (
        "test_embedded_resource",
        "Returns an embedded text resource.",
        EMPTY,
    ),
    (
        "test_multiple_content_types",
        "Returns text, an image and a resource.",
        EMPTY,
    ),
    (
        "test_tool_with_progress",
        "Reports progress three times, then returns.",
        EMPTY,
    ),
    (
        "test_logging_tool",
        "Writes three log lines (tool contract 0.2's report), then returns.",
        EMPTY,
    ),
];

struct Conformance;

impl Guest for Conformance {
    fn describe() -> Vec<ToolSpec> {
        TOOLS
            .iter()
            .chain(asking::TOOLS.iter())
            .chain(tasks::TOOLS.iter())
            .map(|(name, description, schema)| ToolSpec {
                name: (*name).to_owned(),
                title: None,
                description: (*description).to_owned(),
                input_schema: (*schema).to_owned(),
                output_schema: None,
                annotations: Annotations {
                    read_only: Some(true),
                    destructive: None,
                    idempotent: None,
                    open_world: Some(false),
                },
                capabilities: Vec::new(),
            })
            .collect()
    }

    fn call(name: String, arguments: String, context: CallContext) -> Result<Outcome, ToolError> {
        if let Some(outcome) = asking::call(&name, &arguments, &context) {
            return outcome;
        }
        if let Some(outcome) = tasks::call(&name, &arguments, &context) {
            return outcome;
        }
        complete(&name, &arguments).map(Outcome::Complete)
    }
}

/// The tools that finish in one round.
fn complete(name: &str, arguments: &str) -> Result<ToolResult, ToolError> {
    match name {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_error_handling" => Err(ToolError::Failed(
            "This tool intentionally returns an error for testing".to_owned(),
        )),
        "test_tool_with_logging" => {
            for line in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ] {
                eprintln!("{line}");
            }
            text("Tool with logging executed successfully")
        }
        // The arguments, as the host passed them (checked against the schema).
        "json_schema_2020_12_tool" => text(arguments),
        "test_reconnection" => text("Reconnection test completed"),
        "test_image_content" => parts(vec![image()]),
        "test_audio_content" => parts(vec![Content::Audio(Media {
            data: wav(),
            mime_type: "audio/wav".to_owned(),
        })]),
        "test_embedded_resource" => parts(vec![resource()]),
        "test_multiple_content_types" => parts(vec![
            Content::Text("Multiple content types test:".to_owned()),
            image(),
            resource(),
        ]),
        "test_logging_tool" => {
            for line in ["Logging started", "Logging more", "Logging done"] {
                report::log(report::Level::Info, line);
            }
            text("Logging tool completed")
        }
        "test_tool_with_progress" => {
            for done in [0.0, 50.0, 100.0] {
                report::progress(done, Some(100.0), Some(&format!("{done}% done")));
                pause(50);
            }
            text("Progress test completed")
        }
        other => Err(ToolError::Failed(format!("no tool `{other}`"))),
    }
}

impl exports::toolhost::tool::resources::Guest for Conformance {
    fn listed() -> Vec<resources::Resource> {
        vec![
            resources::Resource {
                uri: "test://static-text".to_owned(),
                name: "static-text".to_owned(),
                title: Some("Static text".to_owned()),
                description: Some("A fixed text resource.".to_owned()),
                mime_type: Some("text/plain".to_owned()),
            },
            resources::Resource {
                uri: "test://static-binary".to_owned(),
                name: "static-binary".to_owned(),
                title: None,
                description: Some("A fixed binary resource (a PNG).".to_owned()),
                mime_type: Some("image/png".to_owned()),
            },
            // The one the subscription scenarios subscribe to.
            resources::Resource {
                uri: "test://watched-resource".to_owned(),
                name: "watched-resource".to_owned(),
                title: None,
                description: Some("A resource to subscribe to.".to_owned()),
                mime_type: Some("text/plain".to_owned()),
            },
        ]
    }

    fn templates() -> Vec<resources::ResourceTemplate> {
        vec![resources::ResourceTemplate {
            uri_template: "test://template/{id}/data".to_owned(),
            name: "template".to_owned(),
            title: None,
            description: Some("Data for an id.".to_owned()),
            mime_type: Some("application/json".to_owned()),
        }]
    }

    fn read(uri: String) -> Result<Vec<resources::Contents>, resources::ReadError> {
        let contents = |mime: &str, body| resources::Contents {
            uri: uri.clone(),
            mime_type: Some(mime.to_owned()),
            body,
        };
        if uri == "test://static-text" {
            let text = "This is the content of the static text resource.".to_owned();
            return Ok(vec![contents("text/plain", resources::Body::Text(text))]);
        }
        if uri == "test://watched-resource" {
            let text = "A resource to subscribe to.".to_owned();
            return Ok(vec![contents("text/plain", resources::Body::Text(text))]);
        }
        if uri == "test://static-binary" {
            return Ok(vec![contents(
                "image/png",
                resources::Body::Blob(PNG.to_vec()),
            )]);
        }
        let id = uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"));
        match id {
            Some(id) => {
                let text = format!(
                    "{{\"id\":\"{id}\",\"templateTest\":true,\"data\":\"Data for ID: {id}\"}}"
                );
                Ok(vec![contents(
                    "application/json",
                    resources::Body::Text(text),
                )])
            }
            None => Err(resources::ReadError::NotFound(format!("no resource {uri}"))),
        }
    }
}

impl exports::toolhost::tool::prompts::Guest for Conformance {
    fn listed() -> Vec<prompts::Prompt> {
        let argument = |name: &str, description: &str| prompts::Argument {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            required: true,
        };
        let prompt = |name: &str, description: &str, arguments| prompts::Prompt {
            name: name.to_owned(),
            title: None,
            description: Some(description.to_owned()),
            arguments,
        };
        vec![
            prompt("test_simple_prompt", "A prompt without arguments.", vec![]),
            prompt(
                "test_prompt_with_arguments",
                "A prompt with two arguments.",
                vec![
                    argument("arg1", "The first argument."),
                    argument("arg2", "The second argument."),
                ],
            ),
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt that embeds a resource.",
                vec![argument("resourceUri", "The URI of the resource to embed.")],
            ),
            prompt("test_prompt_with_image", "A prompt with an image.", vec![]),
            prompt(
                "test_input_required_result_prompt",
                "Asks the user for a context first.",
                vec![],
            ),
        ]
    }

    fn get(
        name: String,
        arguments: Vec<(String, String)>,
        context: prompts::Context,
    ) -> Result<prompts::Outcome, prompts::PromptError> {
        if name == "test_input_required_result_prompt" {
            return asking::prompt(&context);
        }
        let value = |key: &str| {
            arguments
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| {
                    prompts::PromptError::InvalidArguments(format!("`{name}` needs `{key}`"))
                })
        };
        let user = |part| prompts::Message {
            role: prompts::Role::User,
            part,
        };
        let text = |text: String| user(prompts::Part::Text(text));
        let messages = match name.as_str() {
            "test_simple_prompt" => vec![text("This is a simple prompt for testing.".to_owned())],
            "test_prompt_with_arguments" => vec![text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                value("arg1")?,
                value("arg2")?
            ))],
            "test_prompt_with_embedded_resource" => vec![
                user(prompts::Part::Resource(prompts::TextResource {
                    uri: value("resourceUri")?,
                    mime_type: Some("text/plain".to_owned()),
                    text: "Embedded resource content for testing.".to_owned(),
                })),
                text("Please process the embedded resource above.".to_owned()),
            ],
            "test_prompt_with_image" => vec![
                user(prompts::Part::Image(prompts::Media {
                    data: PNG.to_vec(),
                    mime_type: "image/png".to_owned(),
                })),
                text("Please analyze the image above.".to_owned()),
            ],
            other => {
                return Err(prompts::PromptError::InvalidArguments(format!(
                    "no prompt `{other}`"
                )));
            }
        };
        Ok(prompts::Outcome::Complete(prompts::Filled {
            description: None,
            messages,
        }))
    }

    fn complete(name: String, argument: String, value: String) -> Vec<String> {
        if name != "test_prompt_with_arguments" {
            return Vec::new();
        }
        ["paris", "park", "test-value", "testing"]
            .iter()
            .filter(|word| word.starts_with(value.as_str()) && !argument.is_empty())
            .map(|word| (*word).to_owned())
            .collect()
    }
}

export!(Conformance);

//! The tools the official MCP conformance suite (`@modelcontextprotocol/conformance`, server
//! mode) calls by name, for `host mcp --http` to serve. Only those a toolhost tool can answer
//! are here (text results and errors); the scenarios that need images, audio, resources,
//! progress, sampling or elicitation are in `tests/mcp_server/conformance-baseline.yml`.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "toolbox",
});

use exports::toolhost::tool::tools::{CallContext, Guest, ToolError, ToolSpec};

/// No arguments at all.
const EMPTY: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

/// The input schema the `json-schema-2020-12` scenario checks, key for key.
const SCHEMA_2020_12: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}"##;

const TOOLS: [(&str, &str, &str); 5] = [
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
];

struct Conformance;

impl Guest for Conformance {
    fn describe() -> Vec<ToolSpec> {
        TOOLS
            .iter()
            .map(|(name, description, schema)| ToolSpec {
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                input_schema: (*schema).to_owned(),
                output_schema: None,
                capabilities: Vec::new(),
            })
            .collect()
    }

    fn call(name: String, arguments: String, _context: CallContext) -> Result<String, ToolError> {
        match name.as_str() {
            "test_simple_text" => Ok("This is a simple text response for testing.".to_owned()),
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
                Ok("Tool with logging executed successfully".to_owned())
            }
            // The arguments, as the host passed them (checked against the schema).
            "json_schema_2020_12_tool" => Ok(arguments),
            "test_reconnection" => Ok("Reconnection test completed".to_owned()),
            other => Err(ToolError::Failed(format!("no tool `{other}`"))),
        }
    }
}

export!(Conformance);

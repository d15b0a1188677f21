//! A tool for language models, as a WebAssembly component that toolhost runs sandboxed.
//!
//! The component exports the `tools` interface of `wit/tool.wit` (toolhost's tool contract
//! 0.2): `describe` says what the tools are (name, description, JSON schemas of the arguments
//! and of the result), `call` runs one. Add a tool: describe it in `describe`, run it in
//! `call`, rebuild (`./build.sh`) and check it (`host check dist/NAME.wasm`).

wit_bindgen::generate!({ path: "wit", world: "toolbox" });

use exports::toolhost::tool::tools::{
    Annotations, CallContext, Content, Guest, Outcome, ToolError, ToolResult, ToolSpec,
};
use serde_json::{Value, json};

/// What a call of `count_words` should send, for the messages of invalid arguments.
const SEND: &str = r#"send {"text": "the text to count"}"#;

struct Tools;

impl Guest for Tools {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "count_words".into(),
            title: Some("Count words".into()),
            description: "Counts the words of a text (runs of characters between spaces). Use \
                          it instead of counting by eye."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The text to count the words of."}
                },
                "required": ["text"],
                "additionalProperties": false
            })
            .to_string(),
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {
                        "words": {"type": "integer", "description": "How many words."}
                    },
                    "required": ["words"]
                })
                .to_string(),
            ),
            annotations: Annotations {
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(false),
            },
            // What the tool needs from outside (a directory, a host on the network); nothing
            // here. The host grants only what its manifest says, whatever is asked.
            capabilities: Vec::new(),
        }]
    }

    fn call(name: String, arguments: String, _context: CallContext) -> Result<Outcome, ToolError> {
        match name.as_str() {
            "count_words" => {
                let text = text_argument(&arguments)?;
                let words = count_words(&text);
                Ok(Outcome::Complete(ToolResult {
                    content: vec![Content::Text(format!("{words} words"))],
                    structured: Some(json!({ "words": words }).to_string()),
                }))
            }
            other => Err(ToolError::Failed(format!("there is no tool `{other}`"))),
        }
    }
}

/// The `text` argument, or an invalid-arguments error that says what to send.
fn text_argument(arguments: &str) -> Result<String, ToolError> {
    let invalid = |problem: String| ToolError::InvalidArguments(format!("{problem}; {SEND}"));
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| invalid(format!("the arguments are not JSON ({e})")))?;
    match value.get("text") {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err(invalid(format!("`text` must be a string, not {other}"))),
        None => Err(invalid("`text` is missing".into())),
    }
}

/// The number of words of `text`.
fn count_words(text: &str) -> usize {
    text.split_whitespace().count()
}

export!(Tools);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(count_words("one two  three\nfour"), 4);
        assert_eq!(count_words("   "), 0);
    }

    #[test]
    fn bad_arguments_say_what_to_send() {
        for arguments in ["not json", "{}", r#"{"text": 3}"#] {
            match text_argument(arguments) {
                Err(ToolError::InvalidArguments(message)) => {
                    assert!(message.contains(SEND), "{message}")
                }
                _ => panic!("{arguments} was accepted"),
            }
        }
    }
}

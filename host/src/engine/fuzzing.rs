//! A component's result as the host checks it (tool contract 0.2's parts and structured
//! content), reachable from the fuzz targets (`fuzz/`) without a component. Not part of the
//! API.

use super::bindings::{VersionedOutcome, wit};
use super::result;
use crate::sandbox::Limits;

/// The output schemas a fuzzed result is checked against (chosen by the input).
const SCHEMAS: [&str; 3] = [
    r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#,
    r#"{"type":"array","items":{"type":"string"}}"#,
    r#"{"type":"number","minimum":0}"#,
];

/// Reads the input a piece at a time: a byte, or a length-prefixed run of bytes.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let (&first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        first
    }

    fn bytes(&mut self) -> Vec<u8> {
        let len = usize::from(self.byte()).min(self.0.len());
        let (taken, rest) = self.0.split_at(len);
        self.0 = rest;
        taken.to_vec()
    }

    fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    fn maybe_text(&mut self) -> Option<String> {
        (self.byte() % 2 == 1).then(|| self.text())
    }
}

/// What checking a result built from `bytes` gave: the model's text and the parts' count, or
/// the error's message.
pub fn check_result(bytes: &[u8], max_result: usize) -> Result<(String, usize), String> {
    let mut input = Reader(bytes);
    let schema = match input.byte() % 4 {
        3 => None,
        at => Some(SCHEMAS[usize::from(at)]),
    };
    let parts = input.byte() % 8;
    let mut content = Vec::new();
    for _ in 0..parts {
        let media = |input: &mut Reader<'_>| wit::Media {
            mime_type: input.text(),
            data: input.bytes(),
        };
        content.push(match input.byte() % 5 {
            0 => wit::Content::Text(input.text()),
            1 => wit::Content::Image(media(&mut input)),
            2 => wit::Content::Audio(media(&mut input)),
            3 => wit::Content::ResourceLink(wit::ResourceLink {
                uri: input.text(),
                name: input.text(),
                description: input.maybe_text(),
                mime_type: input.maybe_text(),
            }),
            _ => wit::Content::EmbeddedResource(wit::EmbeddedResource {
                uri: input.text(),
                mime_type: input.maybe_text(),
                contents: if input.byte() % 2 == 0 {
                    wit::ResourceContents::Text(input.text())
                } else {
                    wit::ResourceContents::Blob(input.bytes())
                },
            }),
        });
    }
    let structured = input.maybe_text();
    let validator = match schema {
        Some(schema) => {
            let schema: serde_json::Value =
                serde_json::from_str(schema).map_err(|e| e.to_string())?;
            Some(jsonschema::validator_for(&schema).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let limits = Limits {
        max_result,
        ..Limits::default()
    };
    let result = VersionedOutcome::V0_2(wit::Outcome::Complete(wit::ToolResult {
        content,
        structured,
    }));
    match result::check("fuzzed", result, &limits, validator.as_ref()) {
        Ok(checked) => Ok((checked.text, checked.content.len())),
        Err(error) => Err(error.to_string()),
    }
}

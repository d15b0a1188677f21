//! The toolbox's tools as MCP sees them: `tools/list` entries, and results turned into
//! `CallToolResult`s (with `structuredContent` for a tool that declares an output schema).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use super::content;
use crate::content::ContentPart;
use crate::host::Host;
use crate::offers::Offers;
use crate::source::ToolOutput;
use crate::toolbox::Catalog;
use crate::toolbox::access::Access;

/// The served tools of one catalog: what `tools/list` answers, and how each tool's result is
/// shaped. Made again when the catalog changes.
pub(super) struct Served {
    pub(super) catalog: Arc<Catalog>,
    pub(super) tools: Vec<Tool>,
    /// Where each served tool is in `tools`.
    index: HashMap<String, usize>,
    outputs: HashMap<String, Output>,
    /// What the sources offer besides tools (resources, prompts), merged once.
    pub(super) offers: Offers,
    /// Who may use which of them (`[[mcp.access]]`).
    pub(super) access: Access,
}

/// How the result of a tool with an output schema becomes `structuredContent`.
struct Output {
    /// The tool's own output schema.
    schema: Value,
    /// Compiled at the tool's first result, not at start.
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    /// MCP wants an object: a tool whose results are not objects is served with its schema
    /// under `properties.result`, and its results as `{"result": ...}`.
    wrapped: bool,
}

impl Served {
    /// The tools of `catalog`, with the annotations `host`'s manifest gives them, in the
    /// catalog's order (sources in order, each source's tools in its order).
    pub(super) fn new(host: &Host, catalog: Arc<Catalog>) -> Self {
        let mut tools = Vec::with_capacity(catalog.len());
        let mut outputs = HashMap::new();
        for spec in catalog.iter() {
            let Some(input_schema) = object(&spec.input_schema) else {
                tracing::warn!(
                    tool = %spec.name,
                    "not served over MCP: its input schema is not a JSON object"
                );
                continue;
            };
            let mut tool = Tool::new(spec.name.clone(), spec.description.clone(), input_schema);
            if let Some(schema) = spec.output_schema.as_ref().filter(|s| !is_text(s)) {
                let (served, output) = output(schema);
                if let Some(served) = object(&served) {
                    tool = tool.with_raw_output_schema(served);
                }
                outputs.insert(spec.name.clone(), output);
            }
            let annotations = match host
                .tool_options(&spec.name)
                .and_then(|options| options.annotations.as_ref())
            {
                Some(overrides) => spec.annotations.overridden_by(overrides),
                None => spec.annotations.clone(),
            };
            if !annotations.is_empty() {
                let mut served = ToolAnnotations::new();
                served.title.clone_from(&annotations.title);
                served.read_only_hint = annotations.read_only;
                served.destructive_hint = annotations.destructive;
                served.idempotent_hint = annotations.idempotent;
                served.open_world_hint = annotations.open_world;
                tool = tool.with_annotations(served);
                if let Some(title) = &annotations.title {
                    tool = tool.with_title(title.clone());
                }
            }
            tools.push(tool);
        }
        // Code mode: one more tool, whose program calls the others.
        #[cfg(feature = "code-mode")]
        if let Some(code) = host.code_mode() {
            let spec = code.spec(&catalog.iter().collect::<Vec<_>>());
            if let Some(input_schema) = object(&spec.input_schema) {
                tools.push(Tool::new(spec.name, spec.description, input_schema));
            }
        }
        let index = tools
            .iter()
            .enumerate()
            .map(|(at, tool)| (tool.name.to_string(), at))
            .collect();
        Self {
            catalog,
            tools,
            index,
            outputs,
            offers: host.toolbox().offers(),
            access: Access::new(&host.mcp_config().access),
        }
    }

    /// The served tool called `name`.
    pub(super) fn get(&self, name: &str) -> Option<&Tool> {
        Some(&self.tools[*self.index.get(name)?])
    }

    /// The result of a successful call of `tool`: its parts as the tool gave them (a 0.2
    /// component, an MCP server), or else its text; for a tool with an output schema, its
    /// structured content (the same JSON as its text, for a tool that gives only text). `Err`
    /// says why a result does not fit the tool's declared output schema (a fault of the tool).
    pub(super) fn result(&self, tool: &str, output: ToolOutput) -> Result<CallToolResult, String> {
        // Text alone is served as before parts existed: one text block, the same JSON as the
        // structured content for a tool with an output schema.
        let text_only = output
            .content
            .iter()
            .all(|part| matches!(part, ContentPart::Text { .. }));
        if text_only {
            return self.text_result(tool, output.text, output.structured);
        }
        let mut result =
            CallToolResult::success(output.content.into_iter().map(content::block).collect());
        result.structured_content = match (self.outputs.get(tool), output.structured) {
            (Some(declared), Some(value)) => Some(conforming(declared, value)?),
            (Some(_), None) => {
                return Err(
                    "it declares an output schema, but its result has no structured content"
                        .to_owned(),
                );
            }
            (None, structured) => structured,
        };
        Ok(result)
    }

    fn text_result(
        &self,
        tool: &str,
        text: String,
        structured: Option<Value>,
    ) -> Result<CallToolResult, String> {
        let Some(output) = self.outputs.get(tool) else {
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]));
        };
        // A tool from an MCP server gave its result as JSON already; a component's is text.
        let from_text = structured.is_none();
        let value: Value = match structured {
            Some(value) => value,
            None => serde_json::from_str(&text).map_err(|e| {
                format!("its result is not JSON ({e}), but it declares an output schema")
            })?,
        };
        check(output, &value)?;
        // The text is the same JSON as `structuredContent`, as MCP asks: a client that
        // shows one of them shows the same thing.
        let (structured, text) = if output.wrapped {
            let structured = json!({ "result": value });
            // The tool's own JSON text, checked above, inside the wrapper: the same JSON
            // without writing the value out again.
            let text = if from_text {
                let own = text.trim();
                let mut text = String::with_capacity(own.len() + 11);
                text.push_str("{\"result\":");
                text.push_str(own);
                text.push('}');
                text
            } else {
                structured.to_string()
            };
            (structured, text)
        } else {
            (value, text)
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(structured);
        Ok(result)
    }
}

/// Why `value` does not conform to `output`'s schema, if it does not.
fn check(output: &Output, value: &Value) -> Result<(), String> {
    let validator = output
        .validator
        .get_or_init(|| {
            jsonschema::validator_for(&output.schema)
                .map_err(|e| format!("its output schema is not a valid JSON Schema: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)?;
    // A yes/no check is cheaper than looking for errors: look only when it fails.
    if !validator.is_valid(value)
        && let Some(error) = validator.iter_errors(value).next()
    {
        let at = error.instance_path().to_string();
        return Err(format!(
            "its result does not match its output schema{}: {error}",
            if at.is_empty() {
                String::new()
            } else {
                format!(" at {at}")
            }
        ));
    }
    Ok(())
}

/// `value`, checked against `output`'s schema, as served (wrapped for a schema that is not
/// an object's).
fn conforming(output: &Output, value: Value) -> Result<Value, String> {
    check(output, &value)?;
    Ok(if output.wrapped {
        json!({ "result": value })
    } else {
        value
    })
}

/// Whether an output schema says the result is a string: such a tool returns its text as it
/// is (not as a JSON string), so it is served as a text result without an output schema.
fn is_text(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("string")
}

/// The output schema as served, and how to check results against the tool's own.
fn output(schema: &Value) -> (Value, Output) {
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
    let served = if is_object {
        schema.clone()
    } else {
        wrap(schema)
    };
    let output = Output {
        schema: schema.clone(),
        validator: OnceLock::new(),
        wrapped: !is_object,
    };
    (served, output)
}

/// `{"type": "object", "properties": {"result": schema}, "required": ["result"]}`, with the
/// schema's `$schema` and definitions moved to the top, where its `$ref`s point.
fn wrap(schema: &Value) -> Value {
    let mut inner = schema.clone();
    let mut outer = Map::new();
    if let Some(fields) = inner.as_object_mut() {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(value) = fields.remove(key) {
                outer.insert(key.to_owned(), value);
            }
        }
    }
    outer.insert("type".to_owned(), json!("object"));
    outer.insert("properties".to_owned(), json!({ "result": inner }));
    outer.insert("required".to_owned(), json!(["result"]));
    Value::Object(outer)
}

/// A schema as the JSON object rmcp keeps; `None` if it is not an object.
fn object(schema: &Value) -> Option<Arc<JsonObject>> {
    schema.as_object().map(|fields| Arc::new(fields.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_schema_is_served_under_result_with_its_definitions_on_top() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": { "n": { "type": "number" } },
            "$ref": "#/$defs/n"
        });
        let served = wrap(&schema);
        assert_eq!(
            served,
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": { "n": { "type": "number" } },
                "type": "object",
                "properties": { "result": { "$ref": "#/$defs/n" } },
                "required": ["result"]
            })
        );
        let validator = jsonschema::validator_for(&served).expect("the served schema compiles");
        assert!(validator.is_valid(&json!({ "result": 2.5 })));
        assert!(!validator.is_valid(&json!({ "result": "two" })));
    }
}

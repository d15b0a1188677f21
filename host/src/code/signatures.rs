//! Tools as typed function signatures for a program's author (the model), written from their
//! JSON Schemas in TypeScript's notation, which models read fluently:
//!
//! ```text
//! /** Lists the files of a directory. */
//! list_files(args: { path: string /* A directory, such as /data. */ }): Promise<string>
//! ```
//!
//! A tool with an output schema returns its structured result, typed; one without returns its
//! text. Hand-written: the crates that turn JSON Schema into TypeScript write whole modules
//! (interfaces, exports) for code generation, not one line per tool for a prompt.

use serde_json::Value;

use crate::spec::ToolSpec;

/// How deep a schema is written out; deeper parts are `any`.
pub(super) const MAX_DEPTH: usize = 4;
/// The longest description kept of a property, in characters.
pub(super) const MAX_PROPERTY_NOTE: usize = 80;
/// The longest description kept of a tool, in characters.
pub(super) const MAX_TOOL_NOTE: usize = 300;

/// The signature of `spec`, with its description as a comment above it.
pub fn signature(spec: &ToolSpec) -> String {
    let input = type_of(&spec.input_schema, 0, true);
    let output = match &spec.output_schema {
        Some(schema) => type_of(schema, 0, false),
        None => "string".to_owned(),
    };
    let note = one_line(&spec.description, MAX_TOOL_NOTE);
    format!(
        "/** {note} */\n{}(args: {input}): Promise<{output}>",
        spec.name
    )
}

/// The TypeScript type of `schema`, `depth` levels in; `notes` keeps properties'
/// descriptions as comments (for arguments, which the model must get right).
fn type_of(schema: &Value, depth: usize, notes: bool) -> String {
    let Some(schema) = schema.as_object() else {
        // `true` (anything) or a schema that is not an object.
        return "any".to_owned();
    };
    if depth > MAX_DEPTH {
        return "any".to_owned();
    }
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return union(values.iter().map(Value::to_string).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            return union(
                options
                    .iter()
                    .map(|option| type_of(option, depth + 1, notes))
                    .collect(),
            );
        }
    }
    match schema.get("type") {
        Some(Value::String(kind)) => of_kind(kind, schema, depth, notes),
        Some(Value::Array(kinds)) => union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| of_kind(kind, schema, depth, notes))
                .collect(),
        ),
        _ if schema.contains_key("properties") => of_kind("object", schema, depth, notes),
        _ => "any".to_owned(),
    }
}

fn of_kind(
    kind: &str,
    schema: &serde_json::Map<String, Value>,
    depth: usize,
    notes: bool,
) -> String {
    match kind {
        "string" => "string".to_owned(),
        "number" | "integer" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => {
            let items = schema.get("items").map_or_else(
                || "any".to_owned(),
                |items| type_of(items, depth + 1, notes),
            );
            if items.contains(' ') {
                format!("Array<{items}>")
            } else {
                format!("{items}[]")
            }
        }
        "object" => object(schema, depth, notes),
        _ => "any".to_owned(),
    }
}

fn object(schema: &serde_json::Map<String, Value>, depth: usize, notes: bool) -> String {
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let properties = match schema.get("properties") {
        Some(Value::Object(properties)) if !properties.is_empty() => properties,
        _ => {
            return match schema.get("additionalProperties") {
                Some(values @ Value::Object(_)) => {
                    format!("Record<string, {}>", type_of(values, depth + 1, notes))
                }
                _ => "{}".to_owned(),
            };
        }
    };
    // Required properties first: the ones a call cannot leave out.
    let mut ordered: Vec<(&String, &Value)> = properties.iter().collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    let fields: Vec<String> = ordered
        .into_iter()
        .map(|(name, property)| {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let note = property
                .get("description")
                .and_then(Value::as_str)
                .filter(|_| notes)
                .map(|text| format!(" /* {} */", one_line(text, MAX_PROPERTY_NOTE)))
                .unwrap_or_default();
            format!(
                "{}{optional}: {}{note}",
                key(name),
                type_of(property, depth + 1, notes)
            )
        })
        .collect();
    format!("{{ {} }}", fields.join("; "))
}

/// `name` as a key of an object type: quoted unless it is an identifier.
fn key(name: &str) -> String {
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

fn union(mut types: Vec<String>) -> String {
    types.dedup();
    if types.is_empty() {
        return "any".to_owned();
    }
    types.join(" | ")
}

/// `text` on one line, at most `max` characters (an ellipsis marks a cut), with nothing that
/// would end the comment it goes in.
pub(super) fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace("*/", "* /");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(input: Value, output: Option<Value>) -> ToolSpec {
        ToolSpec {
            name: "list_files".to_owned(),
            description: "Lists the files\nof a directory.".to_owned(),
            input_schema: input,
            output_schema: output,
            requested: Vec::new(),
            annotations: Default::default(),
        }
    }

    #[test]
    fn arguments_are_typed_with_their_notes_and_optional_fields() {
        let input = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A directory, such as /data."},
                "depth": {"type": "integer"},
                "kinds": {"type": "array", "items": {"enum": ["file", "dir"]}},
                "odd key": {"type": ["string", "null"]}
            },
            "required": ["path"]
        });
        assert_eq!(
            signature(&spec(input, None)),
            "/** Lists the files of a directory. */\n\
             list_files(args: { path: string /* A directory, such as /data. */; depth?: number; \
             kinds?: Array<\"file\" | \"dir\">; \"odd key\"?: string | null }): Promise<string>"
        );
    }

    #[test]
    fn an_output_schema_types_the_result() {
        let output = json!({
            "type": "object",
            "properties": {
                "files": {"type": "array", "items": {"type": "string"}, "description": "names"},
                "sizes": {"type": "object", "additionalProperties": {"type": "number"}}
            },
            "required": ["files", "sizes"]
        });
        let signature = signature(&spec(json!({"type": "object"}), Some(output)));
        assert!(
            signature.ends_with(
                "list_files(args: {}): Promise<{ files: string[]; sizes: Record<string, number> }>"
            ),
            "{signature}"
        );
    }

    #[test]
    fn deep_or_odd_schemas_become_any_and_comments_stay_closed() {
        let mut deep = json!({"type": "string"});
        for _ in 0..8 {
            deep = json!({"type": "array", "items": deep});
        }
        let input = json!({"type": "object", "properties": {"x": deep, "y": true}});
        let mut spec = spec(input, None);
        spec.description = "Ends a comment */ early".to_owned();
        let signature = signature(&spec);
        assert!(signature.contains("any"), "{signature}");
        assert!(signature.contains("y?: any"), "{signature}");
        assert!(
            signature.starts_with("/** Ends a comment * / early */"),
            "{signature}"
        );
    }
}

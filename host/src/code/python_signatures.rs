//! Tools as typed function signatures in Python's notation, for the author of a Python
//! program (the Python runner's model): keyword arguments with their types and notes, the
//! result's type, written from the tool's JSON Schemas.
//!
//! ```text
//! # Lists the files of a directory.
//! async def list_files(*,
//!     path: str,  # A directory, such as /data.
//!     depth: int = None,
//! ) -> list[{"kind": str, "name": str}]
//! ```
//!
//! An object's fields are written as a dict of their types (optional ones `NotRequired`), as
//! `TypedDict` declares them. A tool whose argument names are not all Python names takes one
//! dict instead (`tools.NAME({"odd key": 1})`), and its signature says so. Hand-written, like
//! the TypeScript signatures beside it: no crate writes one line per tool for a prompt.

use serde_json::{Map, Value};

use super::signatures::{MAX_DEPTH, MAX_PROPERTY_NOTE, MAX_TOOL_NOTE, one_line};
use crate::spec::ToolSpec;

/// The signature of `spec` in Python's notation, with its description as a comment above it.
pub fn python_signature(spec: &ToolSpec) -> String {
    let output = match &spec.output_schema {
        Some(schema) => type_of(schema, 0),
        None => "str".to_owned(),
    };
    let note = one_line(&spec.description, MAX_TOOL_NOTE);
    format!(
        "# {note}\nasync def {}({}) -> {output}",
        spec.name,
        parameters(&spec.input_schema)
    )
}

/// The parameters of a tool taking `schema`'s object: keyword-only, required ones first, each
/// on a line of its own with its note; or one dict when a name is not a Python name.
fn parameters(schema: &Value) -> String {
    let Some(properties) = schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|properties| !properties.is_empty())
    else {
        return String::new();
    };
    if !properties.keys().all(|name| is_identifier(name)) {
        return format!("arguments: {}, /", type_of(schema, 0));
    }
    let required = schema.as_object().map(required).unwrap_or_default();
    let mut ordered: Vec<(&String, &Value)> = properties.iter().collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    let mut text = String::from("*,\n");
    for (name, property) in ordered {
        let default = if required.contains(&name.as_str()) {
            ""
        } else {
            " = None"
        };
        let note = property
            .get("description")
            .and_then(Value::as_str)
            .map(|text| format!("  # {}", one_line(text, MAX_PROPERTY_NOTE)))
            .unwrap_or_default();
        text.push_str(&format!(
            "    {name}: {}{default},{note}\n",
            type_of(property, 1)
        ));
    }
    text
}

/// The Python type of `schema`, `depth` levels in.
fn type_of(schema: &Value, depth: usize) -> String {
    let Some(schema) = schema.as_object() else {
        return "Any".to_owned();
    };
    if depth > MAX_DEPTH {
        return "Any".to_owned();
    }
    if let Some(value) = schema.get("const") {
        return format!("Literal[{}]", literal(value));
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        let values: Vec<String> = values.iter().map(literal).collect();
        return format!("Literal[{}]", values.join(", "));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            return union(
                options
                    .iter()
                    .map(|option| type_of(option, depth + 1))
                    .collect(),
            );
        }
    }
    match schema.get("type") {
        Some(Value::String(kind)) => of_kind(kind, schema, depth),
        Some(Value::Array(kinds)) => union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| of_kind(kind, schema, depth))
                .collect(),
        ),
        _ if schema.contains_key("properties") => of_kind("object", schema, depth),
        _ => "Any".to_owned(),
    }
}

fn of_kind(kind: &str, schema: &Map<String, Value>, depth: usize) -> String {
    match kind {
        "string" => "str".to_owned(),
        "integer" => "int".to_owned(),
        "number" => "float".to_owned(),
        "boolean" => "bool".to_owned(),
        "null" => "None".to_owned(),
        "array" => format!(
            "list[{}]",
            schema
                .get("items")
                .map_or_else(|| "Any".to_owned(), |items| type_of(items, depth + 1))
        ),
        "object" => object(schema, depth),
        _ => "Any".to_owned(),
    }
}

/// An object's type: a dict of its fields' types, `NotRequired` for those it may leave out.
fn object(schema: &Map<String, Value>, depth: usize) -> String {
    let properties = match schema.get("properties") {
        Some(Value::Object(properties)) if !properties.is_empty() => properties,
        _ => {
            return match schema.get("additionalProperties") {
                Some(values @ Value::Object(_)) => {
                    format!("dict[str, {}]", type_of(values, depth + 1))
                }
                _ => "dict".to_owned(),
            };
        }
    };
    let required = required(schema);
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, property)| {
            let kind = type_of(property, depth + 1);
            let kind = if required.contains(&name.as_str()) {
                kind
            } else {
                format!("NotRequired[{kind}]")
            };
            format!("{}: {kind}", Value::String(name.clone()))
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

/// The names `schema` (an object's) requires.
fn required(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A JSON value as Python writes it (`True`, `None`, `"text"`).
fn literal(value: &Value) -> String {
    match value {
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Null => "None".to_owned(),
        other => other.to_string(),
    }
}

fn union(mut types: Vec<String>) -> String {
    types.dedup();
    if types.is_empty() {
        return "Any".to_owned();
    }
    types.join(" | ")
}

/// Whether `name` can be a keyword argument: a Python identifier (ASCII; no keyword).
fn is_identifier(name: &str) -> bool {
    const KEYWORDS: [&str; 35] = [
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
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
    fn arguments_are_keywords_with_types_notes_and_defaults() {
        let input = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A directory, such as /data."},
                "depth": {"type": "integer"},
                "kinds": {"type": "array", "items": {"enum": ["file", "dir"]}},
                "hidden": {"type": ["boolean", "null"]}
            },
            "required": ["path"]
        });
        assert_eq!(
            python_signature(&spec(input, None)),
            "# Lists the files of a directory.\n\
             async def list_files(*,\n    \
             path: str,  # A directory, such as /data.\n    \
             depth: int = None,\n    \
             hidden: bool | None = None,\n    \
             kinds: list[Literal[\"file\", \"dir\"]] = None,\n) -> str"
        );
    }

    #[test]
    fn an_output_schema_types_the_result_as_dicts_and_lists() {
        let output = json!({
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "size": {"type": ["number", "null"]},
                    "tags": {"type": "object", "additionalProperties": {"type": "boolean"}}
                },
                "required": ["name"]
            }
        });
        let signature = python_signature(&spec(json!({"type": "object"}), Some(output)));
        assert!(
            signature.ends_with(
                "async def list_files() -> list[{\"name\": str, \"size\": NotRequired[float | None], \
                 \"tags\": NotRequired[dict[str, bool]]}]"
            ),
            "{signature}"
        );
    }

    #[test]
    fn names_that_are_not_python_names_take_one_dict() {
        let input = json!({
            "type": "object",
            "properties": {"from": {"type": "string"}, "odd key": {"const": true}},
            "required": ["from"]
        });
        let signature = python_signature(&spec(input, None));
        assert!(
            signature.ends_with(
                "async def list_files(arguments: {\"from\": str, \"odd key\": \
                 NotRequired[Literal[True]]}, /) -> str"
            ),
            "{signature}"
        );
    }
}

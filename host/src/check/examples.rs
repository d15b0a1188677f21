//! Argument values made from a tool's input schema: one that fits (for the example call), and
//! one of the wrong JSON type (for the invalid-arguments check).

use serde_json::{Map, Value, json};

/// Arguments for a call of a tool with `input_schema`: every required property with a value
/// that fits its schema (the schema's own `examples`, `default`, `const` or first `enum` value
/// when it has one, else one made from its type and bounds).
pub fn example_arguments(input_schema: &Value) -> Value {
    let mut arguments = Map::new();
    for name in required(input_schema) {
        let schema = property(input_schema, name).unwrap_or(&Value::Null);
        arguments.insert(name.to_owned(), example_value(schema));
    }
    Value::Object(arguments)
}

/// The names of the required properties of an object schema.
pub fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The schema of property `name` of an object schema.
pub fn property<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    schema.get("properties")?.get(name)
}

/// A value that fits `schema`, as far as a schema's common keywords go.
pub fn example_value(schema: &Value) -> Value {
    if let Some(example) = schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|examples| examples.first())
    {
        return example.clone();
    }
    for keyword in ["const", "default"] {
        if let Some(value) = schema.get(keyword) {
            return value.clone();
        }
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(keyword)
            .and_then(Value::as_array)
            .and_then(|schemas| schemas.first())
        {
            return example_value(first);
        }
    }
    match type_of(schema) {
        Some("string") => example_string(schema),
        Some("integer") => example_number(schema, true),
        Some("number") => example_number(schema, false),
        Some("boolean") => json!(true),
        Some("array") => {
            let items = schema.get("items").unwrap_or(&Value::Null);
            let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            Value::Array((0..count.max(1)).map(|_| example_value(items)).collect())
        }
        Some("null") => Value::Null,
        Some("object") => example_arguments(schema),
        _ => json!("example"),
    }
}

/// A value of another JSON type than `schema` allows.
pub fn wrong_type(schema: &Value) -> Value {
    match type_of(schema) {
        Some("string") => json!(12345),
        Some("number" | "integer") => json!("not a number"),
        Some("boolean") => json!("not a boolean"),
        Some("array") => json!("not an array"),
        _ => json!([["not", "an"], "object"]),
    }
}

/// The schema's type: `type` itself, or the first non-null one of a list of types.
fn type_of(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(ty) => Some(ty),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|ty| *ty != "null"),
        _ => None,
    }
}

fn example_string(schema: &Value) -> Value {
    let text = match schema.get("format").and_then(Value::as_str) {
        Some("date") => "2024-01-31",
        Some("date-time") => "2024-01-31T12:00:00Z",
        Some("time") => "12:00:00Z",
        Some("email") => "someone@example.com",
        Some("uri" | "url") => "https://example.com/",
        Some("uuid") => "123e4567-e89b-12d3-a456-426614174000",
        _ => "example",
    };
    let mut text = text.to_owned();
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    while (text.chars().count() as u64) < min {
        text.push('x');
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        text = text.chars().take(max as usize).collect();
    }
    Value::String(text)
}

fn example_number(schema: &Value, integer: bool) -> Value {
    let bound = |keyword: &str| schema.get(keyword).and_then(Value::as_f64);
    let low = bound("minimum").or(bound("exclusiveMinimum").map(|low| low + 1.0));
    let high = bound("maximum").or(bound("exclusiveMaximum").map(|high| high - 1.0));
    let value = match (low, high) {
        (Some(low), _) if low > 1.0 => low,
        (_, Some(high)) if high < 1.0 => high,
        _ => 1.0,
    };
    let value = if integer { value.ceil() } else { value };
    // A whole number reads as `1`, not `1.0`, and fits `number` as well.
    if value.fract() == 0.0 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_fit_their_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "examples": ["Paris"]},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer", "minimum": 3, "maximum": 7},
                "tags": {"type": "array", "items": {"type": "string", "minLength": 10}},
                "note": {"type": ["string", "null"]},
                "loud": {"type": "boolean"}
            },
            "required": ["city", "unit", "days", "tags", "note"]
        });
        let arguments = example_arguments(&schema);
        assert_eq!(
            arguments,
            json!({"city": "Paris", "unit": "c", "days": 3, "tags": ["examplexxx"], "note": "example"})
        );
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&arguments));
    }

    #[test]
    fn a_wrong_type_never_fits() {
        for ty in ["string", "number", "integer", "boolean", "array", "object"] {
            let schema = json!({"type": ty});
            let validator = jsonschema::validator_for(&schema).unwrap();
            assert!(!validator.is_valid(&wrong_type(&schema)), "{ty}");
        }
    }
}

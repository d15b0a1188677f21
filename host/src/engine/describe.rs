//! A component's answer to `describe`, checked and turned into [`ToolSpec`]s.

use serde_json::Value;

use super::bindings::wit;
use crate::spec::{Capability, CapabilityRequest, ToolAnnotations, ToolSpec, is_valid_tool_name};

/// Turns a spec from `describe` into a checked [`ToolSpec`]. The error says what is wrong, for
/// [`LoadError::InvalidSpec`](crate::error::LoadError). (The toolbox compiles the input schema, for
/// every kind of source.)
pub(crate) fn check(spec: wit::ToolSpec) -> Result<ToolSpec, String> {
    if !is_valid_tool_name(&spec.name) {
        return Err(
            "has a name models cannot call: use 1 to 64 letters, digits, `_` or `-`".to_owned(),
        );
    }
    if spec.description.trim().is_empty() {
        return Err("has no description; the model needs one to know when to call it".to_owned());
    }
    let input_schema: Value = serde_json::from_str(&spec.input_schema)
        .map_err(|e| format!("has an input schema that is not JSON: {e}"))?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(
            "has an input schema whose top level is not `\"type\": \"object\"`; tool arguments \
             are always a JSON object"
                .to_owned(),
        );
    }
    let output_schema = match spec.output_schema {
        Some(text) => {
            let schema: Value = serde_json::from_str(&text)
                .map_err(|e| format!("has an output schema that is not JSON: {e}"))?;
            jsonschema::validator_for(&schema).map_err(|e| {
                format!("has an output schema that is not a valid JSON Schema: {e}")
            })?;
            Some(schema)
        }
        None => None,
    };
    let requested = spec
        .capabilities
        .into_iter()
        .map(|request| CapabilityRequest {
            capability: match request.capability {
                wit::Capability::Http(host) => Capability::Http(host),
                wit::Capability::Env(name) => Capability::Env(name),
                wit::Capability::ReadDir(path) => Capability::ReadDir(path),
                wit::Capability::WriteDir(path) => Capability::WriteDir(path),
                wit::Capability::Socket(addr) => Capability::Socket(addr),
            },
            reason: request.reason,
        })
        .collect();
    if let Some(title) = &spec.title
        && (title.trim().is_empty() || title.len() > 200)
    {
        return Err(
            "has a title that is empty or over 200 bytes; give a short name for people, \
                    or none"
                .to_owned(),
        );
    }
    Ok(ToolSpec {
        name: spec.name,
        description: spec.description,
        input_schema,
        output_schema,
        requested,
        annotations: ToolAnnotations {
            title: spec.title,
            read_only: spec.annotations.read_only,
            destructive: spec.annotations.destructive,
            idempotent: spec.annotations.idempotent,
            open_world: spec.annotations.open_world,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wit_spec(name: &str, schema: &str) -> wit::ToolSpec {
        wit::ToolSpec {
            name: name.into(),
            title: None,
            description: "Does a thing.".into(),
            input_schema: schema.into(),
            output_schema: None,
            annotations: wit::Annotations {
                read_only: None,
                destructive: None,
                idempotent: None,
                open_world: None,
            },
            capabilities: vec![],
        }
    }

    #[test]
    fn schemas_must_be_valid_object_schemas() {
        assert!(check(wit_spec("ok", r#"{"type":"object"}"#)).is_ok());
        let not_object = check(wit_spec("a", r#"{"type":"number"}"#)).unwrap_err();
        assert!(
            not_object.contains("not `\"type\": \"object\"`"),
            "{not_object}"
        );
        let not_json = check(wit_spec("a", "{type: object}")).unwrap_err();
        assert!(not_json.contains("not JSON"), "{not_json}");
    }
}

//! What a tool is, as the host offers it to a model: name, description, schemas, and the
//! capabilities it asks for.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool, as its source describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by; unique among the loaded tools.
    pub name: String,
    /// What it does and when to use it, written for the model.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of its result, when it returns JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What it would like to be granted. Information only.
    #[serde(default)]
    pub requested: Vec<CapabilityRequest>,
    /// What it says about its behaviour, and its title for people (the manifest may
    /// override each).
    #[serde(default, skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
}

/// Hints about a tool's behaviour, for clients that decide what to ask the user before a
/// call (MCP's tool annotations): declared by the tool, overridden per field by the manifest.
/// Hints only: nothing enforces them; the grants do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// It changes nothing outside itself (MCP `readOnlyHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// It may destroy or overwrite data (MCP `destructiveHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect (MCP `idempotentHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// It reaches an open world of outside entities, such as the web (MCP `openWorldHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// These annotations with each field `other` sets taking its place.
    pub fn overridden_by(&self, other: &ToolAnnotations) -> ToolAnnotations {
        ToolAnnotations {
            title: other.title.clone().or_else(|| self.title.clone()),
            read_only: other.read_only.or(self.read_only),
            destructive: other.destructive.or(self.destructive),
            idempotent: other.idempotent.or(self.idempotent),
            open_world: other.open_world.or(self.open_world),
        }
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

/// A capability a tool asks for, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityRequest {
    /// What it asks for.
    pub capability: Capability,
    /// Why, for a person; may be empty.
    pub reason: String,
}

/// A capability, as a tool asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Capability {
    /// Outgoing HTTP to a host pattern.
    Http(String),
    /// Reading an environment variable.
    Env(String),
    /// Reading a directory (a guest path).
    ReadDir(String),
    /// Reading and writing a directory (a guest path).
    WriteDir(String),
    /// Raw sockets to `host:port`.
    Socket(String),
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http(host) => write!(f, "http {host}"),
            Self::Env(name) => write!(f, "env {name}"),
            Self::ReadDir(path) => write!(f, "read {path}"),
            Self::WriteDir(path) => write!(f, "write {path}"),
            Self::Socket(addr) => write!(f, "socket {addr}"),
        }
    }
}

/// The arguments an object schema asks for, as a model should write them, a placeholder for
/// each value: `{"a": <number>, "b": <number>}`, the optional ones named after it. For the
/// messages about bad arguments, which say what to send instead.
pub(crate) fn example_arguments(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "a JSON object".to_owned();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let placeholder = |property: &Value| {
        if let Some(Value::Array(values)) = property.get("enum") {
            let values: Vec<String> = values.iter().map(Value::to_string).collect();
            return values.join(" or ");
        }
        let types: Vec<&str> = match property.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        match types.iter().find(|t| **t != "null") {
            Some(&"number") => "<number>",
            Some(&"integer") => "<whole number>",
            Some(&"string") => "<text>",
            Some(&"boolean") => "<true or false>",
            Some(&"array") => "[...]",
            Some(&"object") => "{...}",
            _ => "<value>",
        }
        .to_owned()
    };
    let (given, optional): (Vec<_>, Vec<_>) = properties
        .iter()
        .partition(|(name, _)| required.contains(&name.as_str()));
    let field =
        |(name, property): (&String, &Value)| format!("\"{name}\": {}", placeholder(property));
    let mut text = format!(
        "{{{}}}",
        given.into_iter().map(field).collect::<Vec<_>>().join(", ")
    );
    if !optional.is_empty() {
        let names: Vec<&str> = optional.iter().map(|(name, _)| name.as_str()).collect();
        text.push_str(&format!(" (optional: {})", names.join(", ")));
    }
    text
}

/// Whether `name` can be offered to a model: `^[a-zA-Z0-9_-]{1,64}$`, which every major
/// provider accepts.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_of_arguments_show_what_to_send() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "algorithm": {"enum": ["sha256", "crc32"]},
            "top": {"type": "integer"},
            "zone": {"type": ["string", "null"]}},
            "required": ["path", "algorithm"]});
        assert_eq!(
            example_arguments(&schema),
            r#"{"algorithm": "sha256" or "crc32", "path": <text>} (optional: top, zone)"#
        );
    }

    #[test]
    fn names_follow_the_providers_rule() {
        assert!(is_valid_tool_name("square_root"));
        assert!(is_valid_tool_name("get-weather2"));
        assert!(!is_valid_tool_name("square root"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
    }
}

//! A tool call's arguments: one JSON object, parsed once where the call arrives (a model's
//! answer, an MCP request, the command line, an embedding application's text) and then used
//! as it is by every check (the schema, the loop's guards), the audit log and the call.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// A tool call's arguments: a JSON object.
///
/// ```
/// use toolhost::Arguments;
///
/// let arguments: Arguments = r#"{"x": 2}"#.parse()?;
/// assert_eq!(arguments.value()["x"], 2);
/// // Models send nothing at all for tools that take no arguments: that is `{}`.
/// assert_eq!("".parse::<Arguments>()?.text(), "{}");
/// assert!("[1, 2]".parse::<Arguments>().is_err());
/// # Ok::<(), toolhost::ArgumentsError>(())
/// ```
#[derive(Clone)]
pub struct Arguments {
    /// Always an object.
    value: Value,
    /// The object as JSON text, as a component receives it: the text it was parsed from, or
    /// written when first asked for.
    text: OnceLock<String>,
}

/// Why a text is not a call's arguments.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentsError {
    /// The text is not JSON.
    #[error("the arguments are not JSON")]
    NotJson(#[source] serde_json::Error),
    /// The text is JSON, but not an object.
    #[error("the arguments must be a JSON object, not {found}")]
    NotObject {
        /// What it is instead: `an array`, `a string`, ...
        found: &'static str,
    },
}

impl Arguments {
    /// Parses `text`, which must be a JSON object; empty text (or only white space) is `{}`,
    /// as several models send for tools that take nothing.
    pub fn parse(text: &str) -> Result<Self, ArgumentsError> {
        if text.trim().is_empty() {
            return Ok(Self::empty());
        }
        match serde_json::from_str(text).map_err(ArgumentsError::NotJson)? {
            value @ Value::Object(_) => Ok(Self {
                value,
                text: OnceLock::from(text.to_owned()),
            }),
            other => Err(ArgumentsError::NotObject {
                found: kind(&other),
            }),
        }
    }

    /// Arguments already parsed: an MCP request's `arguments`, or an application's own.
    pub fn from_object(object: Map<String, Value>) -> Self {
        Self {
            value: Value::Object(object),
            text: OnceLock::new(),
        }
    }

    /// No arguments: `{}`.
    pub fn empty() -> Self {
        Self::from_object(Map::new())
    }

    /// `text` as it is, whether or not it is a JSON object: for testing how a tool handles
    /// arguments the host would refuse ([`Toolbox::call_unchecked`](crate::Toolbox)). A
    /// component gets the text; other sources get the object it parses to, or `{}`.
    #[doc(hidden)]
    pub fn unchecked(text: &str) -> Self {
        let value = match serde_json::from_str(text) {
            Ok(value @ Value::Object(_)) => value,
            _ => Value::Object(Map::new()),
        };
        Self {
            value,
            text: OnceLock::from(text.to_owned()),
        }
    }

    /// The arguments as a JSON value (always an object).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The arguments as a JSON object.
    pub fn to_object(&self) -> Map<String, Value> {
        match &self.value {
            Value::Object(object) => object.clone(),
            _ => Map::new(),
        }
    }

    /// The arguments as JSON text.
    pub fn text(&self) -> &str {
        self.text.get_or_init(|| self.value.to_string())
    }

    /// The call's identity for tool `tool`: the tool and its arguments, with object keys
    /// sorted and integral numbers written without a fraction (so key order, spacing and `2`
    /// against `2.0` do not make two calls different).
    pub fn identity(&self, tool: &str) -> String {
        let mut key = format!("{tool}\0");
        write_canonical(&self.value, &mut key);
        key
    }
}

impl FromStr for Arguments {
    type Err = ArgumentsError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Debug for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl PartialEq for Arguments {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

/// What kind of JSON value `value` is, for a message.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Writes `value` with object keys sorted and integral numbers without a fraction.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Number(number) => match number.as_f64() {
            Some(f) if number.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                out.push_str(&(f as i64).to_string());
            }
            _ => out.push_str(&number.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_is_no_arguments_and_non_objects_are_refused() {
        assert_eq!(Arguments::parse("  ").unwrap().text(), "{}");
        let array = Arguments::parse("[1]").unwrap_err();
        assert_eq!(
            array.to_string(),
            "the arguments must be a JSON object, not an array"
        );
        assert!(matches!(
            Arguments::parse("{x").unwrap_err(),
            ArgumentsError::NotJson(_)
        ));
    }

    #[test]
    fn the_text_a_component_gets_is_the_text_given() {
        let text = r#"{ "b": 1,  "a": 2 }"#;
        assert_eq!(Arguments::parse(text).unwrap().text(), text);
        let object = Arguments::from_object(Map::from_iter([("a".to_owned(), 2.into())]));
        assert_eq!(object.text(), r#"{"a":2}"#);
    }

    #[test]
    fn identical_calls_have_one_identity_however_written() {
        let identity = |tool: &str, text: &str| Arguments::parse(text).unwrap().identity(tool);
        let a = identity("add", r#"{"a": 1, "b": {"y": 2.0, "x": [1, "s"]}}"#);
        assert_eq!(a, identity("add", r#"{"b":{"x":[1.0,"s"],"y":2},"a":1}"#));
        assert_ne!(
            a,
            identity("multiply", r#"{"a": 1, "b": {"y": 2, "x": [1, "s"]}}"#)
        );
        assert_ne!(
            a,
            identity("add", r#"{"a": 1.5, "b": {"y": 2, "x": [1, "s"]}}"#)
        );
        assert_eq!(identity("now", ""), identity("now", "{}"));
    }

    #[test]
    fn identity_ignores_key_order_spacing_and_integral_fractions() {
        let a = Arguments::parse(r#"{"b": [1, {"y": 2, "x": 1}], "a": 2.0}"#).unwrap();
        let b = Arguments::parse(r#"{"a":2,"b":[1,{"x":1,"y":2}]}"#).unwrap();
        assert_eq!(a.identity("t"), b.identity("t"));
        assert_ne!(a.identity("t"), b.identity("u"));
        let c = Arguments::parse(r#"{"a": 2.5, "b": [1, {"x": 1, "y": 2}]}"#).unwrap();
        assert_ne!(a.identity("t"), c.identity("t"));
    }
}

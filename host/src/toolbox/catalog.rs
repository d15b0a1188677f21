//! A toolbox's tools at one moment ([`Catalog`]): every source's tools under the names the
//! model sees, each with its schema's validator; and the checks made against it: a call's
//! arguments against its tool's schema, a source's `tools` and `exclude` lists against what
//! it offers (with the closest name for a typo).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::arguments::Arguments;
use crate::engine::component::LoadedComponent;
use crate::error::{CallError, LoadError};
#[cfg(feature = "mcp-client")]
use crate::mcp::client::McpClient;
use crate::source::{Origin, SourceOptions, ToolSource};
use crate::spec::{ToolSpec, is_valid_tool_name};

/// One source of a toolbox, with the options it was added with.
pub(super) struct Slot {
    pub(super) source: Arc<dyn ToolSource>,
    pub(super) options: SourceOptions,
    pub(super) component: Option<Arc<LoadedComponent>>,
    #[cfg(feature = "mcp-client")]
    pub(super) mcp: Option<Arc<McpClient>>,
}

/// The tools of a toolbox at one moment: their specs under the names the model sees, and
/// where each comes from. Cheap to hold; a source whose tools change makes a new one.
pub struct Catalog {
    pub(super) entries: Vec<Entry>,
    pub(super) index: HashMap<String, usize>,
    /// Each slot's generation when this catalog was made.
    pub(super) generations: Vec<u64>,
}

pub(super) struct Entry {
    pub(super) spec: ToolSpec,
    pub(super) slot: usize,
    /// The tool's name at its source.
    pub(super) own_name: String,
    pub(super) origin: Origin,
    pub(super) validator: Arc<jsonschema::Validator>,
}

impl Catalog {
    pub(super) fn build(slots: &[Slot], previous: Option<&Catalog>) -> Result<Self, LoadError> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut index = HashMap::new();
        let mut generations = Vec::with_capacity(slots.len());
        for (s, slot) in slots.iter().enumerate() {
            generations.push(slot.source.generation());
            let origin = slot.source.origin();
            let tools = slot.source.tools();
            check_lists(slot, origin, &tools, previous.is_none())?;
            for mut spec in tools.into_iter().filter(|t| slot.options.offers(&t.name)) {
                let own_name = std::mem::take(&mut spec.name);
                spec.name = format!("{}{own_name}", slot.options.prefix);
                let invalid = |problem: String| LoadError::InvalidSpec {
                    origin: origin.to_string(),
                    tool: own_name.clone(),
                    problem,
                };
                if !is_valid_tool_name(&spec.name) {
                    return Err(invalid(format!(
                        "would be offered as `{}`, a name models cannot call: use 1 to 64 \
                         letters, digits, `_` or `-` (shorten the prefix)",
                        spec.name
                    )));
                }
                if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
                    return Err(invalid(
                        "has an input schema whose top level is not `\"type\": \"object\"`; \
                         tool arguments are always a JSON object (take a struct)"
                            .to_owned(),
                    ));
                }
                if let Some(&first) = index.get(&spec.name) {
                    let first: &Entry = &entries[first];
                    return Err(LoadError::DuplicateTool {
                        tool: spec.name,
                        first: first.origin.to_string(),
                        second: origin.to_string(),
                    });
                }
                let reused = previous.and_then(|catalog| {
                    let entry = &catalog.entries[*catalog.index.get(&spec.name)?];
                    (entry.spec.input_schema == spec.input_schema).then(|| entry.validator.clone())
                });
                let validator = match reused {
                    Some(validator) => validator,
                    None => {
                        Arc::new(jsonschema::validator_for(&spec.input_schema).map_err(|e| {
                            invalid(format!(
                                "has an input schema that is not a valid JSON Schema: {e}"
                            ))
                        })?)
                    }
                };
                index.insert(spec.name.clone(), entries.len());
                entries.push(Entry {
                    spec,
                    slot: s,
                    own_name,
                    origin: origin.clone(),
                    validator,
                });
            }
        }
        Ok(Self {
            entries,
            index,
            generations,
        })
    }

    /// Every tool, in source order.
    pub fn iter(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.iter().map(|entry| &entry.spec)
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        Some(&self.entries[*self.index.get(name)?].spec)
    }

    /// Where tool `name` comes from.
    pub fn origin(&self, name: &str) -> Option<&Origin> {
        Some(&self.entries[*self.index.get(name)?].origin)
    }

    /// The names of every tool, in source order.
    pub fn names(&self) -> Vec<String> {
        self.iter().map(|spec| spec.name.clone()).collect()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Checks that every name in `slot`'s `tools` and `exclude` lists is one of its `tools`: such a
/// name is a typo, and an exclusion that excludes nothing would offer a tool the manifest
/// meant to hide. `exclude` is checked only when the source is `first` listed: a tool an MCP
/// server drops later is not offered anyway.
fn check_lists(
    slot: &Slot,
    origin: &Origin,
    tools: &[ToolSpec],
    first: bool,
) -> Result<(), LoadError> {
    let include = slot.options.include.iter().flatten().map(|n| ("tools", n));
    let exclude = slot.options.exclude.iter().map(|n| ("exclude", n));
    for (key, name) in include.chain(exclude.filter(|_| first)) {
        if !tools.iter().any(|t| &t.name == name) {
            let offered: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            return Err(LoadError::NoSuchTool {
                origin: origin.to_string(),
                key,
                tool: name.clone(),
                closest: closest(name, &offered).map(str::to_owned),
                offered,
            });
        }
    }
    Ok(())
}

/// Checks `arguments` against tool `name`'s schema. They fit as they are (`Ok(None)`), or
/// once the optional ones that are `null` are left out (`Ok(Some(those))`): a `null` where
/// the schema takes no `null` is how many models, and MCP clients, write "not given".
pub(super) fn check(
    catalog: &Catalog,
    name: &str,
    arguments: &Arguments,
) -> Result<Option<Arguments>, CallError> {
    let Some(&at) = catalog.index.get(name) else {
        return Err(CallError::UnknownTool {
            name: name.to_owned(),
            available: catalog.names(),
        });
    };
    let entry = &catalog.entries[at];
    let validator = &entry.validator;
    let value = arguments.value();
    // A yes/no check is cheaper than collecting errors: collect them only when it fails.
    if validator.is_valid(value) {
        return Ok(None);
    }
    if let Some(given) = without_optional_nulls(&entry.spec.input_schema, value)
        && validator.is_valid(given.value())
    {
        return Ok(Some(given));
    }
    let problems: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("at {at}: {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(None)
    } else {
        Err(invalid_arguments(catalog, name, problems.join("; ")))
    }
}

/// `arguments` without the properties that are `null` and not required by `schema`; `None`
/// when there are none.
fn without_optional_nulls(schema: &Value, arguments: &Value) -> Option<Arguments> {
    let object = arguments.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let is_dropped = |name: &str, value: &Value| value.is_null() && !required.contains(&name);
    if !object.iter().any(|(name, value)| is_dropped(name, value)) {
        return None;
    }
    let kept = object
        .iter()
        .filter(|(name, value)| !is_dropped(name, value))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    Some(Arguments::from_object(kept))
}

/// Arguments of tool `name` that do not fit: `message`, then what to send instead.
pub(super) fn invalid_arguments(catalog: &Catalog, name: &str, message: String) -> CallError {
    let example = catalog
        .index
        .get(name)
        .map(|&at| crate::spec::example_arguments(&catalog.entries[at].spec.input_schema));
    CallError::InvalidArguments {
        tool: name.to_owned(),
        message: match example {
            // Every message ends with what to send instead.
            Some(example) => format!("{message}; send {example}"),
            None => message,
        },
    }
}

/// The name of `names` closest to `typed` (letter case and surrounding spaces aside, a few
/// letters off), for a "did you mean" hint.
fn closest<'a>(typed: &str, names: &'a [String]) -> Option<&'a str> {
    let typed = typed.trim().to_lowercase();
    names
        .iter()
        .map(|name| (strsim::levenshtein(&typed, &name.to_lowercase()), name))
        .filter(|(distance, name)| *distance <= 2.max(name.len() / 4))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name.as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_optional_nulls_are_left_out() {
        let schema = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
            "required": ["city"]
        });
        let given = without_optional_nulls(&schema, &json!({"city": "Oslo", "units": null}));
        assert_eq!(
            given.map(|a| a.value().clone()),
            Some(json!({"city": "Oslo"}))
        );
        // A required null stays (and is then refused by the schema, naming it).
        let required = without_optional_nulls(&schema, &json!({"city": null}));
        assert!(required.is_none());
        // Nothing to leave out.
        assert!(without_optional_nulls(&schema, &json!({"city": "Oslo"})).is_none());
    }
}

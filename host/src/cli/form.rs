//! Answering, at the terminal, a tool that asks for input before it can finish (contract
//! 0.2's `input-required`): a question for the user (`elicitation/create`) becomes a form
//! built from its schema, a field a line, like the approval prompt; without a terminal it
//! is refused with a message that says why. `host run` lends a tool no model
//! (`sampling/createMessage` is refused) and shares no directories (`roots/list` is answered
//! with none).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use toolhost::InputRequest;
use toolhost::agent::{AskingCall, InputAnswer};

use super::input::Input;

/// What the user (or nobody) answers to every request of `asking`.
pub async fn answer(asking: &AskingCall, input: &mut Input) -> anyhow::Result<InputAnswer> {
    let mut answers = BTreeMap::new();
    for (key, request) in &asking.requests {
        let answer = match request.method.as_str() {
            "elicitation/create" if input.is_terminal() => {
                elicit(&asking.tool, request, input).await?
            }
            "elicitation/create" => {
                return Ok(refused(
                    asking,
                    "it asks the user a question, and there is no terminal to ask on; run host \
                     run (or host chat) in a terminal to answer it",
                ));
            }
            "roots/list" => json!({ "roots": [] }),
            "sampling/createMessage" => {
                return Ok(refused(
                    asking,
                    "it asks for a model's answer (sampling), which host run does not lend to \
                     tools",
                ));
            }
            other => {
                return Ok(refused(
                    asking,
                    &format!("it asks with `{other}`, which host run does not know"),
                ));
            }
        };
        answers.insert(key.clone(), answer);
    }
    Ok(InputAnswer::Given(answers))
}

fn refused(asking: &AskingCall, why: &str) -> InputAnswer {
    eprintln!("{} asked for input: {why}.", asking.tool);
    InputAnswer::Refused(why.to_owned())
}

/// Shows an elicitation's message and asks accept / decline / cancel, then each field.
async fn elicit(tool: &str, request: &InputRequest, input: &mut Input) -> anyhow::Result<Value> {
    let message = request.params["message"].as_str().unwrap_or_default();
    eprintln!("? {tool} asks: {message}");
    let schema = &request.params["requestedSchema"];
    loop {
        eprint!("  answer? [y]es, [n]o (decline), [c]ancel: ");
        let Some(line) = input.line().await? else {
            eprintln!();
            return Ok(json!({ "action": "cancel" }));
        };
        match line.trim().to_lowercase().as_str() {
            "y" | "yes" => break,
            "n" | "no" => return Ok(json!({ "action": "decline" })),
            "c" | "cancel" => return Ok(json!({ "action": "cancel" })),
            _ => eprintln!("  please answer y, n or c"),
        }
    }
    let mut content = Map::new();
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, field) in properties {
        let needed = required.contains(&name.as_str());
        let Some(value) = ask_field(name, field, needed, input).await? else {
            if needed {
                // The input ended before a required field was given.
                return Ok(json!({ "action": "cancel" }));
            }
            continue;
        };
        content.insert(name.clone(), value);
    }
    Ok(json!({ "action": "accept", "content": content }))
}

/// Asks for field `name` until the line typed is a value of its schema `field`; `None` for
/// an optional field left empty, or when the input ends.
async fn ask_field(
    name: &str,
    field: &Value,
    required: bool,
    input: &mut Input,
) -> anyhow::Result<Option<Value>> {
    let choices = choices(field);
    let label = field["title"].as_str().unwrap_or(name);
    let mut prompt = format!("  {label}");
    if let Some(description) = field["description"].as_str() {
        prompt.push_str(&format!(" ({description})"));
    }
    if !choices.is_empty() {
        let listed: Vec<String> = choices
            .iter()
            .enumerate()
            .map(|(i, (_, title))| format!("{}. {title}", i + 1))
            .collect();
        prompt.push_str(&format!(" [{}]", listed.join(", ")));
    } else if field["type"] == "boolean" {
        prompt.push_str(" [y/n]");
    }
    if let Some(default) = field.get("default") {
        prompt.push_str(&format!(" (default {default})"));
    } else if !required {
        prompt.push_str(" (optional)");
    }
    loop {
        eprint!("{prompt}: ");
        let Some(line) = input.line().await? else {
            eprintln!();
            return Ok(None);
        };
        let line = line.trim();
        if line.is_empty() {
            if let Some(default) = field.get("default") {
                return Ok(Some(default.clone()));
            }
            if !required {
                return Ok(None);
            }
            eprintln!("  {label} is required");
            continue;
        }
        match parse(line, field, &choices) {
            Ok(value) => return Ok(Some(value)),
            Err(problem) => eprintln!("  {problem}"),
        }
    }
}

/// The values a field allows, with their titles: `enum` (titled by `enumNames` when given),
/// or `oneOf`/`anyOf` of `const`s (titled by their `title`).
fn choices(field: &Value) -> Vec<(Value, String)> {
    if let Some(values) = field["enum"].as_array() {
        let names = field["enumNames"].as_array();
        return values
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let title = names
                    .and_then(|names| names.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| plain(value), str::to_owned);
                (value.clone(), title)
            })
            .collect();
    }
    let options = field["oneOf"].as_array().or(field["anyOf"].as_array());
    options
        .into_iter()
        .flatten()
        .filter_map(|option| {
            let value = option.get("const")?.clone();
            let title = option["title"]
                .as_str()
                .map_or_else(|| plain(&value), str::to_owned);
            Some((value, title))
        })
        .collect()
}

/// A JSON value as a person reads it: a string without its quotes.
fn plain(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// The value `line` gives a field of schema `field`, or what is wrong with it.
fn parse(line: &str, field: &Value, choices: &[(Value, String)]) -> Result<Value, String> {
    if !choices.is_empty() {
        let by_number = line
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| choices.get(i));
        let by_name = choices
            .iter()
            .find(|(value, title)| title.eq_ignore_ascii_case(line) || plain(value) == line);
        return by_number
            .or(by_name)
            .map(|(value, _)| value.clone())
            .ok_or_else(|| {
                format!(
                    "please answer one of: {}",
                    choices
                        .iter()
                        .map(|(_, title)| title.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
    }
    match field["type"].as_str() {
        Some("boolean") => match line.to_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("please answer y or n".to_owned()),
        },
        Some("integer") => line
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "please type a whole number".to_owned()),
        Some("number") => line
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(Value::from)
            .ok_or_else(|| "please type a number".to_owned()),
        _ => text(line, field),
    }
}

/// `line` as a string field's value, within its length bounds.
fn text(line: &str, field: &Value) -> Result<Value, String> {
    let length = line.chars().count() as u64;
    if let Some(min) = field["minLength"].as_u64().filter(|&min| length < min) {
        return Err(format!("please type at least {min} characters"));
    }
    if let Some(max) = field["maxLength"].as_u64().filter(|&max| length > max) {
        return Err(format!("please type at most {max} characters"));
    }
    Ok(Value::String(line.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_becomes_a_value_of_its_field_or_says_what_is_wrong() {
        let boolean = json!({"type": "boolean"});
        assert_eq!(parse("yes", &boolean, &[]), Ok(json!(true)));
        assert!(parse("maybe", &boolean, &[]).is_err());
        let age = json!({"type": "integer"});
        assert_eq!(parse("42", &age, &[]), Ok(json!(42)));
        assert_eq!(
            parse("4.2", &age, &[]),
            Err("please type a whole number".into())
        );
        let name = json!({"type": "string", "minLength": 2, "maxLength": 4});
        assert_eq!(parse("Ann", &name, &[]), Ok(json!("Ann")));
        assert!(parse("A", &name, &[]).unwrap_err().contains("at least 2"));
        assert!(
            parse("Annabel", &name, &[])
                .unwrap_err()
                .contains("at most 4")
        );
    }

    #[test]
    fn a_choice_is_taken_by_number_title_or_value() {
        let field = json!({"type": "string", "oneOf": [
            {"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}
        ]});
        let options = choices(&field);
        assert_eq!(parse("2", &field, &options), Ok(json!("g")));
        assert_eq!(parse("red", &field, &options), Ok(json!("r")));
        assert_eq!(parse("g", &field, &options), Ok(json!("g")));
        assert!(
            parse("blue", &field, &options)
                .unwrap_err()
                .contains("Red, Green")
        );
        let field = json!({"type": "string", "enum": ["small", "large"]});
        assert_eq!(parse("large", &field, &choices(&field)), Ok(json!("large")));
    }
}

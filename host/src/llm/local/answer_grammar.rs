//! The local model's answer to a tool's result, held to the values the result holds.
//!
//! Answering freely from a result, the 270M model copies values wrongly (digits moved,
//! doubled or changed, a date's month off by one, a separator where there was none) and
//! picks a value that answers nothing (the byte count of a text, asked for its hash). Here its
//! answer is held, through the server's grammar, to one sentence stating one value of the
//! result, exactly as the result has it: "The checksum is b94d27b9....", "The time is
//! 04:02:20.". Where the question names some of the result's fields ("What time ...",
//! "how many words ..."), only those are offered; the model picks among what is left.

use serde_json::Value;

use crate::english::{stem, words};

/// A value longer than this is not offered (the model would have to copy it whole).
const MAX_VALUE_CHARS: usize = 600;

/// A GBNF grammar for an answer to `question` from a tool's `result`: "The <field> is
/// <value>." for each field of a JSON object, "The result is <value>." for a plain value,
/// a list or a text. `None` when the result offers no value to state (an empty result, or
/// only values too long to copy).
pub(super) fn grammar(question: &str, result: &str) -> Option<String> {
    let statements: Vec<String> = narrowed(question, candidates(result))
        .into_iter()
        .map(|candidate| candidate.sentence())
        .collect();
    if statements.is_empty() {
        return None;
    }
    let choices: Vec<String> = statements.iter().map(|s| literal(s)).collect();
    Some(format!("root ::= {}\n", choices.join(" | ")))
}

/// One value the answer may state, and the field it came from.
#[derive(Debug)]
struct Candidate {
    /// The field's name in words ("utc offset"); `None` for the whole result.
    label: Option<String>,
    value: String,
    /// Whether the value lists several (only said of a field: "The results are ...").
    list: bool,
}

impl Candidate {
    fn sentence(&self) -> String {
        let end = if self.value.ends_with(['.', '!', '?']) {
            ""
        } else {
            "."
        };
        match &self.label {
            Some(label) => {
                let verb = if self.list { "are" } else { "is" };
                format!("The {label} {verb} {}{end}", self.value)
            }
            None => format!("The result is {}{end}", self.value),
        }
    }
}

/// The values of `result` worth stating: each scalar or list field of an object, or the
/// whole result.
fn candidates(result: &str) -> Vec<Candidate> {
    let whole = |value: String| Candidate {
        label: None,
        value,
        list: false,
    };
    let Ok(json) = serde_json::from_str::<Value>(result) else {
        let text = result.trim();
        return short(text)
            .then(|| whole(text.to_owned()))
            .into_iter()
            .collect();
    };
    match json {
        Value::Object(fields) => fields
            .iter()
            .filter_map(|(key, value)| {
                let (label, unit) = label(key);
                let (value, list) = match value {
                    Value::Array(items) => (listed(items)?, items.len() > 1),
                    other => (scalar(other)?, false),
                };
                let value = match unit {
                    Some(unit) => format!("{value} {unit}"),
                    None => value,
                };
                Some(Candidate {
                    label: Some(label),
                    value,
                    list,
                })
            })
            .collect(),
        Value::Array(items) => listed(&items).map(whole).into_iter().collect(),
        other => scalar(&other).map(whole).into_iter().collect(),
    }
}

/// A field's name in words, and the unit its last word stands for, by the common convention
/// of naming a field after its unit ("speed_kmh" is "speed" in km/h).
fn label(key: &str) -> (String, Option<&'static str>) {
    let words: Vec<String> = key
        .split(|c: char| c == '_' || c == '-' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let unit = match words.last().map(String::as_str) {
        Some("c" | "celsius") => Some("°C"),
        Some("f" | "fahrenheit") => Some("°F"),
        Some("kmh" | "kph") => Some("km/h"),
        Some("mph") => Some("mph"),
        Some("percent" | "pct") => Some("%"),
        Some("ms") => Some("ms"),
        _ => None,
    };
    match unit {
        Some(unit) if words.len() > 1 => (words[..words.len() - 1].join(" "), Some(unit)),
        _ => (words.join(" "), None),
    }
}

/// A number as people write it (6912, not 6912.0), a short string, or a truth value.
fn scalar(value: &Value) -> Option<String> {
    let text = match value {
        Value::Number(number) => match number.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => number.to_string(),
        },
        Value::String(text) => text.trim().to_owned(),
        Value::Bool(truth) => truth.to_string(),
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    };
    short(&text).then_some(text)
}

/// The items of a list, joined: scalars as they are, objects by the field that tells them
/// apart ([`telling_field`]; else their first string).
fn listed(items: &[Value]) -> Option<String> {
    let telling = telling_field(items);
    let parts = items
        .iter()
        .map(|item| match item {
            Value::Object(fields) => telling
                .and_then(|key| fields.get(key))
                .and_then(Value::as_str)
                .or_else(|| fields.values().find_map(Value::as_str))
                .map(str::to_owned),
            other => scalar(other),
        })
        .collect::<Option<Vec<String>>>()?;
    let joined = parts.join(", ");
    short(&joined).then_some(joined)
}

/// Of the string fields every object of `items` has, the one whose values differ most from
/// item to item (what names each item, rather than what sorts them into kinds); between
/// equals, the one whose values are longest. `None` when the items are not such objects.
fn telling_field(items: &[Value]) -> Option<&str> {
    let objects: Vec<&serde_json::Map<String, Value>> =
        items.iter().map(Value::as_object).collect::<Option<_>>()?;
    let first = objects.first()?;
    first
        .keys()
        .filter_map(|key| {
            let values: Vec<&str> = objects
                .iter()
                .map(|object| object.get(key).and_then(Value::as_str))
                .collect::<Option<_>>()?;
            let mut distinct = values.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let length: usize = values.iter().map(|value| value.chars().count()).sum();
            Some((key.as_str(), distinct.len(), length))
        })
        // The first of the best, in the order of the fields.
        .rev()
        .max_by_key(|&(_, distinct, length)| (distinct, length))
        .map(|(key, ..)| key)
}

fn short(text: &str) -> bool {
    !text.is_empty() && text.chars().count() <= MAX_VALUE_CHARS
}

/// The candidates whose field the question names: every word of the field's name among
/// the question's words, as written if any, else with the same stem ("sentence" for
/// "sentences"). All of them when the question names none.
fn narrowed(question: &str, candidates: Vec<Candidate>) -> Vec<Candidate> {
    let asked: Vec<String> = words(question).collect();
    let asked_stems: Vec<String> = asked.iter().map(|word| stem(word)).collect();
    // Whether every word of the candidate's field is one of the question's.
    let names = |candidate: &Candidate, in_question: &dyn Fn(&str) -> bool| {
        (candidate.label.as_deref()).is_some_and(|label| words(label).all(|w| in_question(&w)))
    };
    let as_written = |c: &Candidate| names(c, &|word| asked.iter().any(|a| a == word));
    let by_stem = |c: &Candidate| names(c, &|word| asked_stems.contains(&stem(word)));
    let named: &dyn Fn(&Candidate) -> bool = if candidates.iter().any(as_written) {
        &as_written
    } else {
        &by_stem
    };
    shaped(&asked, kept_if_any(candidates, named))
}

/// The candidates that are `kept`, or all of them when none is.
fn kept_if_any(candidates: Vec<Candidate>, kept: impl Fn(&Candidate) -> bool) -> Vec<Candidate> {
    if candidates.iter().any(&kept) {
        candidates.into_iter().filter(|c| kept(c)).collect()
    } else {
        candidates
    }
}

/// The candidates whose value has the shape the question asks for, if any has: a clock
/// time for "time" (mcp-server-time answers a question of the time with a `datetime` field,
/// next to a `timezone` one), a date for "date", a number for "how many" or "how much".
fn shaped(asked: &[String], candidates: Vec<Candidate>) -> Vec<Candidate> {
    let asks = |word: &str| asked.iter().any(|a| a == word);
    let how_many = asked
        .windows(2)
        .any(|pair| pair[0] == "how" && (pair[1] == "many" || pair[1] == "much"));
    let shape: fn(&str) -> bool = if asks("time") {
        has_clock_time
    } else if asks("date") {
        has_date
    } else if how_many {
        |value: &str| value.parse::<f64>().is_ok()
    } else {
        return candidates;
    };
    kept_if_any(candidates, |c| shape(&c.value))
}

/// Whether `value` holds a time of day such as "04:02" or "4:02:20".
fn has_clock_time(value: &str) -> bool {
    let bytes = value.as_bytes();
    (1..bytes.len().saturating_sub(2)).any(|colon| {
        bytes[colon] == b':'
            && bytes[colon - 1].is_ascii_digit()
            && bytes[colon + 1].is_ascii_digit()
            && bytes[colon + 2].is_ascii_digit()
    })
}

/// Whether `value` holds a date such as "2026-11-24".
fn has_date(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.windows(10).any(|w| {
        w.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
    })
}

/// `text` as a GBNF string literal.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_field_is_the_only_choice() {
        let result = r#"{"date":"2026-11-24","time":"04:02:20","time_zone":"Asia/Tokyo"}"#;
        assert_eq!(
            grammar("Tell me the time in Lima.", result).unwrap(),
            "root ::= \"The time is 04:02:20.\"\n"
        );
        let stats = r#"{"words": 9, "unique_words": 8, "sentences": 0}"#;
        assert_eq!(
            grammar("Count how many words there are: a b", stats).unwrap(),
            "root ::= \"The words is 9.\"\n"
        );
        assert_eq!(
            grammar("count the sentence in: I came.", stats).unwrap(),
            "root ::= \"The sentences is 0.\"\n"
        );
    }

    #[test]
    fn a_value_of_the_asked_shape_when_no_field_is_named() {
        // mcp-server-time's get_current_time.
        let now = r#"{"timezone": "Asia/Tokyo", "datetime": "2026-11-24T07:32:11+09:00",
            "day_of_week": "Tuesday", "is_dst": false}"#;
        assert_eq!(
            grammar("Tell me the time in Lima.", now).unwrap(),
            "root ::= \"The datetime is 2026-11-24T07:32:11+09:00.\"\n"
        );
        let stats = r#"{"path": "/data/a.txt", "lines": 3}"#;
        assert_eq!(
            grammar("how many in /data/a.txt?", stats).unwrap(),
            "root ::= \"The lines is 3.\"\n"
        );
        assert!(has_clock_time("4:02") && has_clock_time("at 04:02:20"));
        assert!(!has_clock_time("Asia/Tokyo") && !has_clock_time("1:2"));
        assert!(has_date("2026-11-24T07:32") && !has_date("2026-1-24"));
    }

    #[test]
    fn every_field_when_the_question_names_none() {
        let weather = r#"{"condition":"Clear","temperature_c":34.0,"wind_kmh":9.5}"#;
        assert_eq!(
            grammar("is it warm in Cairo?", weather).unwrap(),
            "root ::= \"The condition is Clear.\" | \"The temperature is 34 °C.\" | \
             \"The wind is 9.5 km/h.\"\n"
        );
    }

    #[test]
    fn plain_values_lists_and_texts() {
        assert_eq!(
            grammar("add 1 and 2", "6912.0").unwrap(),
            "root ::= \"The result is 6912.\"\n"
        );
        assert_eq!(
            grammar(
                "what files?",
                r#"[{"kind":"file","name":"a.csv"},{"kind":"file","name":"b.txt"}]"#
            )
            .unwrap(),
            "root ::= \"The result is a.csv, b.txt.\"\n"
        );
        assert_eq!(
            grammar("show it", "Report\n\n\"Sales\" rose.\n").unwrap(),
            "root ::= \"The result is Report\\n\\n\\\"Sales\\\" rose.\"\n"
        );
        assert_eq!(
            grammar(
                "what is there?",
                r#"[{"kind": "file", "name": "notes.txt"}]"#
            )
            .unwrap(),
            "root ::= \"The result is notes.txt.\"\n",
            "one item: its longest string says most"
        );
        let matches = r#"{"count": 2, "matches": [{"match": "a@b.c"}, {"match": "d@e.f"}]}"#;
        assert_eq!(
            grammar("list the emails in: ...", matches).unwrap(),
            "root ::= \"The count is 2.\" | \"The matches are a@b.c, d@e.f.\"\n"
        );
    }

    #[test]
    fn nothing_to_state_leaves_the_answer_free() {
        assert_eq!(grammar("read it", ""), None);
        assert_eq!(grammar("read it", &"x".repeat(MAX_VALUE_CHARS + 1)), None);
        assert_eq!(grammar("read it", r#"{"nested": {"a": 1}}"#), None);
    }
}

//! The local model's answer to the run's tool results, held to the values they hold.
//!
//! Answering freely from a result, the 270M model copies values wrongly (digits moved,
//! doubled or changed, a date's month off by one, a separator where there was none), picks a
//! value that answers nothing (the byte count of a text, asked for its hash), and states
//! values no tool returned (the "09:41" of the chat template's worked example). Here its
//! answer is held, through the server's grammar, to sentences stating values of the run's
//! results, exactly as the results have them: "The checksum is b94d27b9....", "The time is
//! 04:02:20.". Where the question names some of the results' fields ("What time ...",
//! "how many words ..."), only those are offered; the model picks among what is left. A
//! result with no value to quote, or a failed call, gives a sentence that quotes none.

use serde_json::Value;

use crate::english::{stem, words};

/// A value longer than this is not offered (the model would have to copy it whole).
const MAX_VALUE_CHARS: usize = 600;

/// A tool result of the run, as the answer may quote it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Quotable<'a> {
    /// What the tool returned, or what went wrong.
    pub content: &'a str,
    /// Whether the call failed.
    pub failed: bool,
}

/// A GBNF grammar for an answer to `question` from the run's `results`: up to `sentences`
/// sentences, each "The <field> is <value>." for a field of a JSON object ("The number of
/// <fields> is <n>." for a count), "The result is <value>." for a plain value, a list or a
/// text, with every value exactly as a result has it. When no result has a value to state,
/// a sentence that states none: "Done." for an empty result, "The call failed: <why>." for
/// a failure, "The result has no short value to quote." for a long or nested one. `None`
/// only when there is no result.
pub(super) fn grammar(
    question: &str,
    results: &[Quotable<'_>],
    sentences: usize,
) -> Option<String> {
    let values: Vec<Candidate> = results
        .iter()
        .filter(|result| !result.failed)
        .flat_map(|result| candidates(result.content))
        .collect();
    let mut statements: Vec<String> = narrowed(question, values)
        .into_iter()
        .map(|candidate| candidate.sentence())
        .collect();
    if statements.is_empty() {
        statements = results.iter().map(|result| without_value(result)).collect();
    }
    let mut seen = std::collections::HashSet::new();
    statements.retain(|statement| seen.insert(statement.clone()));
    if statements.is_empty() {
        return None;
    }
    let choices = statements
        .iter()
        .map(|s| literal(s))
        .collect::<Vec<String>>()
        .join(" | ");
    if sentences <= 1 {
        return Some(format!("root ::= {choices}\n"));
    }
    // Several results at once may each answer part of the question: one sentence each, at
    // most, one after the other.
    let mut root = "statement".to_owned();
    for _ in 1..sentences {
        root = format!("statement ( \" \" {root} )?");
    }
    Some(format!("root ::= {root}\nstatement ::= {choices}\n"))
}

/// The sentence for a result that has no value to state: it quotes nothing but what went
/// wrong, when the call failed and says so briefly.
fn without_value(result: &Quotable<'_>) -> String {
    let text = result.content.trim();
    if result.failed {
        let first_line = text.lines().next().unwrap_or_default().trim();
        if !first_line.is_empty() && first_line.chars().count() <= 200 {
            return format!("The call failed: {}", ended(first_line));
        }
        return "The call failed.".to_owned();
    }
    if text.is_empty() {
        "Done.".to_owned()
    } else {
        "The result has no short value to quote.".to_owned()
    }
}

/// `text` with a full stop at its end, unless it ends a sentence already.
fn ended(text: &str) -> String {
    if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

/// One value the answer may state, and the field it came from.
#[derive(Debug)]
struct Candidate {
    /// The field's name in words ("utc offset"); `None` for the whole result.
    label: Option<String>,
    value: String,
}

impl Candidate {
    /// The sentence that states it, its verb agreeing with the field's name: "The time is
    /// 04:02.", "The matches are a, b."; a count of a plural field is "The number of lines
    /// is 3." (right for 1 as for 3, where "There are 1 lines" and "The lines is 3" are not).
    fn sentence(&self) -> String {
        let Some(label) = &self.label else {
            return ended(&format!("The result is {}", self.value));
        };
        let plural = plural(label);
        let sentence = if plural && is_number(&self.value) {
            format!("The number of {label} is {}", self.value)
        } else if plural {
            format!("The {label} are {}", self.value)
        } else {
            format!("The {label} is {}", self.value)
        };
        ended(&sentence)
    }
}

/// Whether a field's name in words names several things: its last word an English plural
/// ("lines", "unique words", "matches"), not a singular ending in s ("status", "address",
/// "analysis", which [`stem`] leaves as they are).
fn plural(label: &str) -> bool {
    let Some(last) = label.split(' ').next_back() else {
        return false;
    };
    last.ends_with('s') && stem(last).len() < last.len()
}

/// Whether `value` is a number, as [`scalar`] writes one (a unit after it allowed).
fn is_number(value: &str) -> bool {
    value
        .split(' ')
        .next()
        .is_some_and(|number| number.parse::<f64>().is_ok())
}

/// The values of `result` worth stating: each scalar or list field of an object, or the
/// whole result.
fn candidates(result: &str) -> Vec<Candidate> {
    let whole = |value: String| Candidate { label: None, value };
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
                let value = match value {
                    Value::Array(items) => listed(items)?,
                    other => scalar(other)?,
                };
                let value = match unit {
                    Some(unit) => format!("{value} {unit}"),
                    None => value,
                };
                Some(Candidate {
                    label: Some(label),
                    value,
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

    /// The grammar of a one-sentence answer to one successful result.
    fn one(question: &str, result: &str) -> Option<String> {
        grammar(
            question,
            &[Quotable {
                content: result,
                failed: false,
            }],
            1,
        )
    }

    #[test]
    fn a_named_field_is_the_only_choice() {
        let result = r#"{"date":"2026-11-24","time":"04:02:20","time_zone":"Asia/Tokyo"}"#;
        assert_eq!(
            one("Tell me the time in Lima.", result).unwrap(),
            "root ::= \"The time is 04:02:20.\"\n"
        );
        let stats = r#"{"words": 9, "unique_words": 8, "sentences": 0}"#;
        assert_eq!(
            one("Count how many words there are: a b", stats).unwrap(),
            "root ::= \"The number of words is 9.\"\n"
        );
        assert_eq!(
            one("count the sentence in: I came.", stats).unwrap(),
            "root ::= \"The number of sentences is 0.\"\n"
        );
    }

    #[test]
    fn the_verb_agrees_with_the_field_and_a_count_of_a_plural_says_so() {
        let sentence = |label: &str, value: &str| {
            Candidate {
                label: Some(label.to_owned()),
                value: value.to_owned(),
            }
            .sentence()
        };
        // A count of a plural: right for one as for several.
        assert_eq!(sentence("lines", "3"), "The number of lines is 3.");
        assert_eq!(sentence("lines", "1"), "The number of lines is 1.");
        assert_eq!(
            sentence("unique words", "8"),
            "The number of unique words is 8."
        );
        assert_eq!(
            sentence("replacements", "1"),
            "The number of replacements is 1."
        );
        assert_eq!(sentence("matches", "0"), "The number of matches is 0.");
        // A plural that is not a count; singulars, those ending in s among them.
        assert_eq!(
            sentence("matches", "a@b.c, d@e.f"),
            "The matches are a@b.c, d@e.f."
        );
        assert_eq!(sentence("top words", "the"), "The top words are the.");
        assert_eq!(sentence("count", "2"), "The count is 2.");
        assert_eq!(sentence("status", "ok"), "The status is ok.");
        assert_eq!(sentence("address", "x@y.z"), "The address is x@y.z.");
        assert_eq!(sentence("analysis", "done"), "The analysis is done.");
        assert_eq!(
            sentence("temperature", "-4 °C"),
            "The temperature is -4 °C."
        );
        assert_eq!(sentence("bytes", "23"), "The number of bytes is 23.");
    }

    #[test]
    fn a_value_of_the_asked_shape_when_no_field_is_named() {
        // mcp-server-time's get_current_time.
        let now = r#"{"timezone": "Asia/Tokyo", "datetime": "2026-11-24T07:32:11+09:00",
            "day_of_week": "Tuesday", "is_dst": false}"#;
        assert_eq!(
            one("Tell me the time in Lima.", now).unwrap(),
            "root ::= \"The datetime is 2026-11-24T07:32:11+09:00.\"\n"
        );
        let stats = r#"{"path": "/data/a.txt", "lines": 3}"#;
        assert_eq!(
            one("how many in /data/a.txt?", stats).unwrap(),
            "root ::= \"The number of lines is 3.\"\n"
        );
        assert!(has_clock_time("4:02") && has_clock_time("at 04:02:20"));
        assert!(!has_clock_time("Asia/Tokyo") && !has_clock_time("1:2"));
        assert!(has_date("2026-11-24T07:32") && !has_date("2026-1-24"));
    }

    #[test]
    fn every_field_when_the_question_names_none() {
        let weather = r#"{"condition":"Fog","temperature_c":8.0,"wind_kmh":4.5}"#;
        assert_eq!(
            one("should I cycle in Quito?", weather).unwrap(),
            "root ::= \"The condition is Fog.\" | \"The temperature is 8 °C.\" | \
             \"The wind is 4.5 km/h.\"\n"
        );
    }

    #[test]
    fn plain_values_lists_and_texts() {
        assert_eq!(
            one("add 1 and 2", "6912.0").unwrap(),
            "root ::= \"The result is 6912.\"\n"
        );
        assert_eq!(
            one(
                "what files?",
                r#"[{"kind":"file","name":"a.csv"},{"kind":"file","name":"b.txt"}]"#
            )
            .unwrap(),
            "root ::= \"The result is a.csv, b.txt.\"\n"
        );
        assert_eq!(
            one("show it", "Report\n\n\"Sales\" rose.\n").unwrap(),
            "root ::= \"The result is Report\\n\\n\\\"Sales\\\" rose.\"\n"
        );
        assert_eq!(
            one(
                "what is there?",
                r#"[{"kind": "file", "name": "notes.txt"}]"#
            )
            .unwrap(),
            "root ::= \"The result is notes.txt.\"\n",
            "one item: its longest string says most"
        );
        let matches = r#"{"count": 2, "matches": [{"match": "a@b.c"}, {"match": "d@e.f"}]}"#;
        assert_eq!(
            one("list the emails in: ...", matches).unwrap(),
            "root ::= \"The count is 2.\" | \"The matches are a@b.c, d@e.f.\"\n"
        );
    }

    #[test]
    fn a_result_with_nothing_to_state_gives_a_sentence_that_states_nothing() {
        assert_eq!(one("delete it", "").unwrap(), "root ::= \"Done.\"\n");
        let nothing = "root ::= \"The result has no short value to quote.\"\n";
        assert_eq!(
            one("read it", &"x".repeat(MAX_VALUE_CHARS + 1)).unwrap(),
            nothing
        );
        assert_eq!(one("read it", r#"{"nested": {"a": 1}}"#).unwrap(), nothing);
        assert_eq!(
            grammar("read it", &[], 1),
            None,
            "no result, nothing to hold"
        );
    }

    #[test]
    fn the_answer_quotes_only_the_runs_results_failures_included() {
        let failed = Quotable {
            content: "invalid arguments: send `path`\nmore detail",
            failed: true,
        };
        let listed = Quotable {
            content: r#"["a.csv", "b.txt"]"#,
            failed: false,
        };
        assert_eq!(
            grammar("list the files", &[failed], 1).unwrap(),
            "root ::= \"The call failed: invalid arguments: send `path`.\"\n",
            "a failure alone: what went wrong, and nothing else"
        );
        assert_eq!(
            grammar("list the files", &[failed, listed], 1).unwrap(),
            "root ::= \"The result is a.csv, b.txt.\"\n",
            "a value of the run, once there is one"
        );
        let tokyo = Quotable {
            content: r#"{"time": "07:32"}"#,
            failed: false,
        };
        let lima = Quotable {
            content: r#"{"time": "17:32"}"#,
            failed: false,
        };
        assert_eq!(
            grammar("clocks of two cities, please", &[tokyo, lima], 2).unwrap(),
            "root ::= statement ( \" \" statement )?\n\
             statement ::= \"The time is 07:32.\" | \"The time is 17:32.\"\n",
            "several results at once: a sentence each, at most"
        );
    }
}

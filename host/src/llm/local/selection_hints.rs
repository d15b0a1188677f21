//! What the local model adds to tool selection ([`ModelRules`](crate::llm::ModelRules)'s
//! hints), for requests whose words alone do not lead a small model to the tool:
//! - a place: a request that names one (a place the tz database knows, by
//!   [`toolhost_place_zones`]) meets the tools that take a place or a time zone;
//! - a weekday's name is a "day" of the "week", so it meets a tool that tells the day of the
//!   week;
//! - a word as written: where a tool's name has a word in the very form a request uses (a
//!   plural, a past), it fits better than a tool with the word's stem alone.

use serde_json::Value;

use crate::english::{is_common, stem, words};
use crate::llm::Hint;
use crate::spec::ToolSpec;

/// The mark of a place: on the tools that take one, and the requests that name one.
const PLACE: Hint = Hint::Mark("place");
/// How much a tool's parameter taking a place counts (as a word of a parameter).
const PLACE_WEIGHT: f32 = 1.0;
/// How much a word of a tool's name in an inflected form counts.
const FORM_WEIGHT: f32 = 0.5;

/// The names of the days of the week.
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The hints of `tool`: the inflected words of its name, as written, and the place mark when
/// it takes a place.
pub(super) fn tool_hints(tool: &ToolSpec, add: &mut dyn FnMut(Hint, f32)) {
    for form in inflected(&tool.name) {
        add(Hint::Form(form), FORM_WEIGHT);
    }
    if takes_place(&tool.input_schema) {
        add(PLACE, PLACE_WEIGHT);
    }
}

/// The hints of a request's `text`: its inflected words as written, the place mark when it
/// names a place, "day" and "week" when it names a weekday.
pub(super) fn request_hints(text: &str, add: &mut dyn FnMut(Hint)) {
    for form in inflected(text) {
        add(Hint::Form(form));
    }
    if words(text).any(|word| WEEKDAYS.contains(&word.as_str())) {
        add(Hint::word("day"));
        add(Hint::word("week"));
    }
    if !toolhost_place_zones::zones_named_in(text).is_empty() {
        add(PLACE);
    }
}

/// The words of `text` whose stem is not the word itself, lowercased as written.
fn inflected(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).filter(|word| !is_common(word) && stem(word) != *word)
}

/// Whether a tool takes a place: a parameter named for a city, a country, a location or a
/// time zone ("city", "time_zone", "target_timezone", "tz"), required or not.
fn takes_place(schema: &Value) -> bool {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return false;
    };
    properties.keys().any(|name| {
        let name: String = name
            .to_lowercase()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        name == "tz"
            || ["city", "country", "location", "place", "timezone"]
                .iter()
                .any(|word| name.ends_with(word))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::agent::{ToolIndex, offer};
    use crate::llm::LocalFormat;
    use crate::llm::local::SmallModelRules;

    fn spec(name: &str, description: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
            output_schema: None,
            requested: vec![],
            annotations: Default::default(),
        }
    }

    fn index(tools: &[ToolSpec]) -> ToolIndex {
        ToolIndex::with_rules(tools, Arc::new(SmallModelRules::new(LocalFormat::OpenAi)))
    }

    #[test]
    fn a_place_counts_for_the_tools_that_take_one_and_a_weekday_for_the_day_of_the_week() {
        let tools = [
            spec(
                "current_weather",
                "Current weather conditions.",
                json!({"properties": {"city": {"type": "string"}}}),
            ),
            spec(
                "current_time",
                "Tells the current date, time and day of the week.",
                json!({"properties": {"time_zone": {"type": ["string", "null"]}}}),
            ),
            spec("add", "Adds two numbers.", json!({})),
        ];
        let index = index(&tools);
        let ranked = index.rank_text("anything going on in Lima?");
        let mut names: Vec<&str> = ranked.iter().map(|&(at, _)| index.name(at)).collect();
        names.sort_unstable();
        assert_eq!(names, ["current_time", "current_weather"], "{ranked:?}");
        assert!(index.rank_text("anything going on in lima rock").len() == 2);
        assert!(
            index.rank_text("tell us more").is_empty(),
            "no place: no tool"
        );

        let ranked = index.rank_text("is it Sunday yet in Lima");
        assert_eq!(index.name(ranked[0].0), "current_time", "{ranked:?}");
        assert_eq!(offer(ranked, 3).len(), 1);

        let words_alone = ToolIndex::new(&tools);
        assert!(
            words_alone
                .rank_text("anything going on in Lima?")
                .is_empty(),
            "without the local model's hints a place is just a word"
        );
    }

    #[test]
    fn a_name_in_the_requests_own_form_ranks_first() {
        // Both tools have "file" once stemmed.
        let index = index(&[
            spec(
                "read_file",
                "Reads a small text file (for example /data/report.txt) and returns its text: \
                 what it says, its contents.",
                json!({}),
            ),
            spec(
                "list_files",
                "Lists the files and directories in a directory (for example /data), with \
                 their sizes: what is in it.",
                json!({}),
            ),
        ]);
        let ranked = index.rank_text("which files does /srv hold");
        assert_eq!(index.name(ranked[0].0), "list_files", "{ranked:?}");
        assert_eq!(offer(ranked, 3).len(), 1, "read_file is not offered");
        let ranked = index.rank_text("which file says hello");
        assert_eq!(index.name(ranked[0].0), "read_file", "{ranked:?}");
    }
}

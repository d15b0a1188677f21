//! The eval: everyday requests (tests/eval/suite.toml) asked of a model with the whole example
//! manifest, each scored on the tool that answered it and the value it gave. `just eval` runs
//! them all (tests/eval/main.rs); `just test` runs the five marked `fast`
//! (tests/agent/eval.rs).
//!
//! The manifest is example-tools/toolhost.toml as it is, with three changes for a run that
//! touches nothing outside it: paths made absolute, the notes directory a fresh temporary one,
//! and the weather tool pointed at a fake wttr.in on 127.0.0.1 (granted that address, and
//! `WEATHER_BASE_URL` set to it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;
use toolhost::agent::{Agent, AgentErrorKind, Conversation, RunEnd, RunOptions};

use crate::repo_root;
use crate::server::{Recorded, Reply, TestServer};

/// The suite file.
pub fn suite_path() -> PathBuf {
    repo_root().join("tests/eval/suite.toml")
}

/// The suite.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The requests, in order.
    #[serde(rename = "case")]
    pub cases: Vec<Case>,
}

/// One request and what answers it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Which kind of request (the score is reported per category).
    pub category: String,
    /// What the user types.
    pub request: String,
    /// The tools that answer it; one of them must be called and succeed.
    pub tools: Vec<String>,
    /// Values the answer must carry: in that call's result, or in the final answer.
    #[serde(default)]
    pub expect: Vec<String>,
    /// A note that must have been written.
    #[serde(default)]
    pub note: Option<Note>,
    /// Whether it is one of the five `just test` runs.
    #[serde(default)]
    pub fast: bool,
}

/// A note a request must leave in the notes directory.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    /// Its title (the file is named after it).
    pub title: String,
    /// Text it must contain.
    pub text: String,
}

impl Suite {
    /// Reads the suite file.
    pub fn load() -> Self {
        let path = suite_path();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        toml::from_str(&text).unwrap_or_else(|e| panic!("{} is not valid: {e}", path.display()))
    }
}

/// The fake weather of the fake wttr.in: city, temperature (°C), sky, humidity, wind (km/h).
pub const CITIES: &[(&str, &str, i32, &str, u32, u32)] = &[
    ("Oslo", "Norway", -4, "Light snow", 86, 14),
    (
        "Seattle",
        "United States of America",
        9,
        "Moderate rain",
        93,
        11,
    ),
    ("Cairo", "Egypt", 34, "Clear", 18, 9),
    ("Lisbon", "Portugal", 19, "Sunny", 55, 17),
    ("Paris", "France", 12, "Partly cloudy", 71, 13),
    ("London", "United Kingdom", 10, "Overcast", 80, 19),
    ("Tokyo", "Japan", 16, "Light rain", 77, 8),
    ("New York", "United States of America", 7, "Cloudy", 60, 22),
];

/// wttr.in's `format=j1` answer for `path` (`/CITY?format=j1`), or 404 for a city it does not
/// know.
fn weather_reply(request: &Recorded) -> Reply {
    let city = request
        .path
        .split('?')
        .next()
        .unwrap_or("")
        .trim_start_matches('/');
    let city = percent_decode(city).replace('+', " ");
    let Some((name, country, temp, sky, humidity, wind)) = CITIES
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case(city.trim()))
    else {
        return Reply::text(404, "Unknown location; please try ~48.8567,2.3508");
    };
    Reply::json(
        200,
        &json!({
            "current_condition": [{
                "temp_C": temp.to_string(),
                "FeelsLikeC": (temp - 2).to_string(),
                "humidity": humidity.to_string(),
                "windspeedKmph": wind.to_string(),
                "weatherDesc": [{ "value": sky }],
            }],
            "nearest_area": [{
                "areaName": [{ "value": name }],
                "country": [{ "value": country }],
            }],
        }),
    )
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What an eval run needs around the model: the fake weather service, the manifest, the
/// notes directory. Dropping it stops the service and removes the files.
pub struct Setup {
    /// The fake wttr.in.
    pub weather: TestServer,
    /// The manifest to load.
    pub manifest: PathBuf,
    /// Where notes are written.
    pub notes: PathBuf,
    _dir: tempfile::TempDir,
}

impl Setup {
    /// Starts the fake weather service and writes the eval's manifest.
    pub async fn start() -> Self {
        let weather = TestServer::start(weather_reply).await;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let notes = dir.path().join("notes");
        std::fs::create_dir(&notes).expect("the notes directory");
        let manifest = dir.path().join("toolhost.toml");
        let text = eval_manifest(&weather, &notes);
        std::fs::write(&manifest, text).expect("the manifest is written");
        Self {
            weather,
            manifest,
            notes,
            _dir: dir,
        }
    }

    /// Empties the notes directory, so that a request is judged on what it wrote itself.
    pub fn clear_notes(&self) {
        for entry in std::fs::read_dir(&self.notes)
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// example-tools/toolhost.toml with absolute paths, `notes` as the notes directory, and the
/// weather tool granted `weather` instead of wttr.in.
fn eval_manifest(weather: &TestServer, notes: &Path) -> String {
    let tools = repo_root().join("example-tools");
    let path = tools.join("toolhost.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut manifest: toml::Table = toml::from_str(&text).expect("the example manifest parses");
    let components = manifest
        .get_mut("components")
        .and_then(toml::Value::as_table_mut)
        .expect("the example manifest has components");
    let absolute = |path: &str| tools.join(path).display().to_string();
    for (name, component) in components.iter_mut() {
        let component = component.as_table_mut().expect("a component is a table");
        if let Some(toml::Value::String(path)) = component.get_mut("path") {
            *path = absolute(path);
        }
        let grants = component
            .entry("grants")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .expect("grants is a table");
        if let Some(toml::Value::Array(dirs)) = grants.get_mut("dirs") {
            for dir in dirs.iter_mut().filter_map(toml::Value::as_table_mut) {
                let writable = dir.get("write").and_then(toml::Value::as_bool) == Some(true);
                if let Some(toml::Value::String(host)) = dir.get_mut("host") {
                    *host = if writable {
                        notes.display().to_string()
                    } else {
                        absolute(host)
                    };
                }
            }
        }
        if name == "weather" {
            grants.insert("http".into(), vec![weather.authority()].into());
            grants.insert(
                "env".into(),
                vec![format!("WEATHER_BASE_URL={}", weather.url())].into(),
            );
        }
    }
    toml::to_string(&manifest).expect("the manifest serializes")
}

/// How one request went.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The request.
    pub case: Case,
    /// Whether it counts as answered (see the suite's header).
    pub passed: bool,
    /// Whether one of the right tools was called and succeeded.
    pub right_tool: bool,
    /// Whether every expected value was in such a call's result (or the note was written).
    pub value_in_result: bool,
    /// Whether the final answer states every expected value.
    pub value_in_answer: bool,
    /// Whether the run ended at the round limit.
    pub round_limit: bool,
    /// How the run failed, if it did.
    pub error: Option<String>,
    /// The final answer.
    pub answer: String,
    /// The tool calls: `name arguments -> ok|error: output`.
    pub calls: Vec<String>,
    /// Model requests made.
    pub rounds: usize,
    /// Wall-clock time of the run.
    #[serde(serialize_with = "seconds")]
    pub took: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Asks `case` of `agent` in a new conversation and scores the run.
pub async fn run_case(agent: &Agent, options: &RunOptions, setup: &Setup, case: &Case) -> Verdict {
    setup.clear_notes();
    let mut conversation = Conversation::new();
    conversation.push_user(&case.request);
    let started = Instant::now();
    let result = agent.run(&mut conversation, options, &mut |_| {}).await;
    let took = started.elapsed();
    let (answer, end, executions, rounds, error) = match result {
        Ok(result) => (
            result.text,
            Some(Ok(result.end)),
            result.executions,
            result.rounds,
            None,
        ),
        Err(error) => {
            let executions = error.executions().to_vec();
            let kind = error.kind();
            let text = format!("{:#}", anyhow::Error::from(error));
            (String::new(), Some(Err(kind)), executions, 0, Some(text))
        }
    };
    let round_limit = end == Some(Err(AgentErrorKind::RoundLimit));
    let right: Vec<&str> = executions
        .iter()
        .filter(|e| e.is_ok() && case.tools.contains(&e.name))
        .map(|e| e.output.as_str())
        .collect();
    let right_tool = !right.is_empty();
    let note_written = case
        .note
        .as_ref()
        .is_none_or(|note| note_exists(setup, note));
    let value_in_result = right_tool
        && note_written
        && case
            .expect
            .iter()
            .all(|value| right.iter().any(|output| contains_value(output, value)));
    let value_in_answer = case
        .expect
        .iter()
        .all(|value| contains_value(&answer, value) && !contains_value(&case.request, value))
        && note_written;
    let answered = matches!(end, Some(Ok(RunEnd::Answered | RunEnd::ReturnDirect)));
    let error = error.or_else(|| {
        (end == Some(Ok(RunEnd::Truncated))).then(|| "the answer was cut off (max_tokens)".into())
    });
    let passed = answered && right_tool && note_written && (value_in_result || value_in_answer);
    Verdict {
        case: case.clone(),
        passed,
        right_tool,
        value_in_result,
        value_in_answer: value_in_answer && right_tool,
        round_limit,
        error,
        answer,
        calls: executions
            .iter()
            .map(|e| {
                let status = if e.is_ok() { "ok" } else { "error" };
                format!("{} {} -> {status}: {}", e.name, e.arguments, e.output)
            })
            .collect(),
        rounds,
        took,
    }
}

fn note_exists(setup: &Setup, note: &Note) -> bool {
    let title = note.title.to_lowercase();
    std::fs::read_dir(&setup.notes)
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .to_lowercase()
                .contains(&title)
                && std::fs::read_to_string(entry.path())
                    .is_ok_and(|text| contains_value(&text, &note.text))
        })
}

/// Lowercase, white space runs as one space, thousands separators ("6,912") dropped.
fn normalize(text: &str) -> Vec<char> {
    let chars: Vec<char> = text.to_lowercase().chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        if c.is_whitespace() {
            if out.last() != Some(&' ') {
                out.push(' ');
            }
        } else if c == ','
            && i > 0
            && chars[i - 1].is_ascii_digit()
            && chars
                .get(i + 1..i + 4)
                .is_some_and(|d| d.iter().all(char::is_ascii_digit))
            && chars.get(i + 4).is_none_or(|c| !c.is_ascii_digit())
        {
            continue;
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `value` stands in `text` on its own (see the suite's header for the rules).
pub fn contains_value(text: &str, value: &str) -> bool {
    let text = normalize(text);
    let value = normalize(value.trim());
    if value.is_empty() || value.len() > text.len() {
        return false;
    }
    let decimal = value.contains(&'.') && value.last().is_some_and(char::is_ascii_digit);
    (0..=text.len() - value.len()).any(|start| {
        let end = start + value.len();
        if text[start..end] != value[..] {
            return false;
        }
        let before = start.checked_sub(1).map(|i| text[i]);
        let after = text.get(end).copied();
        let alone_before = before.is_none_or(|c| {
            !(c.is_alphanumeric() || (c == '.' && value[0].is_ascii_digit()))
                && !(c == '-'
                    && value[0].is_ascii_digit()
                    && start >= 2
                    && text[start - 2].is_ascii_digit())
        });
        let alone_after = after.is_none_or(|c| {
            !c.is_alphanumeric()
                || (decimal && c.is_ascii_digit())
                || (c.is_ascii_digit() && !value.last().is_some_and(char::is_ascii_digit))
        });
        alone_before && alone_after
    })
}

/// The score of `verdicts` per category, as a table, with the median time per request.
pub fn report(verdicts: &[Verdict]) -> String {
    let mut categories: BTreeMap<&str, Vec<&Verdict>> = BTreeMap::new();
    for verdict in verdicts {
        categories
            .entry(verdict.case.category.as_str())
            .or_default()
            .push(verdict);
    }
    let mut out = String::new();
    out.push_str(&format!(
        "{:<12} {:>7} {:>10} {:>12} {:>12} {:>11}\n",
        "category", "passed", "right tool", "value:result", "value:answer", "round limit"
    ));
    let row = |name: &str, group: &[&Verdict]| {
        let count = |f: fn(&Verdict) -> bool| group.iter().filter(|v| f(v)).count();
        let n = group.len();
        format!(
            "{:<12} {:>7} {:>10} {:>12} {:>12} {:>11}\n",
            name,
            format!("{}/{n}", count(|v| v.passed)),
            format!("{}/{n}", count(|v| v.right_tool)),
            format!("{}/{n}", count(|v| v.value_in_result)),
            format!("{}/{n}", count(|v| v.value_in_answer)),
            count(|v| v.round_limit),
        )
    };
    for (name, group) in &categories {
        out.push_str(&row(name, group));
    }
    let all: Vec<&Verdict> = verdicts.iter().collect();
    out.push_str(&row("all", &all));
    let passed = all.iter().filter(|v| v.passed).count();
    let mut times: Vec<Duration> = verdicts.iter().map(|v| v.took).collect();
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let total: Duration = times.iter().sum();
    out.push_str(&format!(
        "score {passed}/{} = {:.0}%; median {:.1} s per request, total {:.0} s\n",
        all.len(),
        100.0 * passed as f64 / all.len().max(1) as f64,
        median.as_secs_f64(),
        total.as_secs_f64()
    ));
    out
}

/// One line per request, for following a run.
pub fn line(index: usize, verdict: &Verdict) -> String {
    let mark = if verdict.passed { "PASS" } else { "FAIL" };
    let mut text = format!(
        "{mark} {index:>2} [{}] {:?} ({:.1} s, {} rounds)\n",
        verdict.case.category,
        verdict.case.request,
        verdict.took.as_secs_f64(),
        verdict.rounds
    );
    for call in &verdict.calls {
        let call: String = call.chars().take(160).collect();
        text.push_str(&format!("       {call}\n"));
    }
    match &verdict.error {
        Some(error) => {
            let error: String = error.chars().take(200).collect();
            text.push_str(&format!("       error: {error}\n"));
        }
        None => {
            let answer: String = verdict.answer.chars().take(160).collect();
            text.push_str(&format!("       answer: {answer:?}\n"));
        }
    }
    text
}

/// `n` made-up tools, varied in name, description and parameters, for timing selection over
/// a large catalog: verbs and objects of everyday software combined.
pub fn synthetic_tools(n: usize) -> Vec<toolhost::ToolSpec> {
    const VERBS: &[(&str, &str)] = &[
        ("create", "Creates"),
        ("delete", "Deletes"),
        ("list", "Lists"),
        ("update", "Updates"),
        ("search", "Searches"),
        ("export", "Exports"),
        ("import", "Imports"),
        ("archive", "Archives"),
        ("share", "Shares"),
        ("summarize", "Summarizes"),
        ("translate", "Translates"),
        ("schedule", "Schedules"),
        ("approve", "Approves"),
        ("validate", "Validates"),
        ("count", "Counts"),
        ("rename", "Renames"),
        ("tag", "Tags"),
        ("merge", "Merges"),
        ("lock", "Locks"),
        ("restore", "Restores"),
    ];
    const OBJECTS: &[(&str, &str, &str)] = &[
        ("invoice", "an invoice", "customer"),
        ("calendar_event", "a calendar event", "start time"),
        ("ticket", "a support ticket", "priority"),
        ("user_account", "a user account", "e-mail address"),
        ("playlist", "a music playlist", "genre"),
        ("shipment", "a parcel shipment", "tracking number"),
        ("recipe", "a cooking recipe", "ingredient"),
        ("contract", "a signed contract", "party"),
        ("photo_album", "a photo album", "caption"),
        ("expense", "an expense report", "amount in euros"),
        ("repository", "a source code repository", "branch"),
        ("meeting_room", "a meeting room booking", "floor"),
        ("invoice_line", "a line of an invoice", "quantity"),
        ("survey", "a customer survey", "question"),
        ("vehicle", "a fleet vehicle", "licence plate"),
        ("warehouse_item", "a warehouse stock item", "shelf"),
        ("newsletter", "an e-mail newsletter", "subscriber list"),
        ("patient_record", "a patient record", "ward"),
        ("flight_booking", "a flight booking", "departure airport"),
        ("budget", "a department budget", "fiscal year"),
        ("podcast_episode", "a podcast episode", "duration"),
        (
            "sensor_reading",
            "a temperature sensor reading",
            "device id",
        ),
        ("lesson_plan", "a school lesson plan", "grade level"),
        ("garden_bed", "a vegetable garden bed", "plant"),
        (
            "loan_application",
            "a bank loan application",
            "interest rate",
        ),
    ];
    (0..n)
        .map(|i| {
            let (verb, verbs) = VERBS[i % VERBS.len()];
            let (object, what, field) = OBJECTS[(i / VERBS.len()) % OBJECTS.len()];
            let round = i / (VERBS.len() * OBJECTS.len());
            let name = if round == 0 {
                format!("{verb}_{object}")
            } else {
                format!("{verb}_{object}_v{round}")
            };
            toolhost::ToolSpec {
                name,
                description: format!(
                    "{verbs} {what} in the company's records, by its id or its {field}, and \
                     returns what changed."
                ),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": format!("The id of {what}.")},
                        "field": {"type": "string", "description": format!("The {field} to match.")},
                        "dry_run": {"type": "boolean", "description": "Only say what would change."},
                    },
                    "required": ["id"],
                }),
                output_schema: None,
                requested: vec![],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::contains_value;

    #[test]
    fn values_must_stand_alone() {
        assert!(contains_value("The sum is 6912.", "6912"));
        assert!(contains_value("6912.0", "6912"));
        assert!(contains_value("It is 6,912", "6912"));
        assert!(!contains_value("19 words", "9"));
        assert!(!contains_value("a9", "9"));
        assert!(contains_value("{\"words\": 9, \"x\": 1}", "9"));
        assert!(contains_value("689706.4865324959", "689706.48"));
        assert!(!contains_value("1689706.48", "689706.48"));
        assert!(contains_value(
            "\"condition\":\"Light  snow\"",
            "light snow"
        ));
        assert!(!contains_value("the report", "report.txt"));
        assert!(contains_value("\"time_zone\":\"Asia/Tokyo\"", "Asia/Tokyo"));
        assert!(!contains_value("2024-03-15", "03"));
    }
}

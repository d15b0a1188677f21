//! The eval: everyday requests (tests/eval/suite.toml) asked of a model with the whole example
//! manifest, each scored on the tool that answered it and the value it gave. The suite is two
//! halves with the same categories ([`Half`]): the development half, to decide rules on, and
//! the held-out half, to measure them on requests they were not made for; the report shows
//! both side by side. `just eval` runs them all (tests/eval/main.rs); `just test` runs the
//! ones marked `fast`, of both halves (tests/tool_loop/eval.rs).
//!
//! The manifest is example-tools/toolhost.toml as it is, with three changes for a run that
//! touches nothing outside it: paths made absolute, the notes directory a fresh temporary one,
//! and the weather tool pointed at a fake wttr.in on 127.0.0.1 (granted that address, and
//! `WEATHER_BASE_URL` set to it).

mod score;
mod setup;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::repo_root;

pub use score::{Verdict, contains_value, line, report, run_case};
pub use setup::{CITIES, Setup};

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
    /// Which half of the suite it is in.
    pub half: Half,
    /// What the user types.
    pub request: String,
    /// The tools that answer it; one of them must be called and succeed.
    pub tools: Vec<String>,
    /// Values the answer must carry: in that call's result, or in the final answer.
    #[serde(default)]
    pub expect: Vec<String>,
    /// Values that call's result must hold, by JSON pointer (`"/sentences" = 3`). Only the
    /// result can meet them: a short number in an answer that lists several proves nothing.
    #[serde(default)]
    pub fields: BTreeMap<String, serde_json::Value>,
    /// A note that must have been written.
    #[serde(default)]
    pub note: Option<Note>,
    /// Whether `just test` runs it too (tests/tool_loop/eval.rs).
    #[serde(default)]
    pub fast: bool,
}

/// The two halves of the suite, each with requests of every category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Half {
    /// Requests to look at while deciding the local model's rules.
    Dev,
    /// Requests kept out of that: the score a new request can expect.
    HeldOut,
}

impl Half {
    /// Both, in the order reported.
    pub const BOTH: [Half; 2] = [Half::Dev, Half::HeldOut];

    /// Its name in the report.
    pub fn title(self) -> &'static str {
        match self {
            Half::Dev => "development",
            Half::HeldOut => "held out",
        }
    }
}

impl std::str::FromStr for Half {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "dev" => Ok(Half::Dev),
            "held_out" => Ok(Half::HeldOut),
            other => Err(format!("`{other}` is not a half; use dev or held_out")),
        }
    }
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
    /// Reads the suite file, and checks that its halves are balanced.
    pub fn load() -> Self {
        let path = suite_path();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let suite: Self = toml::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not valid: {e}", path.display()));
        if let Err(unbalanced) = suite.balanced() {
            panic!("{}: {unbalanced}", path.display());
        }
        suite
    }

    /// Whether every category has requests in both halves; else which category does not.
    /// (The development half may hold more: it keeps the held-out requests of earlier
    /// halves, see the suite's header.)
    pub fn balanced(&self) -> Result<(), String> {
        let mut counts: BTreeMap<&str, [usize; 2]> = BTreeMap::new();
        for case in &self.cases {
            let at = match case.half {
                Half::Dev => 0,
                Half::HeldOut => 1,
            };
            counts.entry(&case.category).or_default()[at] += 1;
        }
        for (category, [dev, held_out]) in counts {
            if dev == 0 || held_out == 0 {
                return Err(format!(
                    "category `{category}` has {dev} development and {held_out} held-out \
                     requests; give each half at least one"
                ));
            }
        }
        Ok(())
    }
}

/// The file of recorded scores.
pub fn scores_path() -> PathBuf {
    repo_root().join("tests/eval/scores.toml")
}

/// Scores measured earlier and written down (tests/eval/scores.toml), to print next to a
/// run's own: the held-out half is scored once before a change and once after.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    /// The scores, oldest first.
    #[serde(rename = "score", default)]
    pub scores: Vec<RecordedScore>,
}

/// One recorded run of the eval.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedScore {
    /// When it ran (YYYY-MM-DD).
    pub date: String,
    /// What it measured.
    pub what: String,
    /// Passed of the development half, "n/m".
    pub dev: String,
    /// Passed of the held-out half, "n/m".
    pub held_out: String,
    /// The right value in the answer, development half.
    pub dev_answer: String,
    /// The right value in the answer, held-out half.
    pub held_out_answer: String,
}

impl Recorded {
    /// Reads tests/eval/scores.toml.
    pub fn load() -> anyhow::Result<Self> {
        let path = scores_path();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{} is not valid: {e}", path.display()))
    }

    /// The recorded scores, one line each, the halves side by side: passed, and in
    /// brackets how many answers stated the value.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "recorded (tests/eval/scores.toml): passed (value in the answer), development | held out\n",
        );
        for score in &self.scores {
            out.push_str(&format!(
                "{}  {:>5} ({:>5}) | {:>5} ({:>5})  {}\n",
                score.date,
                score.dev,
                score.dev_answer,
                score.held_out,
                score.held_out_answer,
                score.what
            ));
        }
        out
    }
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
                annotations: Default::default(),
            }
        })
        .collect()
}

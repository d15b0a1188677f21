//! Asking one request and scoring it: the tool that answered, the value it gave, the note it
//! wrote; and the table of a whole run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use toolhost::agent::{Agent, AgentErrorKind, Conversation, RunEnd, RunOptions};

use super::{Case, Half, Note, Setup};

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
            .all(|value| right.iter().any(|output| contains_value(output, value)))
        && (case.fields.is_empty() || right.iter().any(|output| holds(output, &case.fields)));
    let value_in_answer = case.fields.is_empty()
        && case
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

/// Whether `output` is JSON holding each of `fields` (JSON pointer to value).
pub fn holds(output: &str, fields: &BTreeMap<String, Value>) -> bool {
    serde_json::from_str::<Value>(output).is_ok_and(|json| {
        (fields.iter()).all(|(pointer, want)| json.pointer(pointer) == Some(want))
    })
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

/// The table of a run: per category, how many requests of each half passed, found the right
/// tool, had the value in the result and stated it in the answer, and how many ran into the
/// round limit, the two halves side by side; then the totals.
pub fn report(verdicts: &[Verdict]) -> String {
    let mut categories: BTreeMap<&str, Vec<&Verdict>> = BTreeMap::new();
    for verdict in verdicts {
        categories
            .entry(verdict.case.category.as_str())
            .or_default()
            .push(verdict);
    }
    // passed, right tool, value in the result, value in the answer, round limit
    let columns = |group: &[&Verdict], half: Half| -> String {
        let group: Vec<&&Verdict> = group.iter().filter(|v| v.case.half == half).collect();
        if group.is_empty() {
            return format!("{:>6} {:>6} {:>6} {:>6} {:>5}", "-", "-", "-", "-", "-");
        }
        let n = group.len();
        let count = |f: fn(&Verdict) -> bool| group.iter().filter(|v| f(v)).count();
        format!(
            "{:>6} {:>6} {:>6} {:>6} {:>5}",
            format!("{}/{n}", count(|v| v.passed)),
            format!("{}/{n}", count(|v| v.right_tool)),
            format!("{}/{n}", count(|v| v.value_in_result)),
            format!("{}/{n}", count(|v| v.value_in_answer)),
            count(|v| v.round_limit),
        )
    };
    let mut out = String::new();
    let [dev, held_out] = Half::BOTH.map(Half::title);
    out.push_str(&format!("{:<12} | {dev:<34} | {held_out}\n", ""));
    let names = format!(
        "{:>6} {:>6} {:>6} {:>6} {:>5}",
        "passed", "tool", "result", "answer", "limit"
    );
    out.push_str(&format!("{:<12} | {names} | {names}\n", "category"));
    let row = |name: &str, group: &[&Verdict]| {
        format!(
            "{name:<12} | {} | {}\n",
            columns(group, Half::Dev),
            columns(group, Half::HeldOut)
        )
    };
    for (name, group) in &categories {
        out.push_str(&row(name, group));
    }
    let all: Vec<&Verdict> = verdicts.iter().collect();
    out.push_str(&row("all", &all));
    let score = |group: &[&Verdict]| {
        let passed = group.iter().filter(|v| v.passed).count();
        format!(
            "{passed}/{} = {:.0}%",
            group.len(),
            100.0 * passed as f64 / group.len().max(1) as f64
        )
    };
    let half =
        |half: Half| -> Vec<&Verdict> { verdicts.iter().filter(|v| v.case.half == half).collect() };
    let mut times: Vec<Duration> = verdicts.iter().map(|v| v.took).collect();
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let total: Duration = times.iter().sum();
    out.push_str(&format!(
        "score: {dev} {}, {held_out} {}, all {}; median {:.1} s per request, total {:.0} s\n",
        score(&half(Half::Dev)),
        score(&half(Half::HeldOut)),
        score(&all),
        median.as_secs_f64(),
        total.as_secs_f64()
    ));
    out
}

/// One line per request, for following a run.
pub fn line(index: usize, verdict: &Verdict) -> String {
    let mark = if verdict.passed { "PASS" } else { "FAIL" };
    let mut text = format!(
        "{mark} {index:>2} [{}, {}] {:?} ({:.1} s, {} rounds)\n",
        verdict.case.category,
        verdict.case.half.title(),
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

#[cfg(test)]
mod tests {
    use super::{contains_value, holds};
    use serde_json::json;

    #[test]
    fn fields_are_read_at_their_pointers() {
        let fields = |pairs: serde_json::Value| serde_json::from_value(pairs).unwrap();
        let stats = r#"{"sentences": 2, "average_word_length": 3.17, "top_words": [{"word": "i", "count": 3}]}"#;
        assert!(
            !holds(stats, &fields(json!({"/sentences": 3}))),
            "a 3 elsewhere is not the count"
        );
        assert!(holds(
            stats,
            &fields(json!({"/sentences": 2, "/top_words/0/word": "i"}))
        ));
        assert!(holds(r#""ink""#, &fields(json!({"": "ink"}))));
        assert!(!holds(
            r#"[{"name": "pen"}, {"name": "ink"}]"#,
            &fields(json!({"": "ink"}))
        ));
        assert!(!holds("not json", &fields(json!({"": "ink"}))));
    }

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

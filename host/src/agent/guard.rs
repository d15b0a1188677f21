//! The loop's guards against a model that repeats itself: a call identical to one that already
//! succeeded in the run is answered with the earlier result instead of running again (and the
//! next request offers no tools, so that the model answers), and the same call failing twice
//! ends the run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{Outcome, ToolExecution};

/// How many times the same call may fail before the run ends.
pub(crate) const MAX_SAME_FAILURES: usize = 2;

/// What the guards remember of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Guard {
    /// The calls that succeeded, by [`call_key`]: the first call's id and what it returned.
    succeeded: BTreeMap<String, Earlier>,
    /// How many times each call failed, by [`call_key`].
    failures: BTreeMap<String, usize>,
    /// Whether the next request offers no tools (a call was repeated: time to answer).
    answer_next: bool,
}

/// A call that succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Earlier {
    /// Its id.
    pub call_id: String,
    /// What the model was sent.
    pub output: String,
}

/// A call that failed as often as the guard allows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RepeatedFailure {
    /// The tool.
    pub tool: String,
    /// The arguments, as the model wrote them the last time.
    pub arguments: String,
    /// The last error (the operator's message).
    pub error: String,
    /// How many times it failed.
    pub count: usize,
}

impl Guard {
    /// The earlier successful call identical to this one, if there is one.
    pub fn earlier(&self, name: &str, arguments: &str) -> Option<&Earlier> {
        self.succeeded.get(&call_key(name, arguments)?)
    }

    /// Whether the next request should offer no tools; asking resets it.
    pub fn take_answer_next(&mut self) -> bool {
        std::mem::take(&mut self.answer_next)
    }

    /// Notes that a call was answered with an earlier result.
    pub fn repeated(&mut self) {
        self.answer_next = true;
    }

    /// Remembers how the calls of a turn went; returns the first call that has now failed
    /// [`MAX_SAME_FAILURES`] times.
    pub fn record<'a>(
        &mut self,
        executions: impl IntoIterator<Item = &'a ToolExecution>,
    ) -> Option<RepeatedFailure> {
        let mut repeated = None;
        for execution in executions {
            if execution.repeat_of.is_some() {
                continue;
            }
            match &execution.outcome {
                Outcome::Ok => {
                    let Some(key) = call_key(&execution.name, &execution.arguments) else {
                        continue;
                    };
                    self.succeeded.entry(key).or_insert_with(|| Earlier {
                        call_id: execution.call_id.clone(),
                        output: execution.output.clone(),
                    });
                }
                Outcome::Error { message, .. } => {
                    let failed = self.failed(&execution.name, &execution.arguments, message);
                    repeated = repeated.or(failed);
                }
                // Not the tool's doing: a person said no.
                Outcome::Rejected { .. } => {}
            }
        }
        repeated
    }

    /// Counts a failure of a call (one that ran, or an invalid one); returns it when the same
    /// call has now failed [`MAX_SAME_FAILURES`] times.
    pub fn failed(&mut self, name: &str, arguments: &str, error: &str) -> Option<RepeatedFailure> {
        let key = call_key(name, arguments).unwrap_or_else(|| format!("{name}\0{arguments}"));
        let count = self.failures.entry(key).or_default();
        *count += 1;
        (*count >= MAX_SAME_FAILURES).then(|| RepeatedFailure {
            tool: name.to_owned(),
            arguments: arguments.to_owned(),
            error: error.to_owned(),
            count: *count,
        })
    }
}

/// A call's identity: the tool and its arguments as a JSON value (key order, spacing and
/// `2` against `2.0` do not matter). `None` when the arguments are not JSON.
pub(crate) fn call_key(name: &str, arguments: &str) -> Option<String> {
    let value: Value = if arguments.trim().is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(arguments).ok()?
    };
    let mut key = format!("{name}\0");
    write_canonical(&value, &mut key);
    Some(key)
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
                let _ = write!(out, "{}", f as i64);
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
    fn identical_calls_have_one_key_however_written() {
        let a = call_key("add", r#"{"a": 1, "b": {"y": 2.0, "x": [1, "s"]}}"#);
        let b = call_key("add", r#"{"b":{"x":[1.0,"s"],"y":2},"a":1}"#);
        assert!(a.is_some());
        assert_eq!(a, b);
        assert_ne!(
            a,
            call_key("multiply", r#"{"a": 1, "b": {"y": 2, "x": [1, "s"]}}"#)
        );
        assert_ne!(
            a,
            call_key("add", r#"{"a": 1.5, "b": {"y": 2, "x": [1, "s"]}}"#)
        );
        assert_eq!(call_key("now", ""), call_key("now", "{}"));
        assert_eq!(call_key("add", "{not json"), None);
    }
}

//! The audit log: one JSON line per tool call of a run (executed, rejected, answered from an
//! earlier result, or invalid), written before the call's result goes back to the model.
//!
//! A line holds the time, the run and call ids, the tool, its source (a component's path and
//! content hash, an MCP server), the grants in force, the arguments (values under keys that
//! look like secrets redacted, long values truncated), the outcome, the duration and the
//! approval decision:
//!
//! ```json
//! {"time":"2026-11-23T10:00:00.123Z","run_id":"run-3f2a…","round":1,"call_id":"c1",
//!  "tool":"write_note","source":{"kind":"component","name":"files","path":"dist/files.wasm",
//!  "sha256":"…"},"grants":["dir /notes (read-write, host /srv/notes)"],
//!  "arguments":{"title":"groceries","api_key":"[redacted]"},"outcome":"ok",
//!  "duration_ms":3.2,"approval":"approved"}
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::arguments::Arguments;
use crate::caller::Caller;
use crate::sandbox::ReportCounts;
use crate::source::Origin;
use crate::toolbox::Toolbox;

use super::AgentError;
use super::approval::{Approval, describe_grants};
use super::record::{InvalidCall, InvalidProblem, ToolExecution};

/// Where audit records go.
pub trait AuditSink: Send + Sync {
    /// Records one call. When it returns `Ok`, the record must survive the process being
    /// killed (for a file: it is written to the file, not held in a buffer).
    fn record(&self, record: &AuditRecord) -> std::io::Result<()>;

    /// Where records go, for error messages ("audit log /var/log/toolhost.jsonl").
    fn describe(&self) -> String;
}

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRecord {
    /// When the call ended, RFC 3339 in UTC.
    pub time: String,
    /// The run's id.
    pub run_id: String,
    /// The round (model turn, from 1) that asked for the call.
    pub round: usize,
    /// The call's id.
    pub call_id: String,
    /// The tool, as the model named it.
    pub tool: String,
    /// Where the tool comes from (none for a tool that does not exist).
    pub source: Option<Origin>,
    /// What the tool was granted (environment variables by name only); none outside the
    /// sandbox.
    pub grants: Option<Vec<String>>,
    /// The arguments: secrets redacted, long values truncated. A string when they were not
    /// JSON.
    pub arguments: Value,
    /// `ok`, the error's kind (`tool_failed`, `timeout`, ...), `rejected`, or `invalid`.
    pub outcome: String,
    /// The error (the operator's message, truncated), when it failed or was invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What was wrong, for an invalid call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<InvalidProblem>,
    /// How long it ran.
    #[serde(
        rename = "duration_ms",
        serialize_with = "crate::units::serialize_millis"
    )]
    pub duration: Duration,
    /// Whether it waited for approval, and what was decided.
    pub approval: Approval,
    /// The earlier identical call whose result it got, when it was not run again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<String>,
    /// How many progress reports and log lines the tool made (counts only: what they said
    /// is not kept).
    #[serde(skip_serializing_if = "ReportCounts::is_none")]
    pub reports: ReportCounts,
    /// Who made the call, when a verified access token said (`host mcp` over HTTP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<AuditCaller>,
    /// For a call a program made (code mode): the id of the program's own call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// Who made a call, as the audit log records it: what the caller's verified access token
/// said, never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditCaller {
    /// The token's subject (`sub`).
    pub subject: String,
    /// The application it was issued to (`client_id`), when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Who issued it (`iss`).
    pub issuer: String,
    /// The scopes it grants.
    pub scopes: Vec<String>,
}

impl From<&Caller> for AuditCaller {
    fn from(caller: &Caller) -> Self {
        Self {
            subject: caller.subject.clone(),
            client_id: caller.client_id.clone(),
            issuer: caller.issuer.clone(),
            scopes: caller.scopes.iter().cloned().collect(),
        }
    }
}

/// A call `host mcp` served, as the audit log records it: `run_id` is `mcp` and `round` 0
/// (there is no run), no approval was asked, and the caller is recorded when a verified
/// token said who it is. A call of a tool the caller may not use is recorded too, as
/// `unknown_tool`, as the caller was answered.
pub struct ServedCall<'a> {
    /// The JSON-RPC request's id.
    pub call_id: &'a str,
    /// The tool, as the client named it.
    pub tool: &'a str,
    /// Its arguments (recorded redacted).
    pub arguments: &'a Arguments,
    /// `ok`, or the error's kind.
    pub outcome: &'a str,
    /// The operator's message of what went wrong, if anything did.
    pub error: Option<&'a str>,
    /// How long it ran.
    pub duration: Duration,
    /// Who made it.
    pub caller: Option<&'a Caller>,
    /// For a call a program made (code mode): the id of the program's own call.
    pub parent: Option<&'a str>,
}

impl ServedCall<'_> {
    /// Writes its record to `sink`; `toolbox` says where the tool comes from and what it is
    /// granted.
    pub fn record(&self, toolbox: &Toolbox, sink: &dyn AuditSink) -> std::io::Result<()> {
        let known = self.outcome != "unknown_tool";
        let record = AuditRecord {
            time: now(),
            run_id: "mcp".to_owned(),
            round: 0,
            call_id: self.call_id.to_owned(),
            tool: self.tool.to_owned(),
            source: toolbox.origin(self.tool).filter(|_| known),
            grants: (toolbox.source_of(self.tool))
                .filter(|_| known)
                .and_then(|source| source.grants().map(describe_grants)),
            arguments: redact(self.arguments.value().clone()),
            outcome: self.outcome.to_owned(),
            error: self.error.map(|message| truncate(message, MAX_TEXT)),
            invalid: None,
            duration: self.duration,
            approval: Approval::NotRequired,
            repeat_of: None,
            reports: ReportCounts::default(),
            caller: self.caller.map(AuditCaller::from),
            parent: self.parent.map(str::to_owned),
        };
        sink.record(&record)
    }
}

/// An audit log in a file: JSON lines, appended. The file is created readable and writable
/// by its owner only (0600). Each record is one `write` of a whole line to a file opened
/// for appending, so a process killed mid-run leaves whole lines only.
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<File>,
}

impl AuditLog {
    /// Opens (or creates, 0600) the log at `path` for appending.
    pub fn open(path: impl Into<PathBuf>) -> std::io::Result<Self> {
        let path = path.into();
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path)?;
        Ok(Self {
            path,
            file: Mutex::new(file),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AuditSink for AuditLog {
    fn record(&self, record: &AuditRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(&line)?;
        file.flush()
    }

    fn describe(&self) -> String {
        format!("audit log {}", self.path.display())
    }
}

/// The audit sink of one run, with what every record needs.
pub(crate) struct AuditTrail<'a> {
    pub sink: Option<&'a Arc<dyn AuditSink>>,
    pub run_id: &'a str,
    pub toolbox: &'a Toolbox,
}

impl AuditTrail<'_> {
    /// Records a call that ran (or was rejected, or answered from an earlier result), with
    /// its arguments.
    pub fn execution(
        &self,
        execution: &ToolExecution,
        arguments: &Arguments,
    ) -> Result<(), AgentError> {
        self.execution_in(execution, arguments, None)
    }

    /// Records a call as [`AuditTrail::execution`] does; `parent` is the program's call,
    /// for a call a program made.
    pub fn execution_in(
        &self,
        execution: &ToolExecution,
        arguments: &Arguments,
        parent: Option<&str>,
    ) -> Result<(), AgentError> {
        let Some(sink) = self.sink else {
            return Ok(());
        };
        let source = self.toolbox.origin(&execution.name);
        let grants = self
            .toolbox
            .source_of(&execution.name)
            .and_then(|source| source.grants().map(describe_grants));
        let record = AuditRecord {
            time: now(),
            run_id: self.run_id.to_owned(),
            round: execution.round,
            call_id: execution.call_id.clone(),
            tool: execution.name.clone(),
            source,
            grants,
            arguments: redact(arguments.value().clone()),
            outcome: execution.outcome.kind_str().to_owned(),
            error: execution.error_message().map(|m| truncate(m, MAX_TEXT)),
            invalid: None,
            duration: execution.duration,
            approval: execution.approval,
            repeat_of: execution.repeat_of.clone(),
            reports: execution.reports,
            caller: None,
            parent: parent.map(str::to_owned),
        };
        write(sink, &record)
    }

    /// Records a call that could not run.
    pub fn invalid(&self, call: &InvalidCall) -> Result<(), AgentError> {
        let Some(sink) = self.sink else {
            return Ok(());
        };
        let record = AuditRecord {
            time: now(),
            run_id: self.run_id.to_owned(),
            round: call.round,
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            source: self.toolbox.origin(&call.name),
            grants: None,
            arguments: redacted_arguments(&call.arguments),
            outcome: "invalid".to_owned(),
            error: Some(truncate(&call.message, MAX_TEXT)),
            invalid: Some(call.problem),
            duration: Duration::ZERO,
            approval: Approval::NotRequired,
            repeat_of: None,
            reports: ReportCounts::default(),
            caller: None,
            parent: None,
        };
        write(sink, &record)
    }
}

fn write(sink: &Arc<dyn AuditSink>, record: &AuditRecord) -> Result<(), AgentError> {
    sink.record(record).map_err(|source| AgentError::Audit {
        target: sink.describe(),
        source,
    })
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// The longest string value kept whole, in characters.
const MAX_TEXT: usize = 256;
/// The most items of an array kept.
const MAX_ITEMS: usize = 32;
/// What replaces a secret.
const REDACTED: &str = "[redacted]";

/// The arguments of a call that could not run, as the audit log keeps them: redacted when
/// they are JSON (the tool may not have been offered), else their text, truncated.
fn redacted_arguments(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => redact(value),
        Err(_) => Value::String(truncate(arguments, MAX_TEXT)),
    }
}

/// `value` with values under secret-looking keys replaced and long values truncated.
pub(crate) fn redact(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let value = if looks_secret(&key) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact(value)
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => {
            let total = items.len();
            let mut kept: Vec<Value> = items.into_iter().take(MAX_ITEMS).map(redact).collect();
            if total > MAX_ITEMS {
                kept.push(Value::String(format!("… {} more items", total - MAX_ITEMS)));
            }
            Value::Array(kept)
        }
        Value::String(text) => Value::String(truncate(&text, MAX_TEXT)),
        other => other,
    }
}

/// `text`, cut to `max` characters with a note of how much was left out.
fn truncate(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… [{} more characters]", total - max)
}

/// Whether a key names a secret: `password`, `api_key`, `apiKey`, `X-Auth-Token`,
/// `client_secret`, `private_key`, `cookie`, ... (words of the key, in any case and
/// separator style).
fn looks_secret(key: &str) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "token",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "apikey",
        "bearer",
        "signature",
    ];
    const JOINED: &[&str] = &[
        "apikey",
        "privatekey",
        "accesskey",
        "secretkey",
        "sessionid",
    ];
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    words.extend((!word.is_empty()).then_some(word));
    let joined = words.concat();
    words.iter().any(|w| WORDS.contains(&w.as_str())) || JOINED.iter().any(|j| joined.contains(j))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_that_look_like_secrets_are_found_in_any_style() {
        for key in [
            "password",
            "api_key",
            "apiKey",
            "X-Auth-Token",
            "client_secret",
            "PRIVATE_KEY",
            "accessKeyId",
            "Authorization",
            "session_id",
        ] {
            assert!(looks_secret(key), "{key}");
        }
        for key in ["author", "title", "path", "keyboard", "monkey", "authority"] {
            assert!(!looks_secret(key), "{key}");
        }
    }

    #[test]
    fn secrets_are_redacted_and_long_values_truncated_at_any_depth() {
        let long = "x".repeat(1000);
        let value = json!({
            "title": "groceries",
            "auth": { "user": "ada", "password": "hunter2" },
            "headers": [{ "Authorization": "Bearer abc" }],
            "body": long,
            "items": (0..40).collect::<Vec<u32>>(),
        });
        let redacted = redact(value);
        assert_eq!(redacted["title"], "groceries");
        assert_eq!(redacted["auth"], "[redacted]");
        assert_eq!(redacted["headers"][0]["Authorization"], "[redacted]");
        let body = redacted["body"].as_str().unwrap();
        assert!(
            body.len() < 300 && body.ends_with("[744 more characters]"),
            "{body}"
        );
        assert_eq!(redacted["items"].as_array().unwrap().len(), MAX_ITEMS + 1);
        assert!(!redacted.to_string().contains("hunter2"));
    }
}

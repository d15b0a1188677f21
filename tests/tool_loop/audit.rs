//! The audit log from the library: every call of a run leaves a record (ran, rejected,
//! answered from an earlier call, invalid), and a record that cannot be written stops the
//! run before the model sees the result.

use std::sync::Arc;

use serde_json::Value;
use toolhost::agent::{
    Agent, AgentError, AgentOptions, ApprovalMode, ApprovalRules, AuditLog, AuditRecord, AuditSink,
    Conversation, RunEnd, RunOptions,
};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};

use super::{MODES, http_options, provider, toolbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_of_a_run_leaves_one_record() {
    for (format, stream) in MODES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let model = ScriptedModel::start(
            format,
            vec![
                calls(vec![
                    call("c1", "add", r#"{"a": 1, "b": 2}"#),
                    call("ghost", "divide", r#"{"a": 1, "b": 2}"#),
                ]),
                calls(vec![call("m1", "multiply", r#"{"a": 2, "b": 3}"#)]),
                calls(vec![call("m2", "multiply", r#"{"b": 3, "a": 2}"#)]),
                text("done"),
            ],
        )
        .await;
        let options = AgentOptions {
            stream,
            approval: ApprovalRules {
                tools: [("add".to_owned(), ApprovalMode::Always)].into(),
                ..ApprovalRules::default()
            },
            ..AgentOptions::default()
        };
        let agent = Agent::new(
            provider(format, &model.base_url(), http_options()),
            toolbox().await,
            options,
        )
        .with_audit(Arc::new(AuditLog::open(&path).unwrap()));
        let run_options = RunOptions::default();
        let mut conversation = Conversation::new();
        conversation.push_user("go");
        let result = agent
            .run(&mut conversation, &run_options, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(result.end, RunEnd::Paused);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "",
            "nothing is recorded while the turn waits"
        );
        conversation.reject("c1", "no adding").unwrap();
        let result = agent
            .resume(&mut conversation, &run_options, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(result.text, "done");

        let lines: Vec<Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let summary: Vec<(&str, &str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["call_id"].as_str().unwrap(),
                    l["outcome"].as_str().unwrap(),
                    l["approval"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("c1", "rejected", "rejected"),
                ("ghost", "invalid", "not_required"),
                ("m1", "ok", "not_required"),
                ("m2", "ok", "not_required"),
            ],
            "{format:?} {stream}"
        );
        assert_eq!(lines[1]["invalid"], "not_offered");
        assert_eq!(lines[1]["source"], Value::Null);
        assert_eq!(lines[3]["repeat_of"], "m1");
        assert!(lines.iter().all(|l| l["run_id"] == lines[0]["run_id"]));
    }
}

/// A sink whose disk is full.
struct Full;

impl AuditSink for Full {
    fn record(&self, _: &AuditRecord) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            "no space left on device",
        ))
    }

    fn describe(&self) -> String {
        "audit log /full/audit.jsonl".into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_cannot_be_recorded_stops_the_run_before_the_model_sees_it() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "add", r#"{"a": 1, "b": 2}"#)]),
            text("never asked"),
        ],
    )
    .await;
    let agent = Agent::new(
        provider(Format::OpenAi, &model.base_url(), http_options()),
        toolbox().await,
        AgentOptions::default(),
    )
    .with_audit(Arc::new(Full));
    let mut conversation = Conversation::new();
    conversation.push_user("1+2");
    let error = agent
        .run(&mut conversation, &RunOptions::default(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::Audit { .. }), "{error}");
    assert_error_chain_contains(&error, "/full/audit.jsonl");
    assert_error_chain_contains(&error, "no space left");
    assert_eq!(model.requests().len(), 1);
}

/// Collects what a run's tools report.
#[derive(Default)]
struct Watcher(std::sync::Mutex<Vec<String>>);

impl toolhost::sandbox::CallObserver for Watcher {
    fn progress(&self, tool: &str, progress: &toolhost::sandbox::Progress) {
        let mut seen = self.0.lock().unwrap();
        seen.push(format!("{tool} {}/{:?}", progress.done, progress.total));
    }

    fn log(&self, tool: &str, _: toolhost::sandbox::LogLevel, message: &str) {
        self.0.lock().unwrap().push(format!("{tool}: {message}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_reports_reach_the_runs_observer_and_only_their_counts_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("r1", "report", r#"{"times": 5}"#)]),
            text("reported"),
        ],
    )
    .await;
    let agent = Agent::new(
        provider(Format::OpenAi, &model.base_url(), http_options()),
        toolbox().await,
        AgentOptions::default(),
    )
    .with_audit(Arc::new(AuditLog::open(&path).unwrap()));
    let watcher = Arc::new(Watcher::default());
    let options = RunOptions {
        observer: Some(toolhost::sandbox::Observer(watcher.clone())),
        ..RunOptions::default()
    };
    let mut conversation = Conversation::new();
    conversation.push_user("report");
    let result = agent
        .run(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(result.text, "reported");
    let seen = watcher.0.lock().unwrap().clone();
    assert_eq!(seen.first().map(String::as_str), Some("report 1/Some(5.0)"));
    assert!(seen.contains(&"report: line 5".to_owned()), "{seen:?}");
    assert_eq!(seen.len(), 10, "{seen:?}");
    let record: Value =
        serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
    assert_eq!(
        record["reports"],
        serde_json::json!({"progress": 5, "log_lines": 5, "passed_on": 10})
    );
    assert!(
        !record.to_string().contains("line 5"),
        "what the tool said is not kept: {record}"
    );
}

//! An OTLP/HTTP receiver for the tests that check what the host exports:
//! `tests/mcp-peers/otlp_receiver.py`, which decodes spans and metrics with the OpenTelemetry
//! project's own protobuf definitions (`opentelemetry-proto` from PyPI) and prints each as a
//! JSON line (`name`, `kind`, `trace_id`, `span_id`, `parent_span_id`, `attributes`, `events`,
//! `status`, `service`; a metric as `{"service", "metric", "points"}`, `points` the attributes
//! of each of its data points).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

use crate::mcp::{HANG, peers};

/// `tests/mcp-peers/otlp_receiver.py`, with the spans it printed.
pub struct Receiver {
    _child: Child,
    /// Where to send OTLP/HTTP: `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    spans: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    /// Starts the receiver; it listens once this returns.
    pub async fn start() -> Self {
        let peers = peers();
        let script = crate::repo_root().join("tests/mcp-peers/otlp_receiver.py");
        let mut child = Command::new(&peers.python)
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the receiver starts");
        let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let first = tokio::time::timeout(HANG, lines.next_line())
            .await
            .expect("the receiver says where it listens")
            .expect("its stdout is read")
            .expect("a first line");
        let port = first.strip_prefix("listening on ").expect("its port");
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let span: Value = serde_json::from_str(&line).expect("a span as JSON");
                lock(&kept).push(span);
            }
        });
        Self {
            _child: child,
            endpoint: format!("http://127.0.0.1:{port}"),
            spans,
        }
    }

    /// The first span `matches` accepts, once it has arrived.
    pub async fn span(&self, matches: impl Fn(&Value) -> bool) -> Value {
        self.spans_until(1, matches).await.remove(0)
    }

    /// The first `count` spans `matches` accepts, once they have arrived.
    pub async fn spans_until(&self, count: usize, matches: impl Fn(&Value) -> bool) -> Vec<Value> {
        let found = tokio::time::timeout(HANG, async {
            loop {
                let found: Vec<Value> = (lock(&self.spans).iter())
                    .filter(|span| matches(span))
                    .take(count)
                    .cloned()
                    .collect();
                if found.len() == count {
                    return found;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("not every span arrived; received:\n{}", self.text()))
    }

    /// Every span received, one JSON line each.
    pub fn text(&self) -> String {
        let spans = lock(&self.spans);
        spans.iter().map(|span| format!("{span}\n")).collect()
    }
}

/// The spans received; a panic elsewhere in the test leaves them whole.
fn lock(spans: &Mutex<Vec<Value>>) -> std::sync::MutexGuard<'_, Vec<Value>> {
    spans
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

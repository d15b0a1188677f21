//! What a tool reports while its call runs (tool contract 0.2's `report`: progress and log
//! lines), passed on to whoever watches the call at a bounded rate. A tool that reports a
//! million times costs the watcher a few dozen reports; the rest are counted, not sent.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

/// The longest progress message or log line passed on, in bytes; longer ones are cut.
pub const MAX_REPORT_TEXT: usize = 1024;

/// How many reports of each kind (progress, log lines) a call may pass on at once, and then
/// how many per second. The last progress report held back is passed on when the call ends.
pub const REPORT_BURST: u32 = 10;
/// See [`REPORT_BURST`].
pub const REPORTS_PER_SECOND: u32 = 10;

/// How far a call has come, as its tool reported it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// Units of work done.
    pub done: f64,
    /// Units of work in all, when known.
    pub total: Option<f64>,
    /// What it does now, for a person.
    pub message: Option<String>,
}

/// How serious a tool's log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but worth noticing.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something went wrong.
    Error,
}

/// Whoever watches a call while it runs: `host mcp`'s client (progress and logging
/// notifications), `host run`'s terminal, an embedding application. Gets what passes the
/// rate bound; must not block.
pub trait CallObserver: Send + Sync {
    /// The tool reported progress.
    fn progress(&self, tool: &str, progress: &Progress);
    /// The tool wrote a log line.
    fn log(&self, tool: &str, level: LogLevel, message: &str);
}

/// A [`CallObserver`] to pass with a call.
#[derive(Clone)]
pub struct Observer(pub Arc<dyn CallObserver>);

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer")
    }
}

impl PartialEq for Observer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Observer {}

/// How many reports a call made, and how many were passed on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ReportCounts {
    /// Progress reports the tool made.
    pub progress: u64,
    /// Log lines the tool wrote.
    pub log_lines: u64,
    /// Of both, those passed on to the observer.
    pub passed_on: u64,
}

impl ReportCounts {
    /// Whether the tool reported nothing.
    pub fn is_none(&self) -> bool {
        self.progress == 0 && self.log_lines == 0
    }
}

/// The reports of one call: where they go, and the state of the rate bound.
#[derive(Default)]
pub(crate) struct CallReports {
    tool: String,
    observer: Option<Observer>,
    counts: ReportCounts,
    progress_bound: Bucket,
    /// Progress held back by the rate bound, passed on when the call ends.
    held: Option<Progress>,
    log_bound: Bucket,
}

/// A token bucket: [`REPORT_BURST`] at once, then [`REPORTS_PER_SECOND`].
#[derive(Default)]
struct Bucket {
    /// Tokens used (a fresh bucket is full).
    used: u32,
    refilled: Option<Instant>,
}

impl Bucket {
    /// Takes a token if there is one.
    fn take(&mut self, now: Instant) -> bool {
        let refilled = *self.refilled.get_or_insert(now);
        let earned =
            now.duration_since(refilled).as_millis() * u128::from(REPORTS_PER_SECOND) / 1000;
        if earned > 0 {
            self.used = self
                .used
                .saturating_sub(earned.min(u128::from(REPORT_BURST)) as u32);
            self.refilled = Some(now);
        }
        if self.used >= REPORT_BURST {
            return false;
        }
        self.used += 1;
        true
    }
}

impl CallReports {
    /// Reports of a call of `tool`, passed on to `observer`.
    pub(crate) fn new(tool: &str, observer: Option<Observer>) -> Self {
        Self {
            tool: tool.to_owned(),
            observer,
            ..Self::default()
        }
    }

    /// The tool reported progress. Numbers that are not finite are ignored.
    pub(crate) fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        self.counts.progress += 1;
        if !done.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        let progress = Progress {
            done,
            total,
            message: message.map(|m| cut(m, MAX_REPORT_TEXT)),
        };
        if self.progress_bound.take(Instant::now()) {
            self.held = None;
            self.pass_progress(&progress);
        } else {
            self.held = Some(progress);
        }
    }

    /// The tool wrote a log line: logged as the tool's, and passed on within the rate bound.
    pub(crate) fn log(&mut self, level: LogLevel, message: String) {
        self.counts.log_lines += 1;
        let message = cut(message, MAX_REPORT_TEXT);
        if !self.log_bound.take(Instant::now()) {
            return;
        }
        tracing::info!(target: "toolhost::tool_log", tool = %self.tool, ?level, "{message}");
        if let Some(observer) = &self.observer {
            self.counts.passed_on += 1;
            observer.0.log(&self.tool, level, &message);
        }
    }

    /// The call ended: passes on the progress the rate bound held back, and returns the
    /// counts.
    pub(crate) fn finish(&mut self) -> ReportCounts {
        if let Some(progress) = self.held.take() {
            self.pass_progress(&progress);
        }
        self.counts
    }

    fn pass_progress(&mut self, progress: &Progress) {
        if let Some(observer) = &self.observer {
            self.counts.passed_on += 1;
            observer.0.progress(&self.tool, progress);
        }
    }
}

/// `text` cut to at most `max` bytes, on a character boundary, marked when cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl CallObserver for Seen {
        fn progress(&self, _: &str, progress: &Progress) {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("{}/{:?}", progress.done, progress.total));
        }
        fn log(&self, _: &str, _: LogLevel, message: &str) {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(message.to_owned());
        }
    }

    #[test]
    fn a_flood_is_bounded_and_the_last_progress_arrives() {
        let seen = Arc::new(Seen::default());
        let mut reports = CallReports::new("t", Some(Observer(seen.clone())));
        for done in 0..100_000u32 {
            reports.progress(f64::from(done), Some(100_000.0), None);
            reports.log(LogLevel::Info, format!("line {done}"));
        }
        reports.progress(f64::NAN, None, None);
        let counts = reports.finish();
        let seen = seen.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert_eq!(counts.progress, 100_001);
        assert_eq!(counts.log_lines, 100_000);
        // A loop this fast takes well under a few seconds: a handful of progress reports
        // and the burst of log lines pass, whatever the machine's speed.
        assert!(seen.len() < 200, "{} reports passed on", seen.len());
        assert_eq!(counts.passed_on as usize, seen.len());
        assert_eq!(seen.first().map(String::as_str), Some("0/Some(100000.0)"));
        assert!(
            seen.contains(&"99999/Some(100000.0)".to_owned()),
            "{seen:?}"
        );
        assert!(seen.contains(&"line 9".to_owned()));
    }

    #[test]
    fn long_text_is_cut_on_a_character() {
        let cut = cut("é".repeat(1000), MAX_REPORT_TEXT);
        assert!(cut.len() <= MAX_REPORT_TEXT + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }
}

//! What a tool reports while its call runs (tool contract 0.2's `report`: progress and log
//! lines), passed on to whoever watches the call at a bounded rate. A tool that reports a
//! million times costs the watcher a few dozen reports; the rest are counted, not sent.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// None only in a store's placeholder, which no call reports to.
    clock: Option<CoarseClock>,
    counts: ReportCounts,
    progress_bound: Bucket,
    /// Progress held back by the rate bound, passed on when the call ends.
    held: Option<Progress>,
    log_bound: Bucket,
}

/// Milliseconds since the runtime started, advanced by its epoch thread at every tick (5 ms
/// by default): what the rate bound reads, with one atomic load, where `Instant::now()`
/// would cost each report a clock read (about 90 ns on this project's machine, loaded).
/// Late rather than early: a tick that comes late passes fewer reports, never more.
#[derive(Clone, Default)]
pub(crate) struct CoarseClock(Arc<AtomicU64>);

impl CoarseClock {
    /// The milliseconds now, as the last tick set them.
    fn millis(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the milliseconds (the epoch thread, at every tick; never backwards).
    pub(crate) fn advance_to(&self, millis: u64) {
        self.0.fetch_max(millis, Ordering::Relaxed);
    }
}

/// A token bucket: [`REPORT_BURST`] at once, then [`REPORTS_PER_SECOND`].
#[derive(Default)]
struct Bucket {
    /// Tokens used (a fresh bucket is full).
    used: u32,
    /// When the bucket was last refilled, in [`CoarseClock`] milliseconds.
    refilled: Option<u64>,
}

impl Bucket {
    /// Takes a token if there is one, `now` in [`CoarseClock`] milliseconds.
    fn take(&mut self, now: u64) -> bool {
        let refilled = *self.refilled.get_or_insert(now);
        let earned = now.saturating_sub(refilled) * u64::from(REPORTS_PER_SECOND) / 1000;
        if earned > 0 {
            self.used = self
                .used
                .saturating_sub(earned.min(u64::from(REPORT_BURST)) as u32);
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
    /// Reports of a call of `tool`, passed on to `observer`, at the rate `clock` allows.
    pub(crate) fn new(tool: &str, observer: Option<Observer>, clock: CoarseClock) -> Self {
        Self {
            tool: tool.to_owned(),
            observer,
            clock: Some(clock),
            ..Self::default()
        }
    }

    /// The tool reported progress. Numbers that are not finite are ignored; with no one
    /// watching, only counted. Called for every report that crosses into the host (a tool
    /// without the SDK may report in a tight loop), so a report the rate bound holds back
    /// costs a clock's atomic load and replacing the held one, nothing more.
    pub(crate) fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        self.counts.progress += 1;
        if self.observer.is_none() || !done.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        let passes = self.progress_bound.take(self.millis());
        let progress = Progress {
            done,
            total,
            message: message.map(|m| cut(m, MAX_REPORT_TEXT)),
        };
        if passes {
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
        if !self.log_bound.take(self.millis()) {
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

    fn millis(&self) -> u64 {
        self.clock.as_ref().map_or(0, CoarseClock::millis)
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
        let mut reports =
            CallReports::new("t", Some(Observer(seen.clone())), CoarseClock::default());
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
    fn after_the_burst_ten_a_second_pass_and_none_without_a_watcher() {
        let seen = Arc::new(Seen::default());
        let clock = CoarseClock::default();
        let mut reports = CallReports::new("t", Some(Observer(seen.clone())), clock.clone());
        let mut unwatched = CallReports::new("t", None, clock.clone());
        // 1,000 reports, one every 2 ms: the burst of 10 at the start, one at each 100 ms
        // from 100 to 1,900, and the last when the call ends.
        for done in 0..1000u32 {
            clock.advance_to(u64::from(done) * 2);
            reports.progress(f64::from(done), Some(1000.0), None);
            unwatched.progress(f64::from(done), Some(1000.0), None);
        }
        let counts = reports.finish();
        let seen = seen.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert_eq!(seen.len(), 10 + 19 + 1, "{seen:?}");
        assert_eq!(seen[10], "50/Some(1000.0)");
        assert_eq!(seen.last().map(String::as_str), Some("999/Some(1000.0)"));
        assert_eq!((counts.progress, counts.passed_on), (1000, 30));
        assert_eq!(unwatched.finish().passed_on, 0);
    }

    #[test]
    fn long_text_is_cut_on_a_character() {
        let cut = cut("é".repeat(1000), MAX_REPORT_TEXT);
        assert!(cut.len() <= MAX_REPORT_TEXT + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }
}

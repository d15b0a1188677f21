//! Progress on stderr while a component compiles (it is not in the cache yet).

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use toolhost::units::format_bytes;
use toolhost::{CompileEvent, CompileObserver};

/// Components smaller than this compile in well under a second; no need to say so.
const LARGE: u64 = 1 << 20;

/// A spinner per large compiling component on a terminal; a line at start and end otherwise.
pub fn compile_progress() -> CompileObserver {
    let terminal = std::io::stderr().is_terminal();
    let bars = MultiProgress::new();
    let active: Mutex<HashMap<PathBuf, Option<ProgressBar>>> = Mutex::default();
    Arc::new(move |event| {
        let mut active = active.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            CompileEvent::Started { path, size } if size >= LARGE => {
                let what = format!(
                    "compiling {} ({}), once: the result is cached",
                    path.display(),
                    format_bytes(size)
                );
                if terminal {
                    let bar = bars.add(ProgressBar::new_spinner());
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    bar.set_message(what);
                    bar.enable_steady_tick(Duration::from_millis(120));
                    active.insert(path.to_owned(), Some(bar));
                } else {
                    eprintln!("{what}");
                    active.insert(path.to_owned(), None);
                }
            }
            CompileEvent::Started { .. } => {}
            CompileEvent::Finished { path, took } => {
                let done = format!("compiled {} in {:.1} s", path.display(), took.as_secs_f64());
                match active.remove(path) {
                    Some(Some(bar)) => bar.finish_with_message(done),
                    Some(None) => eprintln!("{done}"),
                    None => {}
                }
            }
        }
    })
}

/// What tools report while they run (progress, log lines), on stderr and marked as the
/// tool's: on a terminal a progress bar per running tool, otherwise a line per report that
/// passed the host's rate bound.
pub fn tool_reports() -> toolhost::sandbox::Observer {
    toolhost::sandbox::Observer(Arc::new(ToolReports {
        terminal: std::io::stderr().is_terminal(),
        bars: MultiProgress::new(),
        active: Mutex::default(),
    }))
}

struct ToolReports {
    terminal: bool,
    bars: MultiProgress,
    active: Mutex<HashMap<String, ProgressBar>>,
}

impl toolhost::sandbox::CallObserver for ToolReports {
    fn progress(&self, tool: &str, progress: &toolhost::sandbox::Progress) {
        let message = progress.message.as_deref().unwrap_or("");
        if !self.terminal {
            let of = progress
                .total
                .map(|t| format!(" of {t}"))
                .unwrap_or_default();
            let line = format!("[tool {tool}] {}{of} {message}", progress.done);
            eprintln!("{}", line.trim_end());
            return;
        }
        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let bar = active.entry(tool.to_owned()).or_insert_with(|| {
            let bar = self.bars.add(ProgressBar::new(0));
            bar.set_style(
                ProgressStyle::with_template("[tool {prefix}] {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_prefix(tool.to_owned());
            bar
        });
        // Units of work are numbers the tool chose; the bar shows them whole.
        bar.set_length(progress.total.unwrap_or(progress.done).max(0.0) as u64);
        bar.set_position(progress.done.max(0.0) as u64);
        bar.set_message(message.to_owned());
        if progress.total.is_some_and(|total| progress.done >= total)
            && let Some(bar) = active.remove(tool)
        {
            bar.finish_and_clear();
        }
    }

    fn log(&self, tool: &str, level: toolhost::sandbox::LogLevel, message: &str) {
        let level = format!("{level:?}").to_lowercase();
        let line = format!("[tool {tool}] {level}: {message}");
        if self.terminal {
            let _ = self.bars.println(line);
        } else {
            eprintln!("{line}");
        }
    }
}

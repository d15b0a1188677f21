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

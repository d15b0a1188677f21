//! Writing to stdout, where a closed pipe is an error the command returns (and `main` turns
//! into a quiet exit), never a panic.

use std::io::{self, Write as _};

/// Writes `text` to stdout and flushes it.
pub fn print(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Writes `text` and a newline to stdout.
pub fn println(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Writes `value` as pretty JSON to stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println(&serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// Whether `error` is (or was caused by) writing to a pipe whose reader is gone.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Prints `error` on stderr: `error: ...`, then each cause on a line of its own.
pub fn print_error(error: &(dyn std::error::Error + 'static)) {
    eprintln!("error: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        eprintln!("  caused by: {cause}");
        source = cause.source();
    }
}

/// `error` and its causes on one line, for JSON output.
pub fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

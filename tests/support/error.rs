//! Assertions on an error as the operator reads it: the whole chain of causes (what `host`
//! prints, and `{:#}` of an `anyhow::Error` shows), not only the outermost message. A message
//! that moves from one layer to its cause, as the style asks (the cause goes in `#[source]`),
//! does not break these.

use std::error::Error;

/// Each message of `error`'s chain, outermost first.
pub fn messages(error: &(dyn Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(error), |&error| error.source())
        .map(ToString::to_string)
        .collect()
}

/// The chain as one line, `outer: cause: cause`, as `{:#}` of an `anyhow::Error` shows it.
pub fn chain(error: &(dyn Error + 'static)) -> String {
    messages(error).join(": ")
}

/// Fails the test, showing the whole chain, unless some message of `error`'s chain contains
/// `needle`.
#[track_caller]
pub fn assert_error_chain_contains(error: &(dyn Error + 'static), needle: &str) {
    let messages = messages(error);
    assert!(
        messages.iter().any(|message| message.contains(needle)),
        "no message of the error chain contains {needle:?}:\n{}",
        messages.join("\n  caused by: ")
    );
}

/// Fails the test, showing the whole chain, when any message of `error`'s chain contains
/// `needle`.
#[track_caller]
pub fn assert_error_chain_lacks(error: &(dyn Error + 'static), needle: &str) {
    let messages = messages(error);
    assert!(
        !messages.iter().any(|message| message.contains(needle)),
        "the error chain contains {needle:?}:\n{}",
        messages.join("\n  caused by: ")
    );
}

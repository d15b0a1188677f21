//! Small helpers for reporting: an error with its causes on one line, durations in JSON.

use std::time::Duration;

/// `error` and its causes, joined with `: `.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Serializes a duration as milliseconds, a float: the one duration unit of every JSON output.
pub(crate) fn serialize_millis<S: serde::Serializer>(
    d: &Duration,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Reads a duration written by [`serialize_millis`].
pub(crate) fn deserialize_millis<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Duration, D::Error> {
    let millis = <f64 as serde::Deserialize>::deserialize(d)?;
    Duration::try_from_secs_f64(millis / 1000.0).map_err(serde::de::Error::custom)
}

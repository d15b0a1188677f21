//! What the host tells about itself: metrics through the OpenTelemetry API, spans through
//! `tracing`, and the W3C trace context it reads from requests and passes on.
//!
//! The library stays quiet. It records on the instruments of the global meter provider
//! (`opentelemetry::global`), which does nothing until an application sets one, and it emits
//! spans with `tracing`, which go nowhere without a subscriber. The `host` binary installs an
//! exporter (Prometheus on `/metrics`, OTLP when the `OTEL_EXPORTER_OTLP_*` variables are set);
//! an embedder installs its own. Instruments are taken from the global provider once, at the
//! first call that records: set the provider before that (before building a [`Host`]).
//!
//! [`Host`]: crate::Host

pub mod context;
pub mod metrics;

use std::fmt;
use std::sync::{Arc, OnceLock};

/// The variable OpenTelemetry's GenAI instrumentations read for whether spans carry what a
/// model and its tools exchanged: `true` puts a tool call's arguments and result on its
/// `execute_tool` span (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`). Off by
/// default: they may hold what a person would not want in a trace store.
pub const CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// How much of a call's arguments or result a span keeps, at most (the rest cut at a
/// character boundary and marked), so that one large result cannot swell every exported
/// batch.
pub const MAX_CAPTURED: usize = 4096;

/// Whether the operator turned on [`CAPTURE_CONTENT`] (read once, at the first call).
pub fn captures_content() -> bool {
    static CAPTURES: OnceLock<bool> = OnceLock::new();
    *CAPTURES.get_or_init(|| {
        std::env::var(CAPTURE_CONTENT).is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"))
    })
}

/// `text` as a span keeps it: whole up to [`MAX_CAPTURED`] bytes, else its start and how
/// much was left out.
pub fn captured(text: &str) -> String {
    if text.len() <= MAX_CAPTURED {
        return text.to_owned();
    }
    let mut end = MAX_CAPTURED;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes more)", &text[..end], text.len() - end)
}

/// What `/metrics` of `host mcp --http` answers: the metrics in Prometheus's text format,
/// rendered by the exporter the application installed (the library has none). `/metrics`
/// answers 404 when the server has none.
#[derive(Clone)]
pub struct MetricsPage(Arc<dyn Fn() -> Result<String, String> + Send + Sync>);

impl MetricsPage {
    /// A page rendered by `render`: the text, or why it cannot be had.
    pub fn new(render: impl Fn() -> Result<String, String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(render))
    }

    /// The metrics as they are now.
    pub fn render(&self) -> Result<String, String> {
        (self.0)()
    }
}

impl fmt::Debug for MetricsPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetricsPage")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_text_is_bounded_at_a_character_boundary() {
        assert_eq!(captured("{\"x\": 2}"), "{\"x\": 2}");
        let long = "é".repeat(MAX_CAPTURED);
        let kept = captured(&long);
        let (start, rest) = kept.split_once("... (").unwrap();
        assert!(start.len() <= MAX_CAPTURED && start.chars().all(|c| c == 'é'));
        assert_eq!(rest, format!("{} bytes more)", long.len() - start.len()));
    }
}

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
use std::sync::Arc;

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

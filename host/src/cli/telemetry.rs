//! The `host` binary's exporters: the library records on the OpenTelemetry API (see
//! `toolhost::telemetry`), and what is recorded goes out only through what is set up here.

use anyhow::Context as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use prometheus::{Encoder as _, TextEncoder};
use toolhost::telemetry::MetricsPage;

/// The service name when `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`)
/// names none.
const SERVICE_NAME: &str = "toolhost";

/// The exporters set up for this process; dropping it flushes and stops them.
pub struct Telemetry {
    meters: SdkMeterProvider,
    registry: prometheus::Registry,
}

impl Telemetry {
    /// Sets the global meter provider with a Prometheus exporter, before anything records.
    pub fn start() -> anyhow::Result<Self> {
        let registry = prometheus::Registry::new();
        let exporter = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .context("cannot set up the Prometheus exporter")?;
        let meters = SdkMeterProvider::builder()
            .with_resource(resource())
            .with_reader(exporter)
            .build();
        opentelemetry::global::set_meter_provider(meters.clone());
        Ok(Self { meters, registry })
    }

    /// What `/metrics` answers: the registry in Prometheus's text format.
    pub fn metrics_page(&self) -> MetricsPage {
        let registry = self.registry.clone();
        MetricsPage::new(move || {
            let mut text = Vec::new();
            TextEncoder::new()
                .encode(&registry.gather(), &mut text)
                .map_err(|error| error.to_string())?;
            String::from_utf8(text).map_err(|error| error.to_string())
        })
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.meters.shutdown() {
            tracing::debug!("stopping the metrics exporter: {error}");
        }
    }
}

/// The resource every metric and span is of: the SDK's (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), named `toolhost` when they name no service.
fn resource() -> Resource {
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES")
            .is_ok_and(|attributes| attributes.contains("service.name="));
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder.with_service_name(SERVICE_NAME).build()
    }
}

//! The `host` binary's exporters: the library records on the OpenTelemetry API (see
//! `toolhost::telemetry`), and what is recorded goes out only through what is set up here.

use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
#[cfg(feature = "mcp-server")]
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
#[cfg(feature = "mcp-server")]
use prometheus::{Encoder as _, TextEncoder};
#[cfg(feature = "mcp-server")]
use toolhost::telemetry::MetricsPage;
use tracing_subscriber::registry::LookupSpan;

/// The service name when `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`)
/// names none.
const SERVICE_NAME: &str = "toolhost";

/// The exporters set up for this process; dropping it flushes and stops them.
#[cfg(feature = "mcp-server")]
pub struct Telemetry {
    meters: SdkMeterProvider,
    registry: prometheus::Registry,
}

#[cfg(feature = "mcp-server")]
impl Telemetry {
    /// Sets the global meter provider with a Prometheus exporter, before anything records,
    /// and an OTLP/HTTP one pushing from `runtime` when the standard variables name an
    /// endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`,
    /// unless `OTEL_METRICS_EXPORTER=none`; every `OTEL_METRIC_EXPORT_INTERVAL`, 60 s).
    /// `None` when `OTEL_SDK_DISABLED=true` turns telemetry off (nothing is recorded then,
    /// and `/metrics` answers 404).
    pub fn start(runtime: tokio::runtime::Handle) -> anyhow::Result<Option<Self>> {
        if sdk_disabled() {
            return Ok(None);
        }
        let registry = prometheus::Registry::new();
        let exporter = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .context("cannot set up the Prometheus exporter")?;
        let mut meters = SdkMeterProvider::builder()
            .with_resource(resource())
            .with_reader(exporter);
        if Self::pushes() {
            let pushed = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(OtlpClient::new(runtime)?)
                .build()
                .context(
                    "cannot set up the OTLP metric exporter (OTEL_EXPORTER_OTLP_* variables)",
                )?;
            meters = meters.with_periodic_exporter(pushed);
        }
        let meters = meters.build();
        opentelemetry::global::set_meter_provider(meters.clone());
        Ok(Some(Self { meters, registry }))
    }

    /// Whether the metrics are pushed over OTLP (see [`start`](Self::start)).
    pub fn pushes() -> bool {
        otlp_wanted(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_METRICS_EXPORTER",
        )
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

#[cfg(feature = "mcp-server")]
impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.meters.shutdown() {
            tracing::debug!("stopping the metrics exporter: {error}");
        }
    }
}

/// Whether `OTEL_SDK_DISABLED=true` turns every signal off, as the specification defines it.
fn sdk_disabled() -> bool {
    std::env::var("OTEL_SDK_DISABLED").is_ok_and(|set| set.trim().eq_ignore_ascii_case("true"))
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

/// Whether a signal goes out over OTLP: an endpoint named for all signals
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`) or for this one (`endpoint`), its `exporter` variable not
/// `none`, and the SDK not disabled.
fn otlp_wanted(endpoint: &str, exporter: &str) -> bool {
    let named = ["OTEL_EXPORTER_OTLP_ENDPOINT", endpoint]
        .iter()
        .any(|variable| std::env::var_os(variable).is_some());
    let none = std::env::var(exporter).is_ok_and(|set| set.trim().eq_ignore_ascii_case("none"));
    named && !none && !sdk_disabled()
}

/// The spans exported over OTLP; dropping it sends those still waiting.
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// The OTLP/HTTP trace exporter and the layer that feeds it the `tracing` spans, when the
    /// standard variables ask for one: an endpoint set (`OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and neither `OTEL_SDK_DISABLED=true` nor
    /// `OTEL_TRACES_EXPORTER=none`. The SDK reads the rest as the specification says
    /// (`OTEL_TRACES_SAMPLER` and its argument, the headers, the timeout,
    /// `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`). W3C trace context is then read from
    /// requests and passed on. Exports run on `runtime`.
    pub fn start<S>(
        runtime: tokio::runtime::Handle,
    ) -> anyhow::Result<Option<(Self, impl tracing_subscriber::Layer<S>)>>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        if !otlp_wanted("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER") {
            return Ok(None);
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_http_client(OtlpClient::new(runtime)?)
            .build()
            .context("cannot set up the OTLP trace exporter (OTEL_EXPORTER_OTLP_* variables)")?;
        let provider = SdkTracerProvider::builder()
            .with_resource(resource())
            .with_batch_exporter(exporter)
            .build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let tracer = provider.tracer("toolhost");
        let layer = tracing_opentelemetry::layer().with_tracer(tracer);
        Ok(Some((Self { provider }, layer)))
    }
}

impl Drop for Traces {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown() {
            eprintln!("warning: not every span was exported: {error}");
        }
    }
}

/// The OTLP exporter's HTTP client: the host's reqwest, its requests run on the host's
/// runtime (the SDK exports from a thread of its own, outside it).
#[derive(Debug)]
struct OtlpClient {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl OtlpClient {
    /// The host's reqwest (rustls and the platform's roots), each export within 10 s.
    fn new(runtime: tokio::runtime::Handle) -> anyhow::Result<Self> {
        toolhost::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .context("cannot make the OTLP exporter's HTTP client")?;
        Ok(Self { http, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let http = self.http.clone();
        let sent = self.runtime.spawn(async move {
            let answer = http.execute(request).await?;
            let mut response = http::Response::builder().status(answer.status());
            if let Some(headers) = response.headers_mut() {
                headers.extend(answer.headers().clone());
            }
            let body = answer.bytes().await?;
            Ok::<_, HttpError>(response.body(body)?)
        });
        sent.await?
    }
}

//! Traces exported over OTLP (HTTP, protobuf) to the collector named by the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), with the other
//! standard variables (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, ...) read by the
//! OpenTelemetry SDK. Built with the `otlp` feature only: the default build carries none of it.
//!
//! Spans leave in batches from the SDK's own thread (no async runtime needed, so the CLI, `mcp`
//! and `serve` export alike); the last batch leaves when [`Exporting::shutdown`] runs at exit.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::{Layer, Registry};

/// A layer of the CLI's subscriber ([`crate::logging`]).
pub(crate) type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// The exporter at work, until the process ends.
pub(crate) struct Exporting {
    provider: SdkTracerProvider,
}

impl Exporting {
    /// Sends the spans not sent yet, and stops.
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("handoff: the last traces could not be exported: {e}");
        }
    }
}

/// The layer that exports spans, when the environment names a collector; `None` when it does
/// not.
pub(crate) fn from_environment() -> Result<Option<(BoxedLayer, Exporting)>, String> {
    let named = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    if !named {
        return Ok(None);
    }
    // The endpoint, headers and timeout come from the standard variables.
    let exporter = SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| e.to_string())?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource())
        .build();
    let tracer = provider.tracer("handoff");
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).boxed();
    Ok(Some((layer, Exporting { provider })))
}

/// What the spans say about their source: the SDK's defaults and `OTEL_RESOURCE_ATTRIBUTES`,
/// named `handoff` unless `OTEL_SERVICE_NAME` names it.
fn resource() -> Resource {
    let builder = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_some_and(|v| !v.is_empty()) {
        builder.build()
    } else {
        builder.with_service_name("handoff").build()
    }
}

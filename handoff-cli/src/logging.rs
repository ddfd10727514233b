//! The `handoff` command's logs and traces: a `tracing` subscriber on stderr (never stdout,
//! which carries command output, the MCP protocol and `serve`'s start line), filtered by
//! `RUST_LOG` (tracing-subscriber's `EnvFilter` syntax: `info`, `handoff_core=debug,warn`),
//! as text or JSON lines (`--log-format`). With the `otlp` feature and
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans also go to that OpenTelemetry collector
//! (`otlp.rs`).
//!
//! What is logged: `handoff serve` one line per HTTP request (target `handoff::http`, level
//! info); the core's spans (one per catalog operation, `handoff.operation`, and per write to a
//! handoff, `handoff.write`) carry the handoff, task, agents, backend and outcome into every
//! line logged inside them and into the exported traces.

use clap::ValueEnum;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// One readable line per event, its spans' fields before it.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`, and the `span`
    /// (and `spans`) it happened in with their fields.
    Json,
}

/// What must live until the process ends for the last spans to leave (the OTLP exporter's
/// batch); dropped at the end of `main`.
pub(crate) struct Logging {
    #[cfg(feature = "otlp")]
    otlp: Option<crate::otlp::Exporting>,
}

impl Drop for Logging {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(exporting) = self.otlp.take() {
            exporting.shutdown();
        }
    }
}

/// Installs the subscriber: log lines filtered by `RUST_LOG`, else by `default` (a level or
/// directives), written as `format`; and the OTLP export when configured, filtered by
/// `RUST_LOG`, else at `info` (every operation's span). A `RUST_LOG` that does not read is said
/// on stderr, and the default used instead.
pub(crate) fn init(format: LogFormat, default: &str) -> Logging {
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    #[cfg_attr(not(feature = "otlp"), allow(unused_mut))]
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![match format {
        LogFormat::Text => fmt.with_filter(filter(default)).boxed(),
        LogFormat::Json => fmt
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_filter(filter(default))
            .boxed(),
    }];
    #[cfg(feature = "otlp")]
    let otlp = match crate::otlp::from_environment() {
        Ok(Some((layer, exporting))) => {
            layers.push(layer.with_filter(filter("info")).boxed());
            Some(exporting)
        }
        Ok(None) => None,
        Err(e) => {
            eprintln!("handoff: cannot export traces over OTLP: {e}");
            None
        }
    };
    // Another subscriber already installed keeps its place.
    let _ = tracing_subscriber::registry().with(layers).try_init();
    Logging {
        #[cfg(feature = "otlp")]
        otlp,
    }
}

/// `RUST_LOG`'s filter, else `default`'s.
fn filter(default: &str) -> EnvFilter {
    match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .unwrap_or_else(|e| {
                eprintln!("handoff: RUST_LOG is not a filter ({e}); logging at {default}");
                EnvFilter::new(default)
            }),
        _ => EnvFilter::new(default),
    }
}

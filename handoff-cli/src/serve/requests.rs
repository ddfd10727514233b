//! One log line per HTTP request (method, path, status, duration), written when the answer is
//! ready, or when the client left before it was (status 499, as proxies log it); and the
//! request's span, under which the operation it runs opens its own (see the core's `trace`).
//!
//! The path is logged without its query string (where a dashboard link may carry `?token=`),
//! without the share token of `/bundles/shared/{token}`, and redacted like every answer.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::response::Response;
use tracing::{Instrument, field};

use super::App;

/// Every request, logged, then [`super::handle`].
pub(super) async fn logged(State(app): State<Arc<App>>, request: Request) -> Response {
    let mut line = Line {
        method: request.method().to_string(),
        path: loggable_path(&app, request.uri().path()),
        started: Instant::now(),
        status: None,
    };
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format_args!("HTTP {}", line.method),
        otel.kind = "server",
        http.request.method = %line.method,
        url.path = %line.path,
        http.response.status_code = field::Empty,
    );
    let response = super::handle(State(app), request)
        .instrument(span.clone())
        .await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    line.status = Some(status);
    response
}

/// What the log line says; written when dropped.
struct Line {
    method: String,
    path: String,
    started: Instant,
    /// `None` while the answer is not ready: dropped so, the client left.
    status: Option<u16>,
}

impl Drop for Line {
    fn drop(&mut self) {
        let status = self.status.unwrap_or(499);
        // Whole microseconds, so the line shows at most three decimals.
        let duration_ms = self.started.elapsed().as_micros() as f64 / 1000.0;
        tracing::info!(
            target: "handoff::http",
            method = %self.method,
            path = %self.path,
            status,
            duration_ms,
            "request"
        );
    }
}

/// `path` as it may be logged: a share token in it replaced, and redacted.
fn loggable_path(app: &App, path: &str) -> String {
    app.out.text(&without_share_token(path)).into_owned()
}

/// `path` with the token of `.../bundles/shared/{token}` replaced by `[token]`.
fn without_share_token(path: &str) -> String {
    let mut segments: Vec<&str> = path.split('/').collect();
    for i in 2..segments.len() {
        if segments[i - 2] == "bundles" && segments[i - 1] == "shared" {
            segments[i] = "[token]";
        }
    }
    segments.join("/")
}

#[cfg(test)]
mod tests {
    use super::without_share_token;

    #[test]
    fn share_tokens_stay_out_of_the_log() {
        assert_eq!(
            without_share_token("/api/v1/bundles/shared/kb_secret"),
            "/api/v1/bundles/shared/[token]"
        );
        assert_eq!(
            without_share_token("/api/v1/handoffs/h1"),
            "/api/v1/handoffs/h1"
        );
        assert_eq!(without_share_token("/"), "/");
    }
}

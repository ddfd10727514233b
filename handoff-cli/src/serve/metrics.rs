//! `GET /metrics`: the core's `metrics` operation in the Prometheus text exposition format
//! (version 0.0.4), for a scraper. Everything is computed from the store, so every server over
//! one database answers the same, and a restarted one loses nothing.
//!
//! With tokens (`--token`, `--credentials`) a scrape needs the operator's token, as a bearer
//! token (Prometheus's `authorization` setting): the counts name every agent. Without tokens
//! the server is on loopback only, and so is this.

use std::fmt::Write;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use handoff_core::metrics::{Histogram, Metrics};

use super::App;
use crate::credentials::Agents;

/// The media type of the text format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Answers a scrape by `caller`.
pub(super) async fn scrape(app: Arc<App>, method: &Method, caller: &Agents) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "/metrics answers GET\n").into_response();
    }
    if !matches!(caller, Agents::Any) {
        return (
            StatusCode::FORBIDDEN,
            "/metrics names every agent's work: it needs the operator's token\n",
        )
            .into_response();
    }
    match app.blocking(|app| app.store.metrics()).await {
        Ok(Ok(metrics)) => {
            let mut response = Response::new(Body::from(render(&metrics)));
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
            response
        }
        Ok(Err(err)) | Err(err) => (
            StatusCode::SERVICE_UNAVAILABLE,
            app.out
                .text(&format!("cannot read the metrics: {err}\n"))
                .into_owned(),
        )
            .into_response(),
    }
}

/// The metrics in the text format: each family's `# HELP` and `# TYPE`, then its samples.
pub(crate) fn render(m: &Metrics) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "handoff_handoffs",
        "gauge",
        "Handoffs in each status, per addressee (agent \"*\": any agent may claim them).",
    );
    for count in &m.handoffs {
        sample(
            &mut out,
            "handoff_handoffs",
            &[
                ("status", count.status.as_str()),
                ("agent", count.to_agent.as_deref().unwrap_or("*")),
            ],
            count.count,
        );
    }
    family(
        &mut out,
        "handoff_events_total",
        "counter",
        "Events in the store's log, by kind (lease_expired: a lease that lapsed). Pruning \
         removes old events, which a scraper sees as a counter reset.",
    );
    for count in &m.events {
        sample(
            &mut out,
            "handoff_events_total",
            &[("kind", &count.kind)],
            count.count,
        );
    }
    histogram(
        &mut out,
        "handoff_claim_wait_seconds",
        "Time from a handoff's creation to its first claim.",
        &m.claim_wait,
    );
    histogram(
        &mut out,
        "handoff_work_seconds",
        "Time from a claim to its completion, failure or release by the holder.",
        &m.work_time,
    );
    family(
        &mut out,
        "handoff_open_escalations",
        "gauge",
        "Escalations still pending or claimed.",
    );
    sample(
        &mut out,
        "handoff_open_escalations",
        &[],
        m.open_escalations,
    );
    family(
        &mut out,
        "handoff_task_steps",
        "gauge",
        "Task steps in each status.",
    );
    for count in &m.steps {
        let status = serde_json::to_value(count.status).unwrap_or_default();
        sample(
            &mut out,
            "handoff_task_steps",
            &[("status", status.as_str().unwrap_or_default())],
            count.count,
        );
    }
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    // HELP text escapes backslashes and line breaks only.
    let help = help.replace('\\', r"\\").replace('\n', r"\n");
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (label, text)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{label}=\"{}\"", escape(text));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

fn histogram(out: &mut String, name: &str, help: &str, h: &Histogram) {
    family(out, name, "histogram", help);
    let bucket = format!("{name}_bucket");
    for b in &h.buckets {
        sample(out, &bucket, &[("le", &b.le_seconds.to_string())], b.count);
    }
    sample(out, &bucket, &[("le", "+Inf")], h.count);
    sample(out, &format!("{name}_sum"), &[], h.sum_seconds);
    sample(out, &format!("{name}_count"), &[], h.count);
}

/// A label value as the format writes it: backslash, double quote and line feed escaped.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => escaped.push_str(r"\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str(r"\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn label_values_escape_what_the_format_reserves() {
        assert_eq!(escape("a\\b\"c\nd"), r#"a\\b\"c\nd"#);
        assert_eq!(escape("worker-1"), "worker-1");
    }
}

//! The probes of a service manager or an orchestrator: `GET /healthz` (the process answers;
//! the store is not touched, so a slow database never gets a live server restarted) and `GET
//! /readyz` (the store answers and its schema is the one this build writes: 200, else 503 with
//! the reason). Neither needs a token nor reveals anything but that.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::App;

/// The probe's answer, when `path` names one; `None` for every other request.
pub(super) async fn probe(app: &Arc<App>, method: &Method, path: &str) -> Option<Response> {
    let probe = matches!(path, "/healthz" | "/readyz");
    if !probe {
        return None;
    }
    if method != Method::GET && method != Method::HEAD {
        return Some((StatusCode::METHOD_NOT_ALLOWED, "probes answer GET\n").into_response());
    }
    if path == "/healthz" {
        return Some((StatusCode::OK, "ok\n").into_response());
    }
    Some(match app.blocking(|app| app.store.ready()).await {
        Ok(Ok(())) => (StatusCode::OK, "ready\n").into_response(),
        Ok(Err(err)) | Err(err) => (
            StatusCode::SERVICE_UNAVAILABLE,
            app.out.text(&format!("not ready: {err}\n")).into_owned(),
        )
            .into_response(),
    })
}

//! The dashboard (placeholder while the pages are written).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::App;

pub(super) async fn handle(_app: Arc<App>, _path: &str, _query: &str) -> Response {
    (StatusCode::NOT_FOUND, "no page\n").into_response()
}

pub(super) fn remember_token(_app: &App, _path: &str) -> Response {
    (StatusCode::NOT_FOUND, "no page\n").into_response()
}

pub(super) fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, "this dashboard needs its token: open it with ?token=…\n").into_response()
}

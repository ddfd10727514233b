//! The dashboard: server-rendered pages an operator reads and acts on without JavaScript — the
//! queue ([`queue`]: claims with their leases and heartbeats, failures with their errors, dead
//! handoffs), the tasks ([`tasks`], [`task`]: plans, escalations, chains, manager/worker runs,
//! replay timelines), a record ([`record`]), the bundles ([`bundles`]); and the forms that act
//! ([`actions`], guarded by [`forms`]). Pages refresh themselves (`<meta http-equiv="refresh">`,
//! off with `?refresh=0`). Every text leaves through [`Output`], which
//! redacts, and through [`html::esc`], which escapes.

mod actions;
mod bundles;
mod chain;
mod forms;
mod html;
mod names;
mod protocol;
mod queue;
mod record;
mod state;
mod task;
mod tasks;

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use handoff_core::{Error, ErrorKind, Store};
use serde_json::Value;

use super::{App, Refusal, TOKEN_COOKIE, json_response, openapi, query_pairs};
use crate::credentials::Agents;
use crate::error::CliError;
use crate::output::Output;
pub(super) use actions::act;
use forms::Session;
use html::{Page, esc, handoff_link};

/// How often a page reloads itself, in seconds.
const REFRESH_SECONDS: u32 = 5;
/// Rows of a list on a page: a page stays small whatever the store holds.
const ROWS: usize = 25;
/// A claim whose last heartbeat is older than this is shown as stalled.
const STALLED_AFTER: Duration = Duration::from_secs(60);

/// What a page is made from: the store, the redacting output, the moment it is made, the
/// session it is for (its forms' token, who acts) and its own path (where its forms return).
struct Ctx<'a> {
    store: &'a Store,
    out: &'a Output,
    now: DateTime<Utc>,
    session: &'a Session,
    back: String,
}

/// A dashboard page, for a caller acting as `caller`.
pub(super) async fn handle(
    app: Arc<App>,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    caller: &Agents,
) -> Response {
    // The API's document, where the dashboard's cookie opens it (it never opens `/api/`).
    if path.trim_end_matches('/') == "/openapi.json" {
        return json_response(StatusCode::OK, openapi::document());
    }
    let done = done_message(query);
    page(&app, path, query, headers, caller, done.map(Ok)).await
}

/// What `?done=<action>&id=<id>` says was just done: only the actions' own words, so that a
/// link cannot put words of its own on the page.
fn done_message(query: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = query_pairs(query).collect();
    let value = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let action = actions::find(value("done")?)?;
    Some(match value("id") {
        Some(id) if !id.is_empty() => format!("{}: {}.", esc(action.done), handoff_link(id)),
        _ => format!("{}.", esc(action.done)),
    })
}

/// The page at `path`, with a message about what was just done (`Ok`, already HTML) or the
/// error an action met (`Err`: the page answers with the error's status).
async fn page(
    app: &Arc<App>,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    caller: &Agents,
    flash: Option<Result<String, CliError>>,
) -> Response {
    let refresh = !query_pairs(query).any(|(k, v)| k == "refresh" && v == "0");
    let path = path.trim_end_matches('/').to_owned();
    let session = Session::of(headers, caller);
    let segments: Vec<String> = path.split('/').skip(1).map(super::path_segment).collect();
    let back = if path.is_empty() {
        "/".to_owned()
    } else {
        path
    };
    let acting = session.acting.clone();
    let built = app
        .blocking(move |app| {
            let ctx = Ctx {
                store: &app.store,
                out: &app.out,
                now: app.store.now(),
                session: &session,
                back,
            };
            match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                [] | [""] => queue::page(&ctx),
                ["tasks"] => tasks::page(&ctx),
                ["tasks", id] => task::page(&ctx, id),
                ["handoffs", id] => record::page(&ctx, id),
                ["bundles"] => bundles::page(&ctx),
                _ => Err(Error::NotFound {
                    what: "page",
                    id: segments.join("/"),
                }),
            }
        })
        .await
        .and_then(|page| page);
    let db = app.db.shown();
    let (status, flash) = match flash {
        None => (StatusCode::OK, String::new()),
        Some(Ok(done)) => (
            StatusCode::OK,
            format!("<p class=\"flash\" role=\"status\">{done}</p>"),
        ),
        Some(Err(e)) => (failure_status(&e), failure_html(app, &e)),
    };
    match built {
        Ok(mut page) => {
            page.flash = flash;
            html(status, &page.render(refresh, &db, Some(&acting)))
        }
        Err(e) => {
            let status = super::api::status(e.kind());
            let message = app.out.text(&e.to_string()).into_owned();
            let mut page = Page::new("Not here", String::new())
                .section("", format!("<p class=\"error\">{}</p>", esc(&message)));
            page.flash = flash;
            let mut response = html(status, &page.render(false, &db, Some(&acting)));
            if e.kind() == ErrorKind::Busy {
                response
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from_static("1"));
            }
            response
        }
    }
}

/// The HTTP status of an action's error, as the API gives it.
fn failure_status(e: &CliError) -> StatusCode {
    match e {
        CliError::Core(e) => super::api::status(e.kind()),
        CliError::Forbidden { .. } => StatusCode::FORBIDDEN,
        CliError::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
        CliError::MissingStore(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An action's error as the core gave it: its code, its message and each problem's field and
/// rule, redacted.
fn failure_html(app: &App, e: &CliError) -> String {
    let shown = e.shown_json(&app.out);
    let error = &shown["error"];
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let problems: String = error["problems"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| {
                    format!(
                        "<li><code>{}</code>: {}</li>",
                        esc(&text(p, "field")),
                        esc(&text(p, "rule"))
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "<div class=\"flash error\" role=\"alert\"><strong>{}</strong>: {}{}</div>",
        esc(&text(error, "code")),
        esc(&text(error, "message")),
        if problems.is_empty() {
            String::new()
        } else {
            format!("<ul>{problems}</ul>")
        }
    )
}

/// `Ok(None)` for what is not there; other errors stay errors.
fn found<T>(result: Result<T, Error>) -> Result<Option<T>, Error> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A page opened with `?token=`: the token goes into a cookie and the page is loaded again
/// without it, so that it stays out of the history and of links. Only ever a page of this
/// server: a path that starts with `//` (or `/\`, which browsers read the same way) would send
/// the browser to another server, so the slashes it starts with become one.
pub(super) fn remember_token(path: &str, token: &str) -> Response {
    let cookie = format!("{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, value);
    }
    let back = format!("/{}", path.trim_start_matches(['/', '\\']));
    if let Ok(value) = HeaderValue::from_str(&back) {
        headers.insert(header::LOCATION, value);
    }
    response
}

/// A request refused before it is read ([`super::browsers`], a form without its token): the
/// rule, on a page.
pub(super) fn refused(app: &App, refusal: &Refusal) -> Response {
    let message = app.out.text(&refusal.message()).into_owned();
    let page = Page::new("Refused", String::new())
        .section("", format!("<p class=\"error\">{}</p>", esc(&message)));
    let mut response = html(refusal.status, &page.render(false, "", None));
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// No token, or the wrong one.
pub(super) fn unauthorized() -> Response {
    let page = Page::new("Token needed", String::new()).section(
        "",
        "<p>This dashboard needs the server's token: open it once as <code>/?token=…</code>.</p>"
            .to_owned(),
    );
    html(StatusCode::UNAUTHORIZED, &page.render(false, "", None))
}

fn html(status: StatusCode, body: &str) -> Response {
    let mut response = (status, body.to_owned()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // Nothing on these pages comes from elsewhere, nothing may embed them, and their forms
    // post here only.
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'",
        ),
    );
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    // `same-origin`, not `no-referrer`: with `no-referrer` a browser sends `Origin: null` with a
    // form's post, which the server cannot tell from another site's; this way it sends the
    // page's own origin, and still nothing to other sites.
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

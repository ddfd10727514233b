//! The dashboard: server-rendered pages an operator reads without JavaScript — the queue by
//! status and agent, stalled work, each task's chain, plan, protocol run and replay timeline,
//! a record's DNA and events, the bundles and their share links. Pages refresh themselves
//! (`<meta http-equiv="refresh">`, off with `?refresh=0`). Every text leaves through
//! [`Output`], which redacts, and through [`esc`], which escapes.

use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use handoff_core::{Error, ErrorKind, Handoff, ListFilter, Status, Store};
use serde_json::Value;

use super::Refusal;
use super::{App, TOKEN_COOKIE, json_response, openapi, query_pairs};
use crate::output::{Output, clip, time};

/// How often a page reloads itself, in seconds.
const REFRESH_SECONDS: u32 = 5;
/// Rows of a list on a page: a page stays small whatever the store holds.
const ROWS: usize = 25;
/// A claim whose last heartbeat is older than this is shown as stalled.
const STALLED_AFTER: Duration = Duration::from_secs(60);

/// A dashboard page.
pub(super) async fn handle(app: Arc<App>, path: &str, query: &str) -> Response {
    let refresh = !query_pairs(query).any(|(k, v)| k == "refresh" && v == "0");
    let path = path.trim_end_matches('/').to_owned();
    // The API's document, where the dashboard's cookie opens it (it never opens `/api/`).
    if path == "/openapi.json" {
        return json_response(StatusCode::OK, openapi::document());
    }
    let segments: Vec<String> = path.split('/').skip(1).map(super::path_segment).collect();
    let page = app
        .blocking(move |app| {
            let store = &app.store;
            let out = &app.out;
            match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                [] | [""] => queue(store, out),
                ["tasks"] => tasks(store, out),
                ["tasks", id] => task(store, out, id),
                ["handoffs", id] => record(store, out, id),
                ["bundles"] => bundles(store, out),
                _ => Err(Error::NotFound {
                    what: "page",
                    id: segments.join("/"),
                }),
            }
        })
        .await
        .and_then(|page| page);
    match page {
        Ok(page) => html(StatusCode::OK, &page.render(refresh, &app.db.shown())),
        Err(e) => {
            let status = super::api::status(e.kind());
            let message = app.out.text(&e.to_string()).into_owned();
            let page = Page::new("Not here", String::new())
                .section("", format!("<p class=\"error\">{}</p>", esc(&message)));
            let mut response = html(status, &page.render(false, &app.db.shown()));
            if e.kind() == ErrorKind::Busy {
                response
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from_static("1"));
            }
            response
        }
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

/// A request refused before it is read ([`super::browsers`]): the rule, on a page.
pub(super) fn refused(app: &App, refusal: &Refusal) -> Response {
    let message = app.out.text(&refusal.message()).into_owned();
    let page = Page::new("Refused", String::new())
        .section("", format!("<p class=\"error\">{}</p>", esc(&message)));
    let mut response = html(refusal.status, &page.render(false, ""));
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
    html(StatusCode::UNAUTHORIZED, &page.render(false, ""))
}

fn html(status: StatusCode, body: &str) -> Response {
    let mut response = (status, body.to_owned()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // Nothing on these pages comes from elsewhere, and nothing may embed them.
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"),
    );
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

/// `text` safe inside HTML text and attribute values.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An agent's name, escaped, with the code points of what in it may not be what it looks like
/// (`gemіni (U+0456 at 4)`): an agent named with a Cyrillic і would otherwise pass for
/// `gemini` on the page. See [`unlike_ascii`].
fn agent(name: &str) -> String {
    match code_points(name) {
        Some(points) => format!("{} <span class=\"cp\">({})</span>", esc(name), esc(&points)),
        None => esc(name),
    }
}

/// [`agent`] as plain text (for an SVG `<title>`), not yet escaped.
fn agent_text(name: &str) -> String {
    match code_points(name) {
        Some(points) => format!("{name} ({points})"),
        None => name.to_owned(),
    }
}

/// `U+0456 at 4, ...` for each character of `name` that is not ASCII (positions counted in
/// characters from 1, the first eight), when [`unlike_ascii`] says the name could pass for
/// an ASCII one.
fn code_points(name: &str) -> Option<String> {
    if !unlike_ascii(name) {
        return None;
    }
    let odd: Vec<String> = name
        .chars()
        .enumerate()
        .filter(|(_, c)| !c.is_ascii())
        .map(|(i, c)| format!("U+{:04X} at {}", u32::from(c), i + 1))
        .collect();
    let shown = odd.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    Some(match odd.len() {
        0..=8 => shown,
        n => format!("{shown} and {} more", n - 8),
    })
}

/// Whether `name` holds characters that are not ASCII and could pass for ASCII. Two simple
/// rules rather than Unicode's whole confusables table (thousands of pairs, and a dependency):
///
/// - a name that mixes ASCII letters or digits with anything else: whatever the rest is
///   (a Cyrillic `а`, a non-breaking space, a `‐` that is not `-`), it sits among ASCII and
///   may be taken for it. A name such as `Müller` or `claude 🤖` is marked too, which costs a
///   few characters on the page and no harm;
/// - a name with no ASCII letter whose letters all look like ASCII ones ([`looks_ascii`]):
///   `сео` in Cyrillic, `ｇｅｍｉｎｉ` in fullwidth forms. A name in another script (`Анна`,
///   `日本語`) is shown as it is.
fn unlike_ascii(name: &str) -> bool {
    if name.is_ascii() {
        return false;
    }
    if name.chars().any(|c| c.is_ascii_alphanumeric()) {
        return true;
    }
    let mut letters = name.chars().filter(|c| c.is_alphanumeric()).peekable();
    letters.peek().is_some() && letters.all(looks_ascii)
}

/// Letters of other scripts that look like ASCII letters or digits in common fonts: the
/// Cyrillic and Greek ones Unicode lists as confusable with Latin, a few Latin letters outside
/// ASCII, and ASCII's own fullwidth and mathematical forms.
fn looks_ascii(c: char) -> bool {
    matches!(c,
        // Cyrillic: а е о р с у х ѕ і ј һ ӏ ү ԁ ԛ ԝ, and А В Е К М Н О Р С Т Х Ѕ І Ј Ү.
        '\u{0430}' | '\u{0435}' | '\u{043e}' | '\u{0440}' | '\u{0441}' | '\u{0443}' | '\u{0445}'
        | '\u{0455}' | '\u{0456}' | '\u{0458}' | '\u{04bb}' | '\u{04cf}' | '\u{04af}' | '\u{0501}'
        | '\u{051b}' | '\u{051d}' | '\u{0410}' | '\u{0412}' | '\u{0415}' | '\u{041a}' | '\u{041c}'
        | '\u{041d}' | '\u{041e}' | '\u{0420}' | '\u{0421}' | '\u{0422}' | '\u{0425}' | '\u{0405}'
        | '\u{0406}' | '\u{0408}' | '\u{04ae}'
        // Greek: ο ι κ ν ρ υ α, and Α Β Ε Ζ Η Ι Κ Μ Ν Ο Ρ Τ Υ Χ.
        | '\u{03bf}' | '\u{03b9}' | '\u{03ba}' | '\u{03bd}' | '\u{03c1}' | '\u{03c5}' | '\u{03b1}'
        | '\u{0391}' | '\u{0392}' | '\u{0395}' | '\u{0396}' | '\u{0397}' | '\u{0399}' | '\u{039a}'
        | '\u{039c}' | '\u{039d}' | '\u{039f}' | '\u{03a1}' | '\u{03a4}' | '\u{03a5}' | '\u{03a7}'
        // Latin: dotless ı, script ɡ.
        | '\u{0131}' | '\u{0261}'
        // Fullwidth ASCII, and the mathematical alphanumeric symbols (bold, italic, ... A-z 0-9).
        | '\u{ff01}'..='\u{ff5e}' | '\u{1d400}'..='\u{1d7ff}')
}

/// A path segment as it goes into a link.
fn seg(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~:@".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

fn task_link(task_id: &str) -> String {
    format!("<a href=\"/tasks/{}\">{}</a>", seg(task_id), esc(task_id))
}

fn handoff_link(id: &str) -> String {
    format!(
        "<a href=\"/handoffs/{}\">{}</a>",
        seg(id),
        esc(&clip(id, 13))
    )
}

/// A page: its title, a line under it, and its sections.
struct Page {
    title: String,
    subtitle: String,
    sections: Vec<(String, String)>,
}

impl Page {
    fn new(title: impl Into<String>, subtitle: String) -> Page {
        Page {
            title: title.into(),
            subtitle,
            sections: Vec::new(),
        }
    }

    fn section(mut self, heading: &str, body: String) -> Page {
        self.sections.push((heading.to_owned(), body));
        self
    }

    /// The page's HTML; `db` names the store in the bar.
    fn render(&self, refresh: bool, db: &str) -> String {
        let mut html = String::with_capacity(16 * 1024);
        html.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        if refresh {
            let _ = write!(
                html,
                "<meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\">"
            );
        }
        let _ = write!(
            html,
            "<title>{} · handoff</title><style>{STYLE}</style></head><body>",
            esc(&self.title)
        );
        html.push_str(
            "<nav><strong>handoff</strong> <a href=\"/\">Queue</a> <a href=\"/tasks\">Tasks</a> \
             <a href=\"/bundles\">Bundles</a> <a href=\"/openapi.json\">API</a>",
        );
        let _ = write!(html, " <span class=\"db\">{}</span></nav><main>", esc(db));
        let _ = write!(html, "<h1>{}</h1>", esc(&self.title));
        if !self.subtitle.is_empty() {
            let _ = write!(html, "<p class=\"sub\">{}</p>", self.subtitle);
        }
        for (heading, body) in &self.sections {
            if heading.is_empty() {
                html.push_str(body);
            } else {
                let _ = write!(html, "<section><h2>{}</h2>{body}</section>", esc(heading));
            }
        }
        html.push_str("</main></body></html>\n");
        html
    }
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2228;background:#fafbfc}\
nav{background:#1d2228;color:#fff;padding:.6em 1.2em}nav a{color:#cfe3ff;margin-left:1em}\
nav .db{float:right;color:#aab4bf}\
main{max-width:1200px;margin:0 auto;padding:0 1.2em 2em}h1{font-size:1.5em}h2{font-size:1.1em;margin-top:1.6em}\
.sub{color:#59636e;margin-top:-.6em}table{border-collapse:collapse;width:100%;background:#fff}\
th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #e3e7eb;vertical-align:top}\
th{background:#f0f2f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.s{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;background:#e8ecef}\
.s-pending,.s-ready{background:#fff3c4}.s-claimed,.s-in_progress,.s-running{background:#d4e7ff}\
.s-completed,.s-done{background:#d3f5dc}.s-failed,.s-escalated,.s-rejected{background:#ffd9d6}\
.s-cancelled,.s-expired,.s-skipped,.s-paused{background:#e6e6e6}.empty{color:#59636e}\
.error{color:#a4161a}.cp{color:#a4161a;font-size:.85em;font-family:monospace}pre{white-space:pre-wrap;background:#fff;border:1px solid #e3e7eb;padding:1em}\
svg text{font:12px system-ui,sans-serif}";

fn badge(status: &str) -> String {
    format!("<span class=\"s s-{}\">{}</span>", esc(status), esc(status))
}

/// A table, or a line saying it is empty.
fn table(header: &[&str], rows: &[Vec<String>], empty: &str) -> String {
    if rows.is_empty() {
        return format!("<p class=\"empty\">{}</p>", esc(empty));
    }
    let mut html = String::from("<table><thead><tr>");
    for h in header {
        let _ = write!(html, "<th>{}</th>", esc(h));
    }
    html.push_str("</tr></thead><tbody>");
    for row in rows {
        html.push_str("<tr>");
        for cell in row {
            if !cell.is_empty() && cell.bytes().all(|b| b.is_ascii_digit()) {
                let _ = write!(html, "<td class=\"n\">{cell}</td>");
            } else {
                let _ = write!(html, "<td>{cell}</td>");
            }
        }
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table>");
    html
}

/// A record's row in a list: already redacted and escaped.
fn handoff_row(out: &Output, h: &Handoff) -> Vec<String> {
    vec![
        handoff_link(&h.id),
        task_link(&h.task_id),
        format!(
            "{} → {}",
            agent(h.from_agent.as_deref().unwrap_or("*")),
            agent(h.to_agent.as_deref().unwrap_or("anyone"))
        ),
        badge(h.status.as_str()),
        esc(&clip(&out.text(&h.goal), 80)),
        esc(&time(h.created_at)),
    ]
}

const HANDOFF_HEADER: &[&str] = &["handoff", "task", "from → to", "status", "goal", "created"];

/// `/`: the queue by status and agent, stalled work, what waits and what is being worked on.
fn queue(store: &Store, out: &Output) -> Result<Page, Error> {
    let counts = store.queue_counts()?;
    let statuses: Vec<Status> = Status::ALL
        .iter()
        .copied()
        .filter(|s| counts.iter().any(|c| c.status == *s))
        .collect();
    let mut agents: Vec<Option<&str>> = counts.iter().map(|c| c.to_agent.as_deref()).collect();
    agents.sort();
    agents.dedup();
    let total: u64 = counts.iter().map(|c| c.count).sum();
    let mut header = vec!["addressed to"];
    header.extend(statuses.iter().map(|s| s.as_str()));
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|agent| {
            let mut row = vec![self::agent(agent.unwrap_or("anyone"))];
            row.extend(statuses.iter().map(|status| {
                counts
                    .iter()
                    .find(|c| c.status == *status && c.to_agent.as_deref() == *agent)
                    .map_or(String::new(), |c| c.count.to_string())
            }));
            row
        })
        .collect();
    let by_status: String = statuses
        .iter()
        .map(|status| {
            let n: u64 = counts
                .iter()
                .filter(|c| c.status == *status)
                .map(|c| c.count)
                .sum();
            format!("{} {n}", badge(status.as_str()))
        })
        .collect::<Vec<_>>()
        .join(" &nbsp; ");

    let now = store.now();
    let claimed = store.list(&ListFilter {
        status: Some(Status::Claimed),
        limit: Some(ROWS),
        ..ListFilter::default()
    })?;
    let stalled_after = chrono::TimeDelta::from_std(STALLED_AFTER).unwrap_or_default();
    let claimed_rows: Vec<Vec<String>> = claimed
        .iter()
        .map(|h| {
            let beat = h.heartbeat_at.unwrap_or(h.created_at);
            let quiet = now.signed_duration_since(beat);
            let mut row = handoff_row(out, h);
            row.insert(3, agent(h.claimed_by.as_deref().unwrap_or_default()));
            let mut last = format!("{}s ago", quiet.num_seconds().max(0));
            if quiet > stalled_after {
                last = format!("<strong class=\"error\">{last} — stalled</strong>");
            }
            row.push(last);
            row
        })
        .collect();
    let stalled: Vec<Vec<String>> = store
        .stalled(STALLED_AFTER)?
        .iter()
        .take(ROWS)
        .map(|task| vec![task_link(task)])
        .collect();
    let pending = store.list(&ListFilter {
        status: Some(Status::Pending),
        limit: Some(ROWS),
        ..ListFilter::default()
    })?;
    let pending_rows: Vec<Vec<String>> = pending.iter().map(|h| handoff_row(out, h)).collect();
    let mut claimed_header = HANDOFF_HEADER.to_vec();
    claimed_header.insert(3, "held by");
    claimed_header.push("last heartbeat");

    Ok(
        Page::new("Queue", format!("{total} handoffs &nbsp; {by_status}"))
            .section(
                "By status and agent",
                table(&header, &rows, "No handoffs yet."),
            )
            .section(
                "Stalled tasks (no sign of life for a minute)",
                table(&["task"], &stalled, "Nothing is stalled."),
            )
            .section(
                "Being worked on",
                table(&claimed_header, &claimed_rows, "Nobody holds a claim."),
            )
            .section(
                "Waiting, next first",
                table(HANDOFF_HEADER, &pending_rows, "Nothing waits."),
            ),
    )
}

/// `/tasks`: plans, newest state first.
fn tasks(store: &Store, out: &Output) -> Result<Page, Error> {
    let tasks = store.list_tasks(None, Some(ROWS * 4), None)?;
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            let t = out.json(serde_json::to_value(t).unwrap_or_default());
            let text = |key: &str| {
                t.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let n = |key: &str| t.get(key).and_then(Value::as_u64).unwrap_or_default();
            let id = text("id");
            vec![
                task_link(&id),
                format!("<a href=\"/tasks/{}\">{}</a>", seg(&id), esc(&text("name"))),
                badge(&text("status")),
                format!("{} / {}", n("steps_done"), n("steps_total")),
                esc(&clip(&text("goal"), 80)),
                esc(&text("updated_at")),
            ]
        })
        .collect();
    Ok(Page::new("Tasks", String::new()).section(
        "Plans",
        table(
            &["task", "name", "status", "steps done", "goal", "updated"],
            &rows,
            "No task has a plan yet: a task is also any task_id handoffs share (see the queue).",
        ),
    ))
}

/// `/tasks/{id}`: the plan, the chain as a graph, the protocol run and the replay timeline.
fn task(store: &Store, out: &Output, id: &str) -> Result<Page, Error> {
    let plan = found(store.get_task(id))?;
    let chain = store.chain(id)?;
    let run = found(store.protocol_run(id))?;
    let replay = found(store.replay(id, false))?;
    if plan.is_none() && chain.hops.is_empty() && replay.is_none() {
        return Err(Error::NotFound {
            what: "task",
            id: id.to_owned(),
        });
    }
    let mut page = Page::new(format!("Task {id}"), String::new());
    if let Some(plan) = &plan {
        let value = out.json(plan.to_value());
        let steps = value["plan"]["steps"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let text = |v: &Value, key: &str| {
            v.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let rows: Vec<Vec<String>> = steps
            .iter()
            .map(|s| {
                let deps: Vec<String> = s["dependencies"]
                    .as_array()
                    .map(|d| d.iter().filter_map(Value::as_str).map(esc).collect())
                    .unwrap_or_default();
                vec![
                    esc(&text(s, "id")),
                    esc(&text(s, "name")),
                    agent(&text(s, "agent")),
                    badge(&text(s, "status")),
                    deps.join(", "),
                    format!(
                        "{}/{}",
                        s["attempts"].as_u64().unwrap_or(0),
                        s["max_attempts"].as_u64().unwrap_or(0)
                    ),
                    match s["handoff_id"].as_str() {
                        Some(h) => handoff_link(h),
                        None => String::new(),
                    },
                    esc(&clip(&text(s, "error"), 60)),
                ]
            })
            .collect();
        page.subtitle = format!(
            "{} &nbsp; {}",
            badge(&text(&value, "status")),
            esc(&text(&value["plan"], "goal"))
        );
        page = page.section(
            "Plan",
            table(
                &[
                    "step", "name", "agent", "status", "after", "attempts", "handoff", "error",
                ],
                &rows,
                "The plan has no steps.",
            ),
        );
    }
    page = page.section("Chain", chain_graph(&chain));
    if let Some(run) = &run {
        let value = out.json(serde_json::to_value(run).unwrap_or_default());
        let n = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or_default();
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let seconds: Vec<String> = value["iteration_seconds"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(Value::as_f64)
                    .map(|s| format!("{s:.1}"))
                    .collect()
            })
            .unwrap_or_default();
        let rows: Vec<Vec<String>> = seconds
            .iter()
            .enumerate()
            .map(|(i, s)| vec![(i + 1).to_string(), format!("{s} s")])
            .collect();
        page = page.section(
            "Manager/worker run",
            format!(
                "<p>{} → {} &nbsp; phase {} &nbsp; iteration {} of {} &nbsp; retries {} of {} &nbsp; escalations {}</p>{}",
                agent(&text("manager")),
                agent(&text("worker")),
                badge(&text("phase")),
                n("iteration"),
                n("max_iterations"),
                n("retry_count"),
                n("max_retries"),
                n("escalations"),
                table(&["iteration", "took"], &rows, "No iteration has finished yet.")
            ),
        );
    }
    if let Some(replay) = &replay {
        let rows: Vec<Vec<String>> = replay
            .timeline
            .iter()
            .rev()
            .take(ROWS * 8)
            .map(|e| {
                vec![
                    esc(&time(e.at)),
                    esc(&e.kind),
                    agent(e.agent.as_deref().unwrap_or_default()),
                    esc(&out.text(&clip(&e.summary, 140))),
                ]
            })
            .collect();
        page = page.section(
            "Timeline, newest first",
            table(
                &["at", "what", "agent", "summary"],
                &rows,
                "Nothing happened yet.",
            ),
        );
    }
    Ok(page)
}

/// `Ok(None)` for what is not there; other errors stay errors.
fn found<T>(result: Result<T, Error>) -> Result<Option<T>, Error> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The chain as a graph: each hop a box (who handed to whom, coloured by its status, linking
/// to its record), in the order they were made, joined by arrows.
fn chain_graph(chain: &handoff_core::Chain) -> String {
    let hops: Vec<&handoff_core::Hop> = chain
        .hops
        .iter()
        .filter(|h| h.kind != handoff_core::Kind::Checkpoint)
        .collect();
    if hops.is_empty() {
        return "<p class=\"empty\">No handoffs in this task.</p>".to_owned();
    }
    const BOX_W: usize = 150;
    const GAP: usize = 36;
    let width = hops.len() * (BOX_W + GAP);
    let mut svg = format!(
        "<svg role=\"img\" aria-label=\"chain of {} handoffs\" width=\"{width}\" height=\"60\" viewBox=\"0 0 {width} 60\">",
        hops.len()
    );
    for (i, hop) in hops.iter().enumerate() {
        let x = i * (BOX_W + GAP);
        let colour = match hop.status {
            Status::Completed => "#2b8a3e",
            Status::Failed | Status::Rejected => "#c92a2a",
            Status::Claimed => "#1c7ed6",
            _ => "#868e96",
        };
        let (from, to) = (
            hop.from_agent.as_deref().unwrap_or("*"),
            hop.to_agent.as_deref().unwrap_or("anyone"),
        );
        // The box has room for a few characters: a name that may not be what it looks like
        // is marked there, and its code points are in the box's title.
        let marked = if unlike_ascii(from) || unlike_ascii(to) {
            "⚠ "
        } else {
            ""
        };
        let pair = format!("{marked}{from} → {to}");
        let title = format!("{} → {}", agent_text(from), agent_text(to));
        let _ = write!(
            svg,
            "<a href=\"/handoffs/{}\"><title>{}</title>\
             <rect x=\"{x}\" y=\"6\" width=\"{BOX_W}\" height=\"46\" rx=\"6\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"25\" text-anchor=\"middle\">{}</text>\
             <text x=\"{}\" y=\"43\" text-anchor=\"middle\" fill=\"{colour}\">{}</text></a>",
            seg(&hop.handoff_id),
            esc(&title),
            x + BOX_W / 2,
            esc(&clip(&pair, 22)),
            x + BOX_W / 2,
            hop.status.as_str()
        );
        if i + 1 < hops.len() {
            let (from, to) = (x + BOX_W, x + BOX_W + GAP);
            let _ = write!(
                svg,
                "<line x1=\"{from}\" y1=\"29\" x2=\"{}\" y2=\"29\" stroke=\"#59636e\"/>\
                 <polygon points=\"{},25 {to},29 {},33\" fill=\"#59636e\"/>",
                to - 6,
                to - 6,
                to - 6
            );
        }
    }
    svg.push_str("</svg>");
    format!("<div style=\"overflow-x:auto\">{svg}</div>")
}

/// `/handoffs/{id}`: the DNA and the record's events.
fn record(store: &Store, out: &Output, id: &str) -> Result<Page, Error> {
    let h = store.get(id)?;
    let events = store.events(Some(id))?;
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let detail = out.json(serde_json::to_value(&e.change).unwrap_or_default());
            vec![
                esc(&time(e.at)),
                agent(e.actor.as_deref().unwrap_or_default()),
                esc(&clip(&detail.to_string(), 160)),
            ]
        })
        .collect();
    let subtitle = format!(
        "{} &nbsp; task {} &nbsp; {} → {}",
        badge(h.status.as_str()),
        task_link(&h.task_id),
        agent(h.from_agent.as_deref().unwrap_or("*")),
        agent(h.to_agent.as_deref().unwrap_or("anyone"))
    );
    Ok(Page::new(format!("Handoff {}", clip(id, 13)), subtitle)
        .section(
            "Handover record",
            format!("<pre>{}</pre>", esc(&out.markdown(&h))),
        )
        .section(
            "Events",
            table(&["at", "by", "change"], &rows, "No events."),
        ))
}

/// `/bundles`: every bundle and, for those others may open, its share link.
fn bundles(store: &Store, out: &Output) -> Result<Page, Error> {
    let bundles = store.list_bundles(None)?;
    let rows: Vec<Vec<String>> = bundles
        .iter()
        .map(|b| {
            let shared = match &b.share_token {
                None => "private".to_owned(),
                Some(token) => {
                    let link = format!("/api/v1/bundles/shared/{}", seg(token));
                    format!("<a href=\"{link}\">{}</a>", esc(&link))
                }
            };
            vec![
                esc(&out.text(&b.name)),
                esc(&clip(&b.id, 13)),
                badge(&format!("{:?}", b.visibility).to_lowercase()),
                b.fact_count.to_string(),
                b.conversation_count.to_string(),
                esc(&out.text(b.source_task_id.as_deref().unwrap_or_default())),
                shared,
            ]
        })
        .collect();
    Ok(Page::new("Bundles", String::new()).section(
        "Knowledge bundles",
        table(
            &[
                "name",
                "id",
                "visibility",
                "facts",
                "conversations",
                "task",
                "share link",
            ],
            &rows,
            "No bundles yet.",
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_pass_for_ascii_show_their_code_points() {
        assert_eq!(agent("gemini"), "gemini");
        assert_eq!(
            agent("gem\u{0456}ni"),
            "gem\u{0456}ni <span class=\"cp\">(U+0456 at 4)</span>"
        );
        assert_eq!(
            agent_text("\u{0441}\u{0435}\u{043e}"),
            "\u{0441}\u{0435}\u{043e} (U+0441 at 1, U+0435 at 2, U+043E at 3)"
        );
        assert_eq!(
            code_points("\u{ff47}\u{ff45}\u{ff4d}").as_deref(),
            Some("U+FF47 at 1, U+FF45 at 2, U+FF4D at 3")
        );
        assert_eq!(code_points("claude\u{a0}2").as_deref(), Some("U+00A0 at 7"));
        assert_eq!(code_points("\u{03bf}pus").as_deref(), Some("U+03BF at 1"));
        // Other scripts as they are.
        for name in [
            "\u{0410}\u{043d}\u{043d}\u{0430}",
            "日本語エージェント",
            "*",
        ] {
            assert_eq!(code_points(name), None, "{name}");
        }
        let long = "a".to_owned() + &"\u{0430}".repeat(10);
        assert!(code_points(&long).is_some_and(|c| c.ends_with("U+0430 at 9 and 2 more")));
        // Escaped like every text.
        assert_eq!(
            agent("<\u{0430}>"),
            "&lt;\u{0430}&gt; <span class=\"cp\">(U+0430 at 2)</span>"
        );
    }
}

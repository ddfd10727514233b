//! The pieces every page is made of: escaping, links, the page itself, tables, badges, and
//! how a moment is told relative to now.

use std::fmt::Write;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::REFRESH_SECONDS;
use crate::output::clip;

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

/// A path segment as it goes into a link.
pub(super) fn seg(text: &str) -> String {
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

pub(super) fn task_link(task_id: &str) -> String {
    format!("<a href=\"/tasks/{}\">{}</a>", seg(task_id), esc(task_id))
}

pub(super) fn handoff_link(id: &str) -> String {
    format!(
        "<a href=\"/handoffs/{}\" title=\"{}\">{}</a>",
        seg(id),
        esc(id),
        esc(&short_id(id))
    )
}

/// A long id as a link's text: its first 8 and last 6 characters (`01a2535b…baed09`). Ids made
/// in the same millisecond share their first 13 characters (UUIDv7's time), so a prefix alone
/// would show several records under one name.
pub(super) fn short_id(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= 16 {
        return id.to_owned();
    }
    let head: String = chars[..8].iter().collect();
    let tail: String = chars[chars.len() - 6..].iter().collect();
    format!("{head}…{tail}")
}

/// A span of seconds as a person reads it: `41 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h`.
pub(super) fn span(seconds: i64) -> String {
    let s = seconds.abs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// How long ago `at` was, from `now` (`12 s ago`; `in 3 s` for a moment still ahead, as a
/// clock a little apart from the server's may give).
pub(super) fn ago(now: DateTime<Utc>, at: DateTime<Utc>) -> String {
    let seconds = now.signed_duration_since(at).num_seconds();
    if seconds < 0 {
        format!("in {}", span(seconds))
    } else {
        format!("{} ago", span(seconds))
    }
}

/// `at` as a `<time>`, its exact moment in the title and how long ago it was as its text.
pub(super) fn when(now: DateTime<Utc>, at: DateTime<Utc>) -> String {
    format!(
        "<time datetime=\"{}\" title=\"{}\">{}</time>",
        esc(&at.to_rfc3339()),
        esc(&crate::output::time(at)),
        esc(&ago(now, at))
    )
}

/// A small JSON value (a heartbeat's progress, a report's fields) as compact text, escaped
/// and clipped: the record's page shows it whole.
pub(super) fn json_cell(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    format!("<code>{}</code>", esc(&clip(&text, max)))
}

/// A page: its title, a line under it, a message about what was just done, and its sections.
pub(super) struct Page {
    pub title: String,
    pub subtitle: String,
    /// Already HTML (a [`super::forms`] flash or an error of an action).
    pub flash: String,
    pub sections: Vec<(String, String)>,
}

impl Page {
    pub(super) fn new(title: impl Into<String>, subtitle: String) -> Page {
        Page {
            title: title.into(),
            subtitle,
            flash: String::new(),
            sections: Vec::new(),
        }
    }

    pub(super) fn section(mut self, heading: &str, body: String) -> Page {
        self.sections.push((heading.to_owned(), body));
        self
    }

    /// The page's HTML; `db` names the store in the bar, `acting` who actions are taken as.
    pub(super) fn render(&self, refresh: bool, db: &str, acting: Option<&str>) -> String {
        let mut html = String::with_capacity(16 * 1024);
        html.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        // A page that reloads itself under a half-typed form would lose it; a page showing
        // what was just done is the one place where the operator is reading, so neither does.
        if refresh && self.flash.is_empty() {
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
        // Without JavaScript nothing can hold the reload while a form is filled in: a link
        // to the same page that does not reload.
        if refresh && self.flash.is_empty() {
            html.push_str(" <a href=\"?refresh=0\">pause reloading</a>");
        }
        let _ = write!(html, " <span class=\"db\">{}", esc(db));
        if let Some(acting) = acting {
            let _ = write!(html, " · acting as {}", super::names::agent(acting));
        }
        html.push_str("</span></nav><main>");
        let _ = write!(html, "<h1>{}</h1>", esc(&self.title));
        if !self.subtitle.is_empty() {
            let _ = write!(html, "<p class=\"sub\">{}</p>", self.subtitle);
        }
        html.push_str(&self.flash);
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
main{max-width:1280px;margin:0 auto;padding:0 1.2em 2em}h1{font-size:1.5em}h2{font-size:1.1em;margin-top:1.6em}\
.sub{color:#59636e;margin-top:-.6em}table{border-collapse:collapse;width:100%;background:#fff}\
th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #e3e7eb;vertical-align:top}\
th{background:#f0f2f4;font-weight:600}th.n,td.n{text-align:right;font-variant-numeric:tabular-nums}\
.s{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;background:#e8ecef}\
.s-pending,.s-ready{background:#fff3c4}.s-claimed,.s-in_progress,.s-running{background:#d4e7ff}\
.s-completed,.s-done{background:#d3f5dc}.s-failed,.s-escalated,.s-rejected,.s-lapsed{background:#ffd9d6}\
.s-cancelled,.s-expired,.s-skipped,.s-paused{background:#e6e6e6}.empty{color:#59636e}\
.error{color:#a4161a}.cp{color:#a4161a;font-size:.85em;font-family:monospace}pre{white-space:pre-wrap;background:#fff;border:1px solid #e3e7eb;padding:1em}\
.flash{padding:.6em 1em;border-radius:.4em;background:#d3f5dc;border:1px solid #8ce99a}\
.flash.error{background:#ffe3e3;border-color:#ffa8a8}\
form.act{display:inline-flex;gap:.3em;margin:0 .3em .2em 0;align-items:center}\
form.act input[type=text]{width:10em}form.act input[type=number]{width:4.5em}\
form.wide{display:block;margin:.5em 0}form.wide textarea{width:100%;min-height:6em}\
dl.kv{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.kv dt{color:#59636e}dl.kv dd{margin:0}\
svg text{font:12px system-ui,sans-serif}";

pub(super) fn badge(status: &str) -> String {
    format!("<span class=\"s s-{}\">{}</span>", esc(status), esc(status))
}

/// Whether a cell holds a number alone (a count, `3/5` attempts, a priority): such a column
/// is aligned right, its header with it.
fn numeric(cell: &str) -> bool {
    let cell = cell.strip_prefix('-').unwrap_or(cell);
    !cell.is_empty()
        && cell.bytes().any(|b| b.is_ascii_digit())
        && cell.bytes().all(|b| b.is_ascii_digit() || b == b'/')
}

/// A table, or a line saying it is empty. A column whose cells are all numbers (or empty) is
/// aligned right, header and cells alike, so that each number sits under its header.
pub(super) fn table(header: &[&str], rows: &[Vec<String>], empty: &str) -> String {
    if rows.is_empty() {
        return format!("<p class=\"empty\">{}</p>", esc(empty));
    }
    let numbers: Vec<bool> = (0..header.len())
        .map(|i| {
            let cells = || {
                rows.iter()
                    .filter_map(|r| r.get(i))
                    .filter(|c| !c.is_empty())
            };
            cells().next().is_some() && cells().all(|c| numeric(c))
        })
        .collect();
    let class = |i: usize| {
        if numbers.get(i).copied().unwrap_or(false) {
            " class=\"n\""
        } else {
            ""
        }
    };
    let mut html = String::from("<table><thead><tr>");
    for (i, h) in header.iter().enumerate() {
        let _ = write!(html, "<th{}>{}</th>", class(i), esc(h));
    }
    html.push_str("</tr></thead><tbody>");
    for row in rows {
        html.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(html, "<td{}>{cell}</td>", class(i));
        }
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_of_numbers_is_aligned_right_with_its_header() {
        let rows = vec![
            vec!["claude".to_owned(), "3".to_owned(), "1/3".to_owned()],
            vec!["gemini".to_owned(), String::new(), "0/3".to_owned()],
        ];
        let html = table(&["agent", "pending", "attempts"], &rows, "none");
        assert!(
            html.contains(
                "<th>agent</th><th class=\"n\">pending</th><th class=\"n\">attempts</th>"
            )
        );
        assert!(html.contains("<td>claude</td><td class=\"n\">3</td><td class=\"n\">1/3</td>"));
        assert!(html.contains("<td>gemini</td><td class=\"n\"></td>"));
    }

    #[test]
    fn ids_made_together_keep_apart_on_the_page() {
        assert_eq!(
            short_id("01a2535b-886f-74bb-9ca2-fd6baed09727"),
            "01a2535b…d09727"
        );
        assert_eq!(short_id("run-1"), "run-1");
        assert!(handoff_link("a b").contains("href=\"/handoffs/a%20b\""));
    }

    #[test]
    fn spans_read_as_a_person_says_them() {
        assert_eq!(span(9), "9 s");
        assert_eq!(span(-41), "41 s");
        assert_eq!(span(185), "3 min 5 s");
        assert_eq!(span(7_800), "2 h 10 min");
        assert_eq!(span(3 * 86_400 + 4 * 3600), "3 d 4 h");
    }
}

//! What commands and MCP tools print: human text (tables, the DNA) and JSON.
//!
//! This is the one place where records are redacted on their way out: every function that
//! shows a record's text is a method of [`Output`], which redacts (the default) or not
//! (`--no-redact`). Commands and tools never serialise a record themselves.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;

use chrono::{DateTime, SecondsFormat, Utc};
use handoff_core::store::{ContextOptions, Task};
use handoff_core::{Chain, Change, Claim, Event, Handoff, Store};
use serde_json::{Value, json};

use crate::error::{CliError, CliResult};

/// The successor's packet for handoff `id` as Markdown, at the core's default budget: what a
/// spawned successor and an MCP client taking or reading a handoff are given. Redacted by the
/// core whatever the output's setting.
pub(crate) fn packet(store: &Store, id: &str) -> handoff_core::Result<String> {
    Ok(store
        .context_for(id, ContextOptions::default())?
        .to_markdown())
}

/// A result in both forms: readable text, and JSON for scripts and MCP `structuredContent`.
#[derive(Debug)]
pub(crate) struct Reply {
    pub text: String,
    pub json: Value,
    /// The successor's packet as Markdown, which an MCP answer carries as a second text.
    pub context: Option<String>,
}

impl Reply {
    pub(crate) fn new(text: impl Into<String>, json: Value) -> Reply {
        Reply {
            text: text.into(),
            json,
            context: None,
        }
    }

    /// The reply with the successor's packet beside it.
    pub(crate) fn with_context(mut self, context: Option<String>) -> Reply {
        self.context = context;
        self
    }
}

/// Writes `text` to stdout. A reader that stops early (`handoff list | head -1`) is not an
/// error.
pub(crate) fn write_stdout(text: &str) -> CliResult<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::output("cannot write to standard output", e))
        }
        _ => Ok(()),
    }
}

/// Standard output for a command that streams (`events`, `export`): buffered, and quiet when
/// the reader stops early (`handoff events | head`), after which writes are dropped.
pub(crate) struct Sink {
    out: std::io::BufWriter<std::io::Stdout>,
    closed: bool,
}

impl Sink {
    pub(crate) fn stdout() -> Sink {
        Sink {
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            closed: false,
        }
    }

    /// Whether the reader has gone: the caller may stop producing.
    pub(crate) fn closed(&self) -> bool {
        self.closed
    }

    pub(crate) fn write(&mut self, text: &str) -> CliResult<()> {
        if self.closed {
            return Ok(());
        }
        let written = self.out.write_all(text.as_bytes());
        self.check(written)
    }

    pub(crate) fn finish(mut self) -> CliResult<()> {
        if self.closed {
            return Ok(());
        }
        let flushed = self.out.flush();
        self.check(flushed)
    }

    fn check(&mut self, result: std::io::Result<()>) -> CliResult<()> {
        match result {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(CliError::output("cannot write to standard output", e)),
            Ok(()) => Ok(()),
        }
    }
}

/// A table printed a page at a time: the header once, columns as wide as the widest cell seen
/// so far.
pub(crate) struct Table {
    header: Vec<String>,
    widths: Option<Vec<usize>>,
}

impl Table {
    pub(crate) fn new(header: Vec<String>) -> Table {
        Table {
            header,
            widths: None,
        }
    }

    /// The rows (after the header, for the first page).
    pub(crate) fn rows(&mut self, rows: &[Vec<String>]) -> String {
        let first = self.widths.is_none();
        let mut widths = self
            .widths
            .take()
            .unwrap_or_else(|| self.header.iter().map(|h| h.chars().count()).collect());
        grow(&mut widths, rows);
        let text = if first {
            render(&widths, std::iter::once(&self.header).chain(rows))
        } else {
            render(&widths, rows.iter())
        };
        self.widths = Some(widths);
        text
    }
}

/// Serialises core values, which are plain data: this cannot fail. Not for records: those go
/// through [`Output`].
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// An enumeration's value as its JSON word (`in_progress`).
fn word<T: serde::Serialize>(value: &T) -> String {
    to_json(value).as_str().unwrap_or_default().to_owned()
}

pub(crate) fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn agent(name: Option<&str>) -> &str {
    name.unwrap_or("*")
}

/// At most `max` characters of `text` on one line, with an ellipsis when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && line.len() == text.trim_end().len() {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Left-aligned columns separated by two spaces, under `header`; the last column is not
/// padded.
pub(crate) fn table<S: AsRef<str>>(header: &[S], rows: &[Vec<String>]) -> String {
    Table::new(header.iter().map(|h| h.as_ref().to_owned()).collect()).rows(rows)
}

/// Left-aligned columns without a header.
pub(crate) fn columns(rows: &[Vec<String>]) -> String {
    let mut widths = vec![0; rows.iter().map(Vec::len).max().unwrap_or(0)];
    grow(&mut widths, rows);
    render(&widths, rows.iter())
}

/// The columns of [`Output::handoff_row`].
pub(crate) const HANDOFF_HEADER: &[&str] = &[
    "ID",
    "TASK",
    "STATUS",
    "FROM → TO",
    "HOLDER",
    "CREATED",
    "GOAL",
];

/// The columns of [`Output::event_row`].
pub(crate) const EVENT_HEADER: &[&str] = &["SEQ", "AT", "HANDOFF", "EVENT", "ACTOR", "DETAIL"];

/// Widens `widths` to fit `rows`.
fn grow(widths: &mut [usize], rows: &[Vec<String>]) {
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
}

fn render<'a>(widths: &[usize], rows: impl Iterator<Item = &'a Vec<String>>) -> String {
    let mut out = String::new();
    for row in rows {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count() + 2;
                let _ = write!(out, "{cell}{:pad$}", "");
            }
        }
        out.push('\n');
    }
    out
}

/// How records leave the process: with their secrets replaced by `[REDACTED:<rule>]` (the
/// default, docs/design.md §2), or as written (`--no-redact`, the owner's opt-out).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Output {
    redact: bool,
}

impl Output {
    pub(crate) fn new(redact: bool) -> Output {
        Output { redact }
    }

    /// Whether secrets are replaced: also in what a judge command reads (`judge.rs`).
    pub(crate) fn redacts(&self) -> bool {
        self.redact
    }

    /// The record as it may be shown.
    fn handoff<'a>(&self, h: &'a Handoff) -> Cow<'a, Handoff> {
        if self.redact {
            Cow::Owned(h.redacted())
        } else {
            Cow::Borrowed(h)
        }
    }

    /// Free text that did not come from a record (a successor's output, an event's reason).
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.redact {
            return Cow::Borrowed(text);
        }
        let (redacted, found) = handoff_core::redact(text);
        if found.is_empty() {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(redacted)
        }
    }

    /// A JSON value with every string in it redacted (error objects, which may quote input).
    pub(crate) fn json(&self, value: Value) -> Value {
        if !self.redact {
            return value;
        }
        match value {
            Value::String(text) => match self.text(&text) {
                Cow::Borrowed(_) => Value::String(text),
                Cow::Owned(redacted) => Value::String(redacted),
            },
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.json(v)).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, self.json(v))).collect())
            }
            other => other,
        }
    }

    /// The Markdown DNA.
    pub(crate) fn markdown(&self, h: &Handoff) -> String {
        if self.redact {
            h.to_markdown()
        } else {
            h.to_markdown_unredacted()
        }
    }

    /// What a spawned successor reads: the store's packet for the handoff ([`packet`]: its
    /// task's plan and the outputs it depends on, the agents before, the predecessor's
    /// findings, the relevant knowledge, the branch to continue on), then the caller's
    /// additional instructions under their own heading. The packet is always redacted;
    /// `--no-redact` leaves only the additional instructions as written. Should the packet
    /// not be read (the store failing after the claim), the record's DNA stands in for it, so
    /// that the claim is not lost for want of it.
    pub(crate) fn prompt(&self, store: &Store, h: &Handoff, additional: Option<&str>) -> String {
        let mut prompt = match packet(store, &h.id) {
            Ok(markdown) => markdown,
            Err(_) => self.markdown(h),
        };
        if let Some(more) = additional.map(str::trim).filter(|t| !t.is_empty()) {
            if !prompt.ends_with('\n') {
                prompt.push('\n');
            }
            let _ = writeln!(
                prompt,
                "\n## Additional Instructions\n\n{}",
                self.text(more)
            );
        }
        prompt
    }

    /// One record as JSON (its canonical serde form).
    pub(crate) fn record(&self, h: &Handoff) -> Value {
        to_json(&*self.handoff(h))
    }

    /// One row of a table of records. Redacted before clipping, so that no prefix of a
    /// secret is shown either.
    pub(crate) fn handoff_row(&self, h: &Handoff) -> Vec<String> {
        let h = self.handoff(h);
        vec![
            h.id.clone(),
            h.task_id.clone(),
            h.status.to_string(),
            format!(
                "{} → {}",
                agent(h.from_agent.as_deref()),
                agent(h.to_agent.as_deref())
            ),
            h.claimed_by.clone().unwrap_or_default(),
            time(h.created_at),
            clip(&h.goal, 48),
        ]
    }

    /// One line about a record after a change: `<id> (<task>) is <status> ...`.
    pub(crate) fn record_line(&self, h: &Handoff) -> String {
        let h = self.handoff(h);
        let mut line = format!("{} ({}) is {}", h.id, h.task_id, h.status);
        if let Some(holder) = &h.claimed_by
            && h.status == handoff_core::Status::Claimed
        {
            let _ = write!(line, " by {holder}");
        }
        if let Some(until) = h.lease_until
            && h.status == handoff_core::Status::Claimed
        {
            let _ = write!(line, ", lease until {}", time(until));
        }
        if let Some(outcome) = h.outcome.as_deref().filter(|o| !o.is_empty()) {
            let _ = write!(line, ": {}", clip(outcome, 80));
        }
        line.push('\n');
        line
    }

    /// A claim as JSON: the token, the claim secret, the lease, the record and its Markdown
    /// DNA. Only the claimer ever gets this: the secret is theirs, so it is not redacted, and
    /// nothing else prints it.
    pub(crate) fn claim_json(&self, claim: &Claim) -> Value {
        json!({
            "handoff_id": claim.handoff.id,
            "token": claim.token,
            "claim_secret": claim.secret.expose(),
            "lease_seconds": claim.lease.as_secs(),
            "lease_until": claim.handoff.lease_until,
            "handoff": self.record(&claim.handoff),
            "markdown": self.markdown(&claim.handoff),
        })
    }

    /// A claim as text: how to continue, then the DNA.
    pub(crate) fn claim_text(&self, claim: &Claim) -> String {
        let h = &claim.handoff;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "claimed {} as {} with token {} (lease until {})",
            h.id,
            agent(h.claimed_by.as_deref()),
            claim.token,
            h.lease_until.map(time).unwrap_or_default()
        );
        let _ = writeln!(out, "claim secret: {}", claim.secret.expose());
        let _ = writeln!(
            out,
            "heartbeat, release or complete with --token {} and the secret (--secret, or \
             HANDOFF_CLAIM_SECRET); it is shown only here\n",
            claim.token
        );
        out.push_str(&self.markdown(h));
        out
    }

    /// An event as it may be shown: the addressee and every reason or outcome redacted, as
    /// they are in a record.
    fn event(&self, e: &Event) -> Event {
        let mut e = e.clone();
        if !self.redact {
            return e;
        }
        // Every text the change carries (an outcome, a reason, an error, whatever a newer
        // change adds), through the same redaction as the rest of the output.
        if let Ok(change) = serde_json::from_value(self.json(to_json(&e.change))) {
            e.change = change;
        }
        e
    }

    /// One row of the events table.
    pub(crate) fn event_row(&self, e: &Event) -> Vec<String> {
        let e = self.event(e);
        let detail = match (&e.change, to_json(&e.change).get("detail")) {
            // Where the work goes: `*` for an open handoff, as in the tables of records.
            (
                Change::Created {
                    task_id, to_agent, ..
                },
                _,
            ) => format!(
                "task_id={} to_agent={}",
                clip(task_id, 40),
                clip(agent(to_agent.as_deref()), 40)
            ),
            (_, Some(Value::Object(d))) => d
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={}", clip(s, 40)),
                    other => format!("{k}={other}"),
                })
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        vec![
            e.seq.to_string(),
            time(e.at),
            e.handoff_id.clone(),
            e.change.kind().to_owned(),
            e.actor.clone().unwrap_or_else(|| "-".to_owned()),
            detail,
        ]
    }
}

/// A chain as JSON: its hops and the path of agents.
pub(crate) fn chain_json(chain: &Chain) -> Value {
    json!({
        "task_id": chain.task_id,
        "path": chain.path(),
        "hops": chain.hops,
    })
}

/// A chain as text: the path, then one line per hop.
pub(crate) fn chain_text(chain: &Chain) -> String {
    if chain.hops.is_empty() {
        return format!("task {} has no hops\n", chain.task_id);
    }
    let mut out = format!("{}: {}\n\n", chain.task_id, chain);
    let rows: Vec<Vec<String>> = chain
        .hops
        .iter()
        .map(|hop| {
            vec![
                hop.handoff_id.clone(),
                format!(
                    "{} → {}",
                    agent(hop.from_agent.as_deref()),
                    agent(hop.to_agent.as_deref())
                ),
                hop.kind.to_string(),
                hop.status.to_string(),
                time(hop.created_at),
            ]
        })
        .collect();
    out.push_str(&table(
        &["HANDOFF", "FROM → TO", "KIND", "STATUS", "CREATED"],
        &rows,
    ));
    out
}

/// A task as text: a line on where it stands; read, its goal and a line per step too.
pub(crate) fn task_text(out: &Output, task: &Task, reads: bool) -> String {
    let h = &task.header;
    let mut text = format!(
        "task {}  {}  v{}  {}/{} steps done  \"{}\"\n",
        h.id,
        word(&h.status),
        h.version,
        h.steps_done,
        h.steps_total,
        clip(&out.text(&h.name), 60),
    );
    if !reads {
        return text;
    }
    let _ = writeln!(text, "goal: {}", out.text(&h.goal));
    let rows: Vec<Vec<String>> = task
        .steps
        .iter()
        .map(|s| {
            let said = s.output.as_deref().or(s.error.as_deref()).unwrap_or("");
            vec![
                s.spec.id.clone(),
                s.spec.addressee().to_owned(),
                word(&s.status),
                s.attempts.to_string(),
                s.spec.dependencies.join(","),
                clip(&out.text(said), 50),
            ]
        })
        .collect();
    if !rows.is_empty() {
        let header = [
            "STEP",
            "AGENT",
            "STATUS",
            "FAILED",
            "AFTER",
            "OUTPUT / ERROR",
        ];
        text.push_str(&table(&header, &rows));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_cuts_long_and_multiline_text() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("abcdefghijkl", 5), "abcd…");
        assert_eq!(clip("first\nsecond", 20), "first…");
        assert_eq!(clip("ééééé", 3), "éé…");
    }

    #[test]
    fn table_aligns_columns() {
        let out = table(
            &["A", "BB"],
            &[vec!["xxx".into(), "y".into()], vec!["z".into(), "w".into()]],
        );
        assert_eq!(out, "A    BB\nxxx  y\nz    w\n");
    }
}

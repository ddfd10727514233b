//! How an operation's result is shown by the CLI (text, or `--json`) and by the MCP server
//! (text and `structuredContent`): one implementation per type an operation returns (the
//! catalog's `returns`), shared by every operation that returns it. Everything goes through
//! [`Output`], which redacts.

use handoff_core::{
    Capabilities, Chain, CheckReport, Claim, Event, Handoff, PathStats, QueueCount,
};
use serde_json::{Value, json};

use crate::output::{Output, chain_json, chain_text, table, to_json};

/// A result, as each face shows it.
pub(crate) trait Shown {
    /// The readable text. `reads`: the operation only reads, so a record is shown whole (its
    /// Markdown DNA); after a change, one line says where it stands.
    fn text(&self, out: &Output, reads: bool) -> String;
    /// What `--json` prints.
    fn json(&self, out: &Output) -> Value;
    /// The MCP `structuredContent`: always an object.
    fn structured(&self, out: &Output, reads: bool) -> Value;
    /// For a list: its table (for a face that prints it a page at a time).
    fn table(&self, _out: &Output) -> Option<Rows> {
        None
    }
    /// For a list: how many items it holds, and the cursor after the last (what `after`
    /// takes to continue) when its items have one.
    fn extent(&self) -> Option<(usize, Option<Value>)> {
        None
    }
    /// The claim a successor may be started on.
    fn claim(&self) -> Option<&Claim> {
        None
    }
    /// The exit code it calls for.
    fn exit(&self) -> u8 {
        crate::error::code::OK
    }
}

/// A list as a table.
pub(crate) struct Rows {
    pub header: &'static [&'static str],
    /// What the text says instead when the list is empty.
    pub none: &'static str,
    pub rows: Vec<Vec<String>>,
}

/// An item of a list result: a table row, a JSON item and a cursor.
pub(crate) trait Row {
    /// The list's key in `structuredContent`.
    const KEY: &'static str;
    const HEADER: &'static [&'static str];
    /// The text of an empty list.
    const NONE: &'static str;
    fn row(&self, out: &Output) -> Vec<String>;
    fn item(&self, out: &Output) -> Value;
    /// What `after` takes to continue after this item, for lists read in pages.
    fn cursor(&self) -> Option<Value> {
        None
    }
}

impl<T: Row> Shown for Vec<T> {
    fn text(&self, out: &Output, _reads: bool) -> String {
        if self.is_empty() {
            return T::NONE.to_owned();
        }
        let rows: Vec<Vec<String>> = self.iter().map(|item| item.row(out)).collect();
        table(T::HEADER, &rows)
    }

    fn json(&self, out: &Output) -> Value {
        Value::Array(self.iter().map(|item| item.item(out)).collect())
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "count": self.len(), T::KEY: self.json(out) })
    }

    fn table(&self, out: &Output) -> Option<Rows> {
        Some(Rows {
            header: T::HEADER,
            none: T::NONE,
            rows: self.iter().map(|item| item.row(out)).collect(),
        })
    }

    fn extent(&self) -> Option<(usize, Option<Value>)> {
        Some((self.len(), self.last().and_then(Row::cursor)))
    }
}

impl Row for Handoff {
    const KEY: &'static str = "handoffs";
    const HEADER: &'static [&'static str] = &[
        "ID",
        "TASK",
        "STATUS",
        "FROM → TO",
        "HOLDER",
        "CREATED",
        "GOAL",
    ];
    const NONE: &'static str = "no handoffs\n";

    fn row(&self, out: &Output) -> Vec<String> {
        out.handoff_row(self)
    }

    fn item(&self, out: &Output) -> Value {
        out.record(self)
    }

    fn cursor(&self) -> Option<Value> {
        Some(json!(self.id))
    }
}

impl Row for Event {
    const KEY: &'static str = "events";
    const HEADER: &'static [&'static str] = &["SEQ", "AT", "HANDOFF", "EVENT", "ACTOR", "DETAIL"];
    const NONE: &'static str = "no events\n";

    fn row(&self, out: &Output) -> Vec<String> {
        out.event_row(self)
    }

    fn item(&self, out: &Output) -> Value {
        out.event_json(self)
    }

    fn cursor(&self) -> Option<Value> {
        Some(json!(self.seq))
    }
}

impl Row for PathStats {
    const KEY: &'static str = "paths";
    const HEADER: &'static [&'static str] = &[
        "FROM → TO",
        "TOTAL",
        "COMPLETED",
        "FAILED",
        "REJECTED",
        "MEDIAN TO CLAIM",
        "MEDIAN TO COMPLETE",
    ];
    const NONE: &'static str = "no handoffs\n";

    fn row(&self, _out: &Output) -> Vec<String> {
        let secs = |s: Option<f64>| s.map_or_else(|| "-".to_owned(), |s| format!("{s:.1}s"));
        vec![
            format!("{} → {}", self.from_agent, self.to_agent),
            self.total.to_string(),
            self.completed.to_string(),
            self.failed.to_string(),
            self.rejected.to_string(),
            secs(self.median_claim_seconds),
            secs(self.median_complete_seconds),
        ]
    }

    fn item(&self, _out: &Output) -> Value {
        to_json(self)
    }
}

impl Row for QueueCount {
    const KEY: &'static str = "queue";
    const HEADER: &'static [&'static str] = &["STATUS", "TO", "COUNT"];
    const NONE: &'static str = "no handoffs\n";

    fn row(&self, _out: &Output) -> Vec<String> {
        vec![
            self.status.as_str().to_owned(),
            self.to_agent.clone().unwrap_or_else(|| "*".to_owned()),
            self.count.to_string(),
        ]
    }

    fn item(&self, _out: &Output) -> Value {
        to_json(self)
    }
}

/// The one list of strings an operation returns is `stalled`'s task ids; another kind of
/// string list would need a type of its own to be named differently.
impl Row for String {
    const KEY: &'static str = "task_ids";
    const HEADER: &'static [&'static str] = &["TASK"];
    const NONE: &'static str = "no tasks\n";

    fn row(&self, _out: &Output) -> Vec<String> {
        vec![self.clone()]
    }

    fn item(&self, _out: &Output) -> Value {
        json!(self)
    }
}

impl Shown for Handoff {
    fn text(&self, out: &Output, reads: bool) -> String {
        if reads {
            out.markdown(self)
        } else {
            out.record_line(self)
        }
    }

    fn json(&self, out: &Output) -> Value {
        out.record(self)
    }

    fn structured(&self, out: &Output, reads: bool) -> Value {
        let mut structured = json!({ "handoff": out.record(self) });
        if reads {
            structured["markdown"] = json!(out.markdown(self));
        }
        structured
    }
}

impl Shown for Claim {
    fn text(&self, out: &Output, _reads: bool) -> String {
        out.claim_text(self)
    }

    fn json(&self, out: &Output) -> Value {
        out.claim_json(self)
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        let mut structured = out.claim_json(self);
        structured["claimed"] = json!(true);
        structured
    }

    fn claim(&self) -> Option<&Claim> {
        Some(self)
    }
}

impl Shown for Option<Claim> {
    fn text(&self, out: &Output, reads: bool) -> String {
        match self {
            Some(claim) => claim.text(out, reads),
            None => "nothing to claim\n".to_owned(),
        }
    }

    fn json(&self, out: &Output) -> Value {
        self.as_ref().map_or(Value::Null, |claim| claim.json(out))
    }

    fn structured(&self, out: &Output, reads: bool) -> Value {
        match self {
            Some(claim) => claim.structured(out, reads),
            None => json!({ "claimed": false }),
        }
    }

    fn claim(&self) -> Option<&Claim> {
        self.as_ref()
    }
}

impl Shown for Chain {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        chain_text(self)
    }

    fn json(&self, _out: &Output) -> Value {
        chain_json(self)
    }

    fn structured(&self, _out: &Output, _reads: bool) -> Value {
        chain_json(self)
    }
}

/// Done, with nothing to say (`delete_bundle`).
impl Shown for () {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        "done\n".to_owned()
    }

    fn json(&self, _out: &Output) -> Value {
        json!({ "done": true })
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        self.json(out)
    }
}

/// A count (`reap`: how many records changed).
impl Shown for usize {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        format!("{self}\n")
    }

    fn json(&self, _out: &Output) -> Value {
        json!(self)
    }

    fn structured(&self, _out: &Output, _reads: bool) -> Value {
        json!({ "count": self })
    }
}

/// What `check` found: a line per damage (what, the problem, what the repair did); exit code
/// `DAMAGED` while any is left unrepaired.
impl Shown for CheckReport {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        if self.is_clean() {
            return "no damage found\n".to_owned();
        }
        let rows: Vec<Vec<String>> = self
            .damage
            .iter()
            .map(|d| {
                let repaired = d.repaired.as_deref().unwrap_or("not repaired");
                vec![d.what.clone(), d.problem.clone(), repaired.to_owned()]
            })
            .collect();
        table(&["WHAT", "PROBLEM", "REPAIR"], &rows)
    }

    fn json(&self, _out: &Output) -> Value {
        to_json(self)
    }

    fn structured(&self, _out: &Output, _reads: bool) -> Value {
        to_json(self)
    }

    fn exit(&self) -> u8 {
        match self.damage.iter().any(|d| d.repaired.is_none()) {
            true => crate::error::code::DAMAGED,
            false => crate::error::code::OK,
        }
    }
}

/// What the store can do (`capabilities`): one line per capability, yes or no, and what it
/// means for the one using the store.
impl Shown for Capabilities {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        let lines = [
            (
                "durable",
                self.durable,
                "the store outlives the process that opened it",
            ),
            (
                "shared_by_processes",
                self.shared_by_processes,
                "several processes on one machine may share it",
            ),
            (
                "shared_by_machines",
                self.shared_by_machines,
                "processes on several machines may share it",
            ),
            (
                "backup",
                self.backup,
                "`handoff backup PATH` copies it while it stays in use",
            ),
            (
                "wakes_waiters",
                self.wakes_waiters,
                "a waiting claim-next is woken when work arrives (else it looks every 50 ms)",
            ),
        ];
        lines
            .iter()
            .map(|(name, has, meaning)| {
                format!(
                    "{name:<20} {:<3}  {meaning}\n",
                    if *has { "yes" } else { "no" }
                )
            })
            .collect()
    }

    fn json(&self, _out: &Output) -> Value {
        to_json(self)
    }

    fn structured(&self, _out: &Output, _reads: bool) -> Value {
        to_json(self)
    }
}

//! How an operation's result is shown by the CLI (text, or `--json`), the MCP server (text and
//! `structuredContent`) and `handoff serve` (the body): from the result's serde JSON, read
//! through the catalog's schema of it (a list, an optional, a named record), so that a new
//! result type, or a new field, needs nothing here. Custom text is kept only where a person
//! needs one: a record's line or its Markdown DNA, the table of handoffs and of events, a
//! claim's "how to continue", a chain's path and a task's steps. Everything leaves through
//! [`Output`], which redacts.

use std::any::Any;

use handoff_core::ops::Access;
use handoff_core::store::{CheckReport, Task};
use handoff_core::{Chain, Claim, Event, Handoff};
use serde_json::{Map, Value, json};

use crate::operations::Op;
use crate::output::{Output, chain_json, chain_text, clip, columns, table, to_json};

/// An operation's result: its serde JSON (as written: redaction comes on the way out), and the
/// value itself, for the few types shown their own way.
pub(crate) struct Outcome {
    json: Value,
    typed: Box<dyn Any>,
}

impl Outcome {
    pub(crate) fn new<T: serde::Serialize + 'static>(value: T) -> Outcome {
        Outcome {
            json: to_json(&value),
            typed: Box::new(value),
        }
    }

    /// The value, if it is a `T` or an `Option<T>` holding one.
    fn get<T: 'static>(&self) -> Option<&T> {
        self.typed
            .downcast_ref::<T>()
            .or_else(|| self.typed.downcast_ref::<Option<T>>()?.as_ref())
    }

    /// The claim made, on which a successor may be started.
    pub(crate) fn claim(&self) -> Option<&Claim> {
        self.get::<Claim>()
    }

    /// For a list: how many items it holds, and the cursor after the last (what `after` takes
    /// to continue: an event's `seq`, else the item's `id`).
    pub(crate) fn extent(&self) -> Option<(usize, Option<Value>)> {
        let items = self.json.as_array()?;
        let last = items
            .last()
            .and_then(|i| i.get("seq").or_else(|| i.get("id")));
        Some((items.len(), last.cloned()))
    }

    /// The exit code it calls for: `DAMAGED` while `check` leaves damage unrepaired.
    pub(crate) fn exit(&self) -> u8 {
        match self.get::<CheckReport>() {
            Some(report) if report.damage.iter().any(|d| d.repaired.is_none()) => {
                crate::error::code::DAMAGED
            }
            _ => crate::error::code::OK,
        }
    }
}

/// What the catalog's schema of a result says it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape<'a> {
    /// Done, with nothing to say (`null`).
    Done,
    /// A count (`reap`, `prune`).
    Count,
    /// A yes or no: the one is `memory_delete`'s, whether there was anything to forget.
    YesNo,
    /// A list of the named type (`string` for text).
    List(&'a str),
    /// A record of the named type.
    Record(&'a str),
    /// A record of the named type, or nothing.
    Maybe(&'a str),
}

/// The named type a schema node refers to (`#/$defs/Handoff`), or its JSON type.
fn name_of(node: &Value) -> &str {
    node.get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .or_else(|| node.get("type").and_then(Value::as_str))
        .unwrap_or("value")
}

fn shape(schema: &Value) -> Shape<'_> {
    if let Some(alternatives) = schema.get("anyOf").and_then(Value::as_array) {
        let named = alternatives.iter().find(|a| a["type"] != "null");
        return Shape::Maybe(named.map_or("value", name_of));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("null") => Shape::Done,
        Some("integer") => Shape::Count,
        Some("boolean") => Shape::YesNo,
        Some("array") => Shape::List(schema.get("items").map_or("value", name_of)),
        _ => Shape::Record(name_of(schema)),
    }
}

/// Reports, shown as the answer itself; every other record is named in the structured answer
/// (`{"handoff": {...}}`), so that the answer can carry more beside it (its Markdown).
const FLAT: &[&str] = &[
    "Claim",
    "Chain",
    "CheckReport",
    "Capabilities",
    "TaskStatistics",
    "ProtocolStats",
    "ImportReport",
    "VerifyReport",
    "MergeReport",
    "TaskComparison",
];

/// Lists named otherwise than their items' plural (a handoff's list is `handoffs`).
const LIST_KEYS: &[(&str, &str)] = &[
    ("PathStats", "paths"),
    ("QueueCount", "queue"),
    // The one list of text is `stalled`'s task ids.
    ("string", "task_ids"),
    ("TaskHeader", "tasks"),
    ("HistoryEntry", "history"),
    ("BranchInfo", "branches"),
    ("TrustedKey", "trusted_keys"),
];

/// A record's key: the last word of its type's name, in lower case (`TaskReplay`: `replay`).
fn record_key(name: &str) -> String {
    let start = name.rfind(char::is_uppercase).unwrap_or(0);
    name[start..].to_lowercase()
}

/// A list's key: its items' key in the plural, or its own name ([`LIST_KEYS`]).
fn list_key(name: &str) -> String {
    if let Some((_, key)) = LIST_KEYS.iter().find(|(item, _)| *item == name) {
        return (*key).to_owned();
    }
    let one = record_key(name);
    match one.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{one}s"),
    }
}

/// How the faces show one result of `op`.
pub(crate) struct Shown<'a> {
    pub op: &'a Op,
    pub outcome: &'a Outcome,
    pub out: &'a Output,
}

impl Shown<'_> {
    fn shape(&self) -> Shape<'_> {
        shape(&self.op.info.result)
    }

    fn reads(&self) -> bool {
        self.op.info.access == Access::Reads
    }

    /// A list's item as JSON, redacted. A task in a list is its header without what only the
    /// store needs.
    fn item(&self, name: &str, item: &Value) -> Value {
        let mut item = self.out.json(item.clone());
        if name == "TaskHeader"
            && let Value::Object(fields) = &mut item
        {
            for internal in ["roots", "waiting", "events"] {
                fields.remove(internal);
            }
        }
        item
    }

    /// The record as JSON: a claim with its secret (only its taker gets it) and its DNA, a task
    /// in the seed's `task-state.json` form, a chain with its path; the rest redacted as is.
    fn record(&self) -> Value {
        let outcome = self.outcome;
        if let Some(claim) = outcome.get::<Claim>() {
            self.out.claim_json(claim)
        } else if let Some(task) = outcome.get::<Task>() {
            self.out.json(task.to_value())
        } else if let Some(chain) = outcome.get::<Chain>() {
            chain_json(chain)
        } else {
            self.out.json(outcome.json.clone())
        }
    }

    /// What `--json` prints.
    pub(crate) fn json(&self) -> Value {
        let json = &self.outcome.json;
        match self.shape() {
            Shape::Done => json!({ "done": true }),
            Shape::YesNo => json!({ "deleted": json }),
            Shape::Count => json.clone(),
            Shape::List(name) => Value::Array(
                json.as_array()
                    .map(|items| items.iter().map(|i| self.item(name, i)).collect())
                    .unwrap_or_default(),
            ),
            Shape::Maybe(_) if json.is_null() => Value::Null,
            Shape::Record(_) | Shape::Maybe(_) => self.record(),
        }
    }

    /// The MCP `structuredContent` and the HTTP body: always an object.
    pub(crate) fn structured(&self) -> Value {
        let shape = self.shape();
        let mut answer = match shape {
            Shape::Count => json!({ "count": self.outcome.json }),
            Shape::List(name) => {
                let items = self.json();
                let count = items.as_array().map_or(0, Vec::len);
                json!({ "count": count, list_key(name): items })
            }
            Shape::Maybe("Claim") if self.outcome.json.is_null() => json!({ "claimed": false }),
            // The one optional handoff is the protocol's message: none when `decide` ended the
            // run.
            Shape::Maybe("Handoff") if self.outcome.json.is_null() => {
                json!({ "handoff": null, "run_completed": true })
            }
            Shape::Record(name) | Shape::Maybe(name) if !FLAT.contains(&name) => {
                json!({ record_key(name): self.json() })
            }
            _ => self.json(),
        };
        if self.outcome.claim().is_some() {
            answer["claimed"] = json!(true);
        }
        if let Some(h) = self.outcome.get::<Handoff>()
            && self.reads()
        {
            answer["markdown"] = json!(self.out.markdown(h));
        }
        if let Some(packet) = self.outcome.get::<handoff_core::context::Packet>() {
            answer["markdown"] = json!(self.out.text(&packet.to_markdown()));
        }
        answer
    }

    /// The readable text.
    pub(crate) fn text(&self) -> String {
        let (out, outcome) = (self.out, self.outcome);
        match self.shape() {
            Shape::Done => return "done\n".to_owned(),
            Shape::Count => return format!("{}\n", outcome.json),
            Shape::YesNo if outcome.json == true => return "deleted\n".to_owned(),
            Shape::YesNo => return "nothing to delete\n".to_owned(),
            Shape::List(_) => {
                let (header, rows, none) = self.rows();
                return match rows.is_empty() {
                    true => none,
                    false => table(&header, &rows),
                };
            }
            Shape::Maybe("Claim") if outcome.json.is_null() => {
                return "nothing to claim\n".to_owned();
            }
            Shape::Maybe(_) if outcome.json.is_null() => return "nothing\n".to_owned(),
            Shape::Record(_) | Shape::Maybe(_) => {}
        }
        if let Some(claim) = outcome.claim() {
            out.claim_text(claim)
        } else if let Some(h) = outcome.get::<Handoff>() {
            match self.reads() {
                true => out.markdown(h),
                false => out.record_line(h),
            }
        } else if let Some(task) = outcome.get::<Task>() {
            crate::output::task_text(out, task, self.reads())
        } else if let Some(chain) = outcome.get::<Chain>() {
            chain_text(chain)
        } else if let Some(packet) = outcome.get::<handoff_core::context::Packet>() {
            out.text(&packet.to_markdown()).into_owned()
        } else {
            record_text(&self.record())
        }
    }

    /// A list as a table: its header, its rows and what the text says when it is empty.
    pub(crate) fn rows(&self) -> (Vec<String>, Vec<Vec<String>>, String) {
        let out = self.out;
        let name = match self.shape() {
            Shape::List(name) => name,
            _ => "value",
        };
        let none = format!("no {}\n", list_key(name).replace('_', " "));
        let header = |names: &[&str]| names.iter().map(|h| (*h).to_owned()).collect();
        if let Some(handoffs) = self.outcome.get::<Vec<Handoff>>() {
            let rows = handoffs.iter().map(|h| out.handoff_row(h)).collect();
            return (header(crate::output::HANDOFF_HEADER), rows, none);
        }
        if let Some(events) = self.outcome.get::<Vec<Event>>() {
            let rows = events.iter().map(|e| out.event_row(e)).collect();
            return (header(crate::output::EVENT_HEADER), rows, none);
        }
        let items: Vec<Value> = match self.json() {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        let (header, rows) = grid(&items);
        (header, rows, none)
    }
}

/// Items as a table: a column per field but lists (which are for `--json`), or one column for
/// plain values.
fn grid(items: &[Value]) -> (Vec<String>, Vec<Vec<String>>) {
    let plain = |field: &String| {
        items
            .iter()
            .all(|item| !matches!(item.get(field), Some(Value::Array(_))))
    };
    let fields: Vec<String> = match items.first() {
        Some(Value::Object(first)) => first.keys().filter(|f| plain(f)).cloned().collect(),
        _ => {
            let rows = items.iter().map(|i| vec![cell(i)]).collect();
            return (vec!["VALUE".to_owned()], rows);
        }
    };
    let header = fields
        .iter()
        .map(|f| f.replace('_', " ").to_uppercase())
        .collect();
    let rows = items
        .iter()
        .map(|item| {
            fields
                .iter()
                .map(|f| item.get(f).map_or_else(|| "-".to_owned(), cell))
                .collect()
        })
        .collect();
    (header, rows)
}

/// A value in a cell, on one line: yes or no, `-` for nothing, a list joined, an object's
/// fields as `name=value`.
fn cell(value: &Value) -> String {
    let text = match value {
        Value::Null => "-".to_owned(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::String(text) => text.clone(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(", "),
        Value::Object(fields) => fields
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k}={}", cell(v)))
            .collect::<Vec<_>>()
            .join(" "),
    };
    clip(&text, 60)
}

/// A record as text: a line per field, then each list of records as a table. A record that is
/// only a list (`check`'s damage) is shown as that list.
fn record_text(record: &Value) -> String {
    let Value::Object(fields) = record else {
        return format!("{}\n", cell(record));
    };
    let (lists, lines): (Map<String, Value>, Map<String, Value>) =
        fields.clone().into_iter().partition(|(_, v)| {
            v.as_array()
                .is_some_and(|items| items.is_empty() || items.iter().all(Value::is_object))
        });
    let mut text = columns(
        &lines
            .iter()
            .map(|(k, v)| vec![k.clone(), cell(v)])
            .collect::<Vec<_>>(),
    );
    for (name, items) in &lists {
        let items = items.as_array().map(Vec::as_slice).unwrap_or_default();
        if !text.is_empty() {
            text.push('\n');
        }
        if items.is_empty() {
            text.push_str(&format!("no {}\n", name.replace('_', " ")));
            continue;
        }
        if fields.len() > 1 {
            text.push_str(&format!("{}:\n", name.replace('_', " ")));
        }
        let (header, rows) = grid(items);
        text.push_str(&table(&header, &rows));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_keys_come_from_the_schema() {
        let list = json!({"type": "array", "items": {"$ref": "#/$defs/StoredMessage"}});
        assert_eq!(shape(&list), Shape::List("StoredMessage"));
        assert_eq!(list_key("StoredMessage"), "messages");
        assert_eq!(list_key("Memory"), "memories");
        assert_eq!(list_key("TaskHeader"), "tasks");
        assert_eq!(record_key("TaskReplay"), "replay");
        let maybe = json!({"anyOf": [{"$ref": "#/$defs/Claim"}, {"type": "null"}]});
        assert_eq!(shape(&maybe), Shape::Maybe("Claim"));
        assert_eq!(shape(&json!({"type": "null"})), Shape::Done);
    }

    #[test]
    fn a_record_shows_its_fields_then_its_lists() {
        let text = record_text(&json!({"runs": 2, "ok": true, "per_run": [{"id": "a", "n": 1}]}));
        assert_eq!(text, "runs  2\nok    yes\n\nper run:\nID  N\na   1\n");
        assert_eq!(record_text(&json!({"damage": []})), "no damage\n");
    }
}

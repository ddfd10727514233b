//! How the results of the operations on tasks, memory and sessions are shown (see
//! [`crate::results`]). Their text and values may quote anything a caller wrote (goals, step
//! outputs, memory), so every one goes through [`Output::json`] or [`Output::text`], which
//! redact.

use handoff_core::store::{Memory, Session, Task};
use handoff_core::task::{HistoryEntry, TaskEvent, TaskHeader, TaskStatistics};
use serde_json::{Value, json};

use crate::output::{Output, clip, table, time, to_json};
use crate::results::{Row, Shown};

fn or_dash<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

pub(crate) fn word<T: serde::Serialize>(value: &T) -> String {
    to_json(value).as_str().unwrap_or_default().to_owned()
}

/// A task in the seed's `task-state.json` form, redacted.
fn task_json(task: &Task, out: &Output) -> Value {
    out.json(task.to_value())
}

impl Shown for Task {
    fn text(&self, out: &Output, reads: bool) -> String {
        let h = &self.header;
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
        text.push_str(&format!("goal: {}\n", out.text(&h.goal)));
        let rows: Vec<Vec<String>> = self
            .steps
            .iter()
            .map(|s| {
                vec![
                    s.spec.id.clone(),
                    s.spec.addressee().to_owned(),
                    word(&s.status),
                    s.attempts.to_string(),
                    s.spec.dependencies.join(","),
                    clip(
                        &out.text(s.output.as_deref().or(s.error.as_deref()).unwrap_or("")),
                        50,
                    ),
                ]
            })
            .collect();
        if !rows.is_empty() {
            text.push_str(&table(
                &[
                    "STEP",
                    "AGENT",
                    "STATUS",
                    "FAILED",
                    "AFTER",
                    "OUTPUT / ERROR",
                ],
                &rows,
            ));
        }
        text
    }

    fn json(&self, out: &Output) -> Value {
        task_json(self, out)
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "task": task_json(self, out) })
    }
}

/// A task without its plan, as lists show it.
impl Row for TaskHeader {
    const KEY: &'static str = "tasks";
    const HEADER: &'static [&'static str] =
        &["ID", "STATUS", "VERSION", "STEPS DONE", "UPDATED", "NAME"];
    const NONE: &'static str = "no tasks\n";

    fn row(&self, out: &Output) -> Vec<String> {
        vec![
            self.id.clone(),
            word(&self.status),
            self.version.to_string(),
            format!("{}/{}", self.steps_done, self.steps_total),
            time(self.updated_at),
            clip(&out.text(&self.name), 50),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        out.json(self.summary_value())
    }

    fn cursor(&self) -> Option<Value> {
        Some(json!(self.id))
    }
}

impl Row for TaskEvent {
    const KEY: &'static str = "events";
    const HEADER: &'static [&'static str] = &["SEQ", "AT", "EVENT", "ACTOR", "DETAIL"];
    const NONE: &'static str = "no events\n";

    fn row(&self, out: &Output) -> Vec<String> {
        let detail = self
            .change
            .detail()
            .map(|d| out.json(d).to_string())
            .unwrap_or_default();
        vec![
            self.seq.to_string(),
            time(self.at),
            self.change.kind().to_owned(),
            or_dash(self.actor.as_deref()),
            clip(&detail, 60),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }
}

impl Row for HistoryEntry {
    const KEY: &'static str = "history";
    const HEADER: &'static [&'static str] = &[
        "TASK", "RESULT", "FINISHED", "DURATION", "STEPS", "RETRIES", "TOKENS", "NAME",
    ];
    const NONE: &'static str = "no finished tasks\n";

    fn row(&self, out: &Output) -> Vec<String> {
        vec![
            self.id.clone(),
            word(&self.result),
            time(self.completed_at),
            self.duration_seconds
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.1}s")),
            format!(
                "{}/{}",
                self.metrics.steps_completed, self.metrics.steps_total
            ),
            self.metrics.retries.to_string(),
            or_dash(self.metrics.tokens_used),
            clip(&out.text(&self.name), 40),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }
}

impl Shown for TaskStatistics {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        let mut text = format!(
            "finished tasks     {}\nsuccess rate       {:.0}%\nmean duration      {}\n",
            self.total_tasks,
            self.success_rate * 100.0,
            self.avg_duration_seconds
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.1}s")),
        );
        for (result, count) in &self.by_result {
            text.push_str(&format!("{:<18} {count}\n", result));
        }
        text
    }

    fn json(&self, _out: &Output) -> Value {
        to_json(self)
    }

    fn structured(&self, _out: &Output, _reads: bool) -> Value {
        to_json(self)
    }
}

fn memory_json(memory: &Memory, out: &Output) -> Value {
    out.json(json!({
        "scope": memory.scope, "value": memory.value, "version": memory.version,
        "updated_at": memory.updated_at,
    }))
}

impl Shown for Memory {
    fn text(&self, out: &Output, _reads: bool) -> String {
        format!(
            "{}  v{}  {}\n{}\n",
            self.scope,
            self.version,
            time(self.updated_at),
            out.json(Value::Object(self.value.clone()))
        )
    }

    fn json(&self, out: &Output) -> Value {
        memory_json(self, out)
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "memory": memory_json(self, out) })
    }
}

impl Shown for Option<Memory> {
    fn text(&self, out: &Output, reads: bool) -> String {
        match self {
            Some(memory) => memory.text(out, reads),
            None => "nothing written there\n".to_owned(),
        }
    }

    fn json(&self, out: &Output) -> Value {
        self.as_ref().map_or(Value::Null, |m| memory_json(m, out))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "memory": self.json(out) })
    }
}

impl Row for Memory {
    const KEY: &'static str = "memories";
    const HEADER: &'static [&'static str] = &["SCOPE", "VERSION", "UPDATED", "VALUE"];
    const NONE: &'static str = "no memory\n";

    fn row(&self, out: &Output) -> Vec<String> {
        vec![
            self.scope.clone(),
            self.version.to_string(),
            time(self.updated_at),
            clip(&out.json(Value::Object(self.value.clone())).to_string(), 60),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        memory_json(self, out)
    }
}

/// The one yes-or-no an operation returns is `memory_delete`'s: whether there was anything
/// to forget.
impl Shown for bool {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        if *self {
            "deleted\n"
        } else {
            "nothing to delete\n"
        }
        .to_owned()
    }

    fn json(&self, _out: &Output) -> Value {
        json!({ "deleted": self })
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        self.json(out)
    }
}

impl Shown for Session {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        let mut text = format!(
            "session {}  owned by {}\n",
            self.session_id,
            self.current_agent.as_deref().unwrap_or("nobody yet")
        );
        for hop in &self.handoff_chain {
            text.push_str(&format!(
                "  {}  {} → {}  {}\n",
                hop.handoff_id,
                hop.from_agent.as_deref().unwrap_or("*"),
                hop.to_agent.as_deref().unwrap_or("*"),
                word(&hop.status),
            ));
        }
        text
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "session": self.json(out) })
    }
}

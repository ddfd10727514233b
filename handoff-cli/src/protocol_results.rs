//! How the results of the manager/worker protocol's operations are shown (see
//! [`crate::results`]): a message (a handoff, shown as every record is), a run, and the
//! statistics. A run quotes what agents wrote (instructions, reports), so it goes through
//! [`Output::json`] or [`Output::text`], which redact.

use handoff_core::Handoff;
use handoff_core::protocol::{Phase, ProtocolStats, Run};
use serde_json::{Value, json};

use crate::output::{Output, clip, table, time, to_json};
use crate::results::Shown;
use crate::task_results::word;

/// What a phase means for whoever looks: whose turn it is.
fn turn(phase: Phase) -> &'static str {
    match phase {
        Phase::Working => "working: the worker holds instructions (report or report-error)",
        Phase::Reviewing => "reviewing: the manager holds a report (decide or escalate)",
        Phase::Recovering => "recovering: the manager holds an error report (recover or escalate)",
        Phase::Escalated => "escalated: a human holds the escalation (resolve)",
        Phase::Resuming => "resuming: the manager holds a human's resolution (decide)",
        Phase::Completed => "completed",
    }
}

/// A protocol call that may send nothing: `decide` with COMPLETE ends the run.
impl Shown for Option<Handoff> {
    fn text(&self, out: &Output, reads: bool) -> String {
        match self {
            Some(message) => message.text(out, reads),
            None => "the run is completed: no message sent\n".to_owned(),
        }
    }

    fn json(&self, out: &Output) -> Value {
        self.as_ref()
            .map_or(Value::Null, |message| message.json(out))
    }

    fn structured(&self, out: &Output, reads: bool) -> Value {
        match self {
            Some(message) => message.structured(out, reads),
            None => json!({ "handoff": null, "run_completed": true }),
        }
    }
}

impl Shown for Run {
    fn text(&self, out: &Output, _reads: bool) -> String {
        let mut text = format!(
            "run of task {}  {}\niteration {}/{}  recoveries {}/{}  escalations {}\n\
             manager {} · worker {} · escalates to {}\n",
            self.task_id,
            turn(self.phase),
            self.iteration,
            self.max_iterations,
            self.retry_count,
            self.max_retries,
            self.escalations,
            out.text(&self.manager),
            out.text(&self.worker),
            out.text(&self.escalate_to),
        );
        if let Some(id) = &self.message_id {
            text.push_str(&format!("current message {id}\n"));
        }
        let rows = self
            .history
            .iter()
            .map(|item| {
                vec![
                    item.iteration.to_string(),
                    item.outcome.clone(),
                    clip(&out.text(&item.manager_instructions), 70),
                ]
            })
            .collect::<Vec<_>>();
        if !rows.is_empty() {
            text.push('\n');
            text.push_str(&table(&["ITERATION", "OUTCOME", "INSTRUCTIONS"], &rows));
        }
        text
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "run": self.json(out) })
    }
}

impl Shown for ProtocolStats {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        let mut text = format!(
            "runs                   {}\ncompleted              {}\n\
             first-try completions  {:.0}%\nescalated              {:.0}%\n\
             retries                {}\nmean iterations        {:.1}\n\
             median iteration       {}\n",
            self.runs,
            self.completed,
            self.first_try_completion_rate * 100.0,
            self.escalation_rate * 100.0,
            self.retries,
            self.mean_iterations,
            self.median_iteration_seconds
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.1}s")),
        );
        let rows = self
            .per_run
            .iter()
            .map(|run| {
                vec![
                    run.task_id.clone(),
                    word(&run.phase),
                    run.iterations.to_string(),
                    run.retries.to_string(),
                    run.escalations.to_string(),
                    time(run.started_at),
                ]
            })
            .collect::<Vec<_>>();
        if !rows.is_empty() {
            text.push('\n');
            text.push_str(&table(
                &[
                    "TASK",
                    "PHASE",
                    "ITERATIONS",
                    "RETRIES",
                    "ESCALATIONS",
                    "STARTED",
                ],
                &rows,
            ));
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

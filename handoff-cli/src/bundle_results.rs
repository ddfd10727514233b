//! How bundles, imports, replays and comparisons are shown (see [`crate::results`]). A replay
//! is a readable timeline, one line per entry; a bundle's text leaves out its portable form
//! (`--json` has it whole). Everything goes through [`Output`], which redacts.

use handoff_core::replay::{Overlap, TaskComparison, TaskOutcome, TaskReplay};
use handoff_core::store::{Bundle, ImportReport, TrustedKey};
use serde_json::{Value, json};

use crate::output::{Output, clip, table, time, to_json};
use crate::results::{Row, Shown};
use crate::task_results::word;

fn bundle_json(bundle: &Bundle, out: &Output) -> Value {
    out.json(to_json(bundle))
}

impl Shown for Bundle {
    fn text(&self, out: &Output, _reads: bool) -> String {
        let score = self
            .verification_score
            .map_or_else(String::new, |s| format!(" (score {s:.2})"));
        format!(
            "bundle {}  \"{}\"  {}  {}{score}\n{} facts, {} conversations, {} messages from {}\n\
             share token: {}\n",
            self.id,
            clip(&out.text(&self.name), 60),
            word(&self.visibility),
            word(&self.verification_status),
            self.fact_count,
            self.conversation_count,
            self.message_count,
            self.source_branch.as_deref().unwrap_or("-"),
            self.share_token.as_deref().unwrap_or("none (private)"),
        )
    }

    fn json(&self, out: &Output) -> Value {
        bundle_json(self, out)
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "bundle": bundle_json(self, out) })
    }
}

impl Row for Bundle {
    const KEY: &'static str = "bundles";
    const HEADER: &'static [&'static str] = &[
        "ID",
        "NAME",
        "VISIBILITY",
        "STATUS",
        "FACTS",
        "CONVERSATIONS",
        "CREATED",
    ];
    const NONE: &'static str = "no bundles\n";

    fn row(&self, out: &Output) -> Vec<String> {
        vec![
            self.id.clone(),
            clip(&out.text(&self.name), 40),
            word(&self.visibility),
            word(&self.verification_status),
            self.fact_count.to_string(),
            self.conversation_count.to_string(),
            time(self.created_at),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        bundle_json(self, out)
    }
}

impl Row for TrustedKey {
    const KEY: &'static str = "trusted_keys";
    const HEADER: &'static [&'static str] = &["PUBLIC KEY", "TRUSTED AT"];
    const NONE: &'static str = "no bundle keys trusted\n";

    fn row(&self, _out: &Output) -> Vec<String> {
        vec![self.public_key.clone(), time(self.trusted_at)]
    }

    fn item(&self, _out: &Output) -> Value {
        to_json(self)
    }
}

impl Shown for ImportReport {
    fn text(&self, out: &Output, _reads: bool) -> String {
        let target = self
            .target_branch
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string);
        let trust = match (&self.signed_by, self.trusted) {
            (Some(key), true) => format!("signed by {key}, trusted here: its verdicts taken"),
            (Some(key), false) => format!(
                "signed by {key}, not trusted here: its verdicts kept as its claim, unverified"
            ),
            (None, _) => "not signed: its verdicts kept as its claim, unverified".to_owned(),
        };
        format!(
            "imported \"{}\" into {target}: {} facts and {} conversations ({} messages) added, \
             {} facts and {} conversations already there\n{trust}\n",
            clip(&out.text(&self.bundle), 60),
            self.facts_added,
            self.conversations_added,
            self.messages_added,
            self.facts_skipped,
            self.conversations_skipped,
        )
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        self.json(out)
    }
}

fn outcome_line(outcome: &TaskOutcome) -> String {
    let duration = outcome
        .duration_seconds
        .map_or_else(|| "-".to_owned(), |s| format!("{s:.1}s"));
    format!("{}  over {duration}", outcome.status)
}

impl Shown for TaskReplay {
    fn text(&self, out: &Output, _reads: bool) -> String {
        let mut text = format!("task {}  {}\n", self.task_id, outcome_line(&self.outcome));
        if let Some(result) = &self.outcome.result {
            text.push_str(&format!("result: {}\n", clip(&out.text(result), 100)));
        }
        text.push('\n');
        let rows: Vec<Vec<String>> = self
            .timeline
            .iter()
            .map(|entry| {
                vec![
                    time(entry.at),
                    entry.kind.clone(),
                    entry.agent.clone().unwrap_or_else(|| "-".to_owned()),
                    clip(&out.text(&entry.summary), 80),
                ]
            })
            .collect();
        text.push_str(&table(&["AT", "TYPE", "AGENT", "WHAT"], &rows));
        let agents: Vec<Vec<String>> = self
            .agents
            .iter()
            .map(|a| {
                vec![
                    a.agent.clone(),
                    a.handed_off.to_string(),
                    a.claimed.to_string(),
                    a.completed.to_string(),
                    a.failed.to_string(),
                    a.curated.to_string(),
                ]
            })
            .collect();
        if !agents.is_empty() {
            text.push('\n');
            text.push_str(&table(
                &[
                    "AGENT",
                    "HANDED OFF",
                    "CLAIMED",
                    "COMPLETED",
                    "FAILED",
                    "CURATED",
                ],
                &agents,
            ));
        }
        if !self.key_facts.is_empty() {
            text.push_str("\nkey facts:\n");
            for fact in &self.key_facts {
                text.push_str(&format!("- {}\n", clip(&out.text(&fact.text), 100)));
            }
        }
        text
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "replay": self.json(out) })
    }
}

fn overlap_lines(text: &mut String, what: &str, overlap: &Overlap, out: &Output) {
    let list = |items: &[String]| {
        items
            .iter()
            .map(|i| clip(&out.text(i), 60))
            .collect::<Vec<_>>()
            .join("; ")
    };
    text.push_str(&format!(
        "{what}: both [{}]  only a [{}]  only b [{}]\n",
        list(&overlap.both),
        list(&overlap.only_a),
        list(&overlap.only_b)
    ));
}

impl Shown for TaskComparison {
    fn text(&self, out: &Output, _reads: bool) -> String {
        let mut text = format!(
            "a: task {}  {}  ({} entries)\nb: task {}  {}  ({} entries)\n",
            self.task_a,
            outcome_line(&self.outcome_a),
            self.timeline_length_a,
            self.task_b,
            outcome_line(&self.outcome_b),
            self.timeline_length_b,
        );
        overlap_lines(&mut text, "agents", &self.agents, out);
        overlap_lines(&mut text, "decision points", &self.decision_points, out);
        overlap_lines(&mut text, "facts", &self.facts, out);
        text
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        self.json(out)
    }
}

//! How the results of the curation operations are shown (see [`crate::results`]):
//! conversations and their messages, facts, branches, the verification and merge reports, the
//! successor's packet and the curation log. Messages and facts quote what agents wrote, so
//! they go through [`Output::json`] or [`Output::text`], which redact.

use handoff_core::context::Packet;
use handoff_core::curation::{
    BranchInfo, Conversation, CurationEvent, Fact, MergeReport, StoredMessage, VerifyReport,
};
use serde_json::{Value, json};

use crate::output::{Output, clip, table, time, to_json};
use crate::results::{Row, Shown};
use crate::task_results::word;

/// A score as a table shows it.
fn score(score: Option<f64>) -> String {
    score.map_or_else(|| "-".to_owned(), |s| format!("{s:.2}"))
}

impl Shown for Conversation {
    fn text(&self, out: &Output, _reads: bool) -> String {
        let mut text = format!(
            "conversation {}  on {}  {} messages  {}",
            self.id,
            self.branch,
            self.message_count,
            word(&self.verification_status),
        );
        if let Some(score) = self.verification_score {
            text.push_str(&format!(" ({score:.2})"));
        }
        if let Some(title) = &self.title {
            text.push_str(&format!("  \"{}\"", clip(&out.text(title), 60)));
        }
        text.push('\n');
        if let Some(from) = &self.cherry_picked_from {
            text.push_str(&format!("cherry-picked from {from}\n"));
        }
        text
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "conversation": self.json(out) })
    }
}

impl Row for Conversation {
    const KEY: &'static str = "conversations";
    const HEADER: &'static [&'static str] = &[
        "ID", "BRANCH", "MESSAGES", "STATUS", "SCORE", "CREATED", "TITLE",
    ];
    const NONE: &'static str = "no conversations\n";

    fn row(&self, out: &Output) -> Vec<String> {
        vec![
            self.id.clone(),
            self.branch.to_string(),
            self.message_count.to_string(),
            word(&self.verification_status),
            score(self.verification_score),
            time(self.created_at),
            clip(&out.text(self.title.as_deref().unwrap_or("")), 40),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }
}

impl Row for StoredMessage {
    const KEY: &'static str = "messages";
    const HEADER: &'static [&'static str] = &["SEQ", "ROLE", "PICKED", "CONTENT"];
    const NONE: &'static str = "no messages\n";

    fn row(&self, out: &Output) -> Vec<String> {
        let mut content = self.message.content.clone();
        for call in &self.message.tool_calls {
            content.push_str(&format!(" [calls {}]", call.name));
        }
        vec![
            self.seq.to_string(),
            self.message.role.clone(),
            self.cherry_picked_to.len().to_string(),
            clip(&out.text(&content), 70),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }
}

impl Row for Fact {
    const KEY: &'static str = "facts";
    const HEADER: &'static [&'static str] = &["ID", "BRANCH", "STATUS", "SCORE", "TEXT"];
    const NONE: &'static str = "no facts\n";

    fn row(&self, out: &Output) -> Vec<String> {
        vec![
            self.id.clone(),
            self.branch.to_string(),
            word(&self.status),
            score(self.score),
            clip(&out.text(&self.text), 70),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }
}

impl Row for BranchInfo {
    const KEY: &'static str = "branches";
    const HEADER: &'static [&'static str] = &["BRANCH", "PARENT"];
    const NONE: &'static str = "no branches\n";

    fn row(&self, _out: &Output) -> Vec<String> {
        let parent = self
            .parent
            .as_ref()
            .map_or("-".to_owned(), ToString::to_string);
        vec![self.name.to_string(), parent]
    }

    fn item(&self, _out: &Output) -> Value {
        to_json(self)
    }
}

impl Row for CurationEvent {
    const KEY: &'static str = "events";
    const HEADER: &'static [&'static str] = &["AT", "CHANGE", "BRANCH", "DETAIL"];
    const NONE: &'static str = "no curation events\n";

    fn row(&self, out: &Output) -> Vec<String> {
        vec![
            time(self.at),
            word(&self.kind),
            self.branch.to_string(),
            clip(&out.json(self.detail.clone()).to_string(), 70),
        ]
    }

    fn item(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }
}

impl Shown for VerifyReport {
    fn text(&self, out: &Output, _reads: bool) -> String {
        let branch = self
            .branch
            .as_ref()
            .map_or("-".to_owned(), ToString::to_string);
        let mut text = format!(
            "verified {branch}: {} verified, {} invalidated, {} unverified, {} failed\n",
            self.verified, self.invalidated, self.unverified, self.failed
        );
        let rows: Vec<Vec<String>> = self
            .items
            .iter()
            .map(|item| {
                vec![
                    item.kind.clone(),
                    item.id.clone(),
                    score(item.score),
                    item.verdict.as_ref().map_or("-".to_owned(), word),
                    clip(&out.text(item.error.as_deref().unwrap_or("")), 50),
                ]
            })
            .collect();
        if !rows.is_empty() {
            text.push('\n');
            text.push_str(&table(&["ITEM", "ID", "SCORE", "VERDICT", "ERROR"], &rows));
        }
        text
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        self.json(out)
    }
}

impl Shown for MergeReport {
    fn text(&self, _out: &Output, _reads: bool) -> String {
        let name = |b: &Option<handoff_core::curation::Branch>| {
            b.as_ref().map_or("-".to_owned(), ToString::to_string)
        };
        format!(
            "merged {} into {}: {} facts and {} conversations copied up, {} kept\n",
            name(&self.branch),
            name(&self.into),
            self.facts,
            self.conversations,
            self.kept
        )
    }

    fn json(&self, _out: &Output) -> Value {
        to_json(self)
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        self.json(out)
    }
}

/// The successor's packet: already redacted by the store unless it was opened to show
/// secrets, and redacted again on the way out like everything else.
impl Shown for Packet {
    fn text(&self, out: &Output, _reads: bool) -> String {
        out.text(&self.to_markdown()).into_owned()
    }

    fn json(&self, out: &Output) -> Value {
        out.json(to_json(self))
    }

    fn structured(&self, out: &Output, _reads: bool) -> Value {
        json!({ "packet": self.json(out), "markdown": self.text(out, true) })
    }
}

//! A task's replay and the comparison of two runs (docs/design.md §9), from the logs every aggregate
//! of the task keeps: its handoffs' events, its plan's log and its curation log.

use std::collections::HashMap;

use crate::curation::store::{oldest_first, task_facts_of};
use crate::curation::{Branch, Conversation, Verdict};
use crate::error::{Error, Result};
use crate::record::Handoff;
use crate::replay::{self, TaskComparison, TaskReplay, TimelineEntry};
use crate::store::Store;
use crate::store::{EventFilter, ListFilter};
use crate::validate;

impl Store {
    /// The whole run of a task as one timeline, oldest first: its handoffs' events (claims,
    /// completions, failures; the protocol's messages are handoffs too), its plan's log (steps
    /// offered, started, completed, failed, escalated) and its curation log (conversations,
    /// cherry-picks, facts, verifications, merges, bundles); each agent's contribution; its
    /// key facts (verified; with `verified_only` false, everything not invalidated) and key
    /// conversations; how it ended. `NotFound` when the task left nothing.
    pub fn replay(&self, task_id: &str, verified_only: bool) -> Result<TaskReplay> {
        Ok(self.run_of(task_id, verified_only)?.0)
    }

    /// A task's replay, with the records and conversations it was read from (which a
    /// comparison reads its decisions from).
    fn run_of(
        &self,
        task_id: &str,
        verified_only: bool,
    ) -> Result<(TaskReplay, Vec<Handoff>, Vec<Conversation>)> {
        validate::ident("task_id", task_id)?;
        let events = self.events_page(&EventFilter {
            task_id: Some(task_id.to_owned()),
            ..EventFilter::default()
        })?;
        let (task_events, status) = match self.get_task(task_id) {
            Ok(task) => (
                self.task_events(task_id)?,
                serde_json::to_value(task.header.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned)),
            ),
            Err(Error::NotFound { .. }) => (Vec::new(), None),
            Err(err) => return Err(err),
        };
        let curation = self.curation_events(Some(task_id))?;
        let mut timeline: Vec<TimelineEntry> =
            Vec::with_capacity(events.len() + task_events.len() + curation.len());
        // The records, once, for what their created events carry.
        let handoffs = self.list(&ListFilter {
            task_id: Some(task_id.to_owned()),
            ..ListFilter::default()
        })?;
        let by_id: HashMap<&str, &Handoff> = handoffs.iter().map(|h| (h.id.as_str(), h)).collect();
        timeline.extend(
            events
                .iter()
                .map(|e| replay::handoff_entry(e, by_id.get(e.handoff_id.as_str()).copied())),
        );
        timeline.extend(task_events.iter().map(replay::task_entry));
        timeline.extend(curation.iter().map(replay::curation_entry));
        if timeline.is_empty() {
            return Err(Error::NotFound {
                what: "task",
                id: task_id.to_owned(),
            });
        }
        // Stable: entries at the same instant keep their log's order.
        timeline.sort_by_key(|entry| entry.at);

        let branch = Branch::of_task(task_id)?;
        let mut key_facts =
            self.facts_under(&task_facts_of(&branch), |f| f.status.is_key(verified_only))?;
        oldest_first(&mut key_facts);
        let conversations = self.list_conversations(None, Some(task_id))?;
        let key_conversations = conversations
            .iter()
            .filter(|c| {
                c.verification_status == Verdict::Verified
                    || (c.verification_status != Verdict::Invalidated
                        && (c.cherry_picked_from.is_some() || !verified_only))
            })
            .cloned()
            .collect();
        let outcome = replay::outcome(&timeline, status);
        let replay = TaskReplay {
            task_id: task_id.to_owned(),
            agents: replay::contributions(&timeline),
            timeline,
            key_facts,
            key_conversations,
            outcome,
        };
        Ok((replay, handoffs, conversations))
    }

    /// Two runs side by side: their agents, decision points (the handoffs' recorded decisions
    /// and the messages of their decision-point picks), key facts, outcomes and durations.
    pub fn compare(&self, task_a: &str, task_b: &str) -> Result<TaskComparison> {
        let (a, handoffs_a, conversations_a) = self.run_of(task_a, false)?;
        let (b, handoffs_b, conversations_b) = self.run_of(task_b, false)?;
        Ok(TaskComparison::of(
            &a,
            &b,
            self.decisions(handoffs_a, &conversations_a)?,
            self.decisions(handoffs_b, &conversations_b)?,
        ))
    }

    /// The decisions a task recorded: its handoffs' `decisions`, and the messages of its
    /// decision-point picks.
    fn decisions(
        &self,
        handoffs: Vec<Handoff>,
        conversations: &[Conversation],
    ) -> Result<Vec<String>> {
        let mut decisions: Vec<String> =
            handoffs.into_iter().flat_map(|h| h.key_decisions).collect();
        for conversation in conversations {
            if conversation.cherry_picked_from.is_some()
                && conversation
                    .title
                    .as_deref()
                    .is_some_and(|t| t.starts_with(DECISIONS_TITLE))
            {
                decisions.extend(
                    self.messages(&conversation.id, None, None)?
                        .into_iter()
                        .map(|m| m.message.content),
                );
            }
        }
        Ok(decisions)
    }
}

/// How the title of a decision-point pick starts ([`Store::cherry_pick_decisions`]).
pub(crate) const DECISIONS_TITLE: &str = "Decision points of ";
